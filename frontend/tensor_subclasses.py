"""Plain ``torch.Tensor`` subclasses as arguments of a compiled function.

A subclass that only adds Python behaviour (``class Tagged(torch.Tensor): ...``, its
``__torch_function__`` torch's default) is traced by Dynamo through that behaviour, and
Dynamo wraps the graph's outputs back into the subclass; the graph itself computes on the
tensors' data. AOTAutograd hands such a tensor to the compiled graph as it is, and a backend
that reads tensors through NumPy cannot (``Tensor.__array__`` dispatches ``detach`` under
AOTAutograd's runtime mode, which refuses the subclass: "Multiple dispatch failed for
'aten.detach.default'"). So those arguments reach the graph as plain tensor views
(``as_subclass``: the same memory, still on the autograd graph), only for graphs that have one.

``nn.Parameter`` is no such subclass (it is a plain tensor to every kernel), and tensor-wrapper
subclasses (``__torch_dispatch__``: DTensor, FunctionalTensor) are AOTAutograd's to unwrap.

Example::

    >>> import torch, parity
    >>> class Tagged(torch.Tensor):
    ...     pass
    >>> f = parity.compile(lambda x: x * 2, backend="reference")
    >>> type(f(torch.ones(2).as_subclass(Tagged))).__name__
    'Tagged'
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

PLAIN_TYPES = (torch.Tensor, torch.nn.Parameter)


def plain_subclass_positions(gm: torch.fx.GraphModule) -> tuple[int, ...]:
    """The placeholders of Dynamo's graph ``gm`` whose call-time tensor is a plain subclass."""
    found = []
    for i, node in enumerate(gm.graph.find_nodes(op="placeholder")):
        example = getattr(node.meta.get("grapharg"), "example", None)  # the real tensor Dynamo traced
        if isinstance(example, torch.Tensor) and type(example) not in PLAIN_TYPES \
                and not is_traceable_wrapper_subclass(example):
            found.append(i)
    return tuple(found)


def as_plain_tensors(compiled: Callable, positions: tuple[int, ...]) -> Callable:
    """``compiled`` taking the arguments at ``positions`` as plain tensors; ``compiled`` itself
    when there are none (no cost on a call without subclasses)."""
    if not positions:
        return compiled
    wanted = frozenset(positions)

    def call(*args):
        return compiled(*[a.as_subclass(torch.Tensor) if i in wanted and isinstance(a, torch.Tensor) else a
                          for i, a in enumerate(args)])
    return call
