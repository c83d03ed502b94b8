"""A graph captured with symbolic sizes that the backend runs only at static ones: compiled again
for each concrete shape it is called with, as ``dynamic=False`` would, but without Dynamo
recapturing (so without its recompile limit, and without an eager fallback).

Automatic dynamic (parity.compile's default) recaptures a function with symbolic sizes once a
dim changes. Most translations take symbolic dims; a few do not (the backward of reflection and
replication padding, ops whose attributes must be static numbers). Before, such a function
recompiled static per shape; now the symbolic capture would fail where the static one worked.
:class:`PerShapeGraph` keeps the static behaviour for exactly those graphs: at each new shape it
specializes the captured ATen graph to the call's sizes (re-traced with ``make_fx`` over the FX
interpreter, so every node keeps the user's source line) and compiles that. One
:class:`PerShapeWarning` says which op asked for it.

Example::

    >>> import torch
    >>> from torch.fx.experimental.proxy_tensor import make_fx
    >>> gm = make_fx(lambda x: x.sum(0), tracing_mode="symbolic")(torch.ones(4, 3))
    >>> static = specialize(gm, [torch.ones(5, 3)])
    >>> [tuple(n.meta["val"].shape) for n in static.graph.nodes if n.op == "placeholder"]
    [(5, 3)]
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .graph_breaks import GraphBreakWarning
from .sizes import UntranslatedCase


class PerShapeWarning(GraphBreakWarning):
    """A graph with changing sizes compiles once per shape: an op of it has no symbolic form."""


def specialize(gm: torch.fx.GraphModule, args: list) -> torch.fx.GraphModule:
    """``gm`` traced again at the sizes of ``args`` (tensors and ints): a static ATen graph whose
    nodes keep ``gm``'s source locations."""
    from torch.fx import traceback as fx_traceback
    from torch.fx.experimental.proxy_tensor import make_fx

    def run(*values):
        return torch.fx.Interpreter(gm).run(*values)

    # no tracing context: make_fx would take Dynamo's fake mode from it (a forward graph compiles
    # inside Dynamo's trace), whose shape environment gives the sizes symbols again
    with fx_traceback.preserve_node_meta(), torch._guards.tracing(None):
        static = make_fx(run, tracing_mode="fake", record_stack_traces=True)(*args)
    return static


def signature(args: list) -> tuple:
    """What a specialized graph depends on: each tensor's dtype, shape and strides; each int."""
    return tuple((a.dtype, tuple(a.shape), a.stride()) if isinstance(a, torch.Tensor) else a for a in args)


def hinted_inputs(example_inputs) -> list:
    """Real inputs at the sizes Dynamo traced ``example_inputs`` (fake tensors, SymInts) with:
    what a first specialization is checked on when the graph is compiled. The sizes are the
    symbols' hints, read without a guard: ``guard_int`` would add ``s == hint`` to the
    captured graph's guards, so Dynamo captured it again for every new size (8 captures and
    its recompile limit on MPT's generate(), where torch.compile makes 2)."""

    def size(s):
        if not isinstance(s, torch.SymInt):
            return int(s)
        hint = s.node.hint
        if hint is None:  # an unbacked size (a data-dependent one): no example value to build
            raise UntranslatedCase(f"a data-dependent size ({s}) has no example value")
        return int(hint)

    values = []
    for value in example_inputs:
        if isinstance(value, torch.Tensor):
            values.append(torch.empty_strided([size(d) for d in value.shape], [size(d) for d in value.stride()],
                                              dtype=value.dtype))
        elif isinstance(value, torch.SymInt):
            values.append(size(value))
        else:
            values.append(value)
    return values


class PerShapeGraph:
    """Boxed callable: the graph specialized and compiled (``compile_static``) per call signature."""

    def __init__(self, gm: torch.fx.GraphModule, compile_static: Callable, first_args: list):
        self._boxed_call = True
        self.gm = gm
        self.compile_static = compile_static
        self.graphs: dict[tuple, Callable] = {}
        self.graphs[signature(first_args)] = compile_static(specialize(gm, first_args))

    def __call__(self, args: list) -> list:
        key = signature(args)
        graph = self.graphs.get(key)
        if graph is None:
            graph = self.graphs[key] = self.compile_static(specialize(self.gm, args))
        return graph(args)
