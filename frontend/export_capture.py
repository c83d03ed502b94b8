"""How :func:`parity.export` hands a model to the capture: keyword inputs, and quiet logs.

Hugging Face models are called with keyword tensors (``model(input_ids=..., attention_mask=...)``).
torch.export fails on dynamic dims of such keyword arguments of ``forward(*args, **kwargs)``,
so export captures a wrapper that takes them positionally (:func:`keywords_as_positional`)
and drops the wrapper's name from the state's names afterwards (:func:`without_wrapper_prefix`).
While it captures, torch's guard logs (tens of ``E... torch/_guards.py`` lines printed
when a dynamic dim is first tried without its bounds, then retried) are silenced
(:func:`quiet_torch_logs`): the capture reports what matters in its own error.

Example::

    >>> import torch
    >>> fn, args, names, rest = keywords_as_positional(lambda x, scale=1: x * scale, (),
    ...                                                [], {"x": torch.ones(2), "scale": 3})
    >>> names, rest, fn(*args, torch.ones(2)).tolist()
    (['x'], {}, [3.0, 3.0])
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

WRAPPER = "model"  # the wrapper's attribute holding the user's module (its state's names gain "model.")

# torch loggers whose records during an export's capture are retries parity handles, not the user's business
QUIET_LOGGERS = ("torch._guards", "torch.fx.experimental.symbolic_shapes", "torch._dynamo")


def keywords_as_positional(fn, args: Sequence[Any], names: list[str], kwargs: Mapping[str, Any]):
    """``(wrapper, args, names, {})`` where ``wrapper(*args, *tensors)`` calls ``fn(*args, **kwargs)``:
    the keyword tensors are appended to the positional arguments (named by their keys), the
    other keyword values are bound in the wrapper."""
    import torch

    tensors = {k: v for k, v in kwargs.items() if isinstance(v, torch.Tensor)}
    fixed = {k: v for k, v in kwargs.items() if k not in tensors}
    keys, count = list(tensors), len(args)

    class KeywordsAsPositional(torch.nn.Module):
        def __init__(self):
            super().__init__()
            if isinstance(fn, torch.nn.Module):
                setattr(self, WRAPPER, fn)
            else:
                object.__setattr__(self, WRAPPER, fn)  # a function: no state, no prefix

        def forward(self, *values):
            target = getattr(self, WRAPPER)
            return target(*values[:count], **dict(zip(keys, values[count:])), **fixed)

    wrapper = KeywordsAsPositional() if isinstance(fn, torch.nn.Module) else _function(fn, count, keys, fixed)
    return wrapper, (*args, *tensors.values()), [*names, *keys], {}


def _function(fn, count: int, keys: list[str], fixed: Mapping[str, Any]):
    def keywords_as_positional(*values):
        return fn(*values[:count], **dict(zip(keys, values[count:])), **fixed)

    return keywords_as_positional


def without_wrapper_prefix(program):
    """``program`` with the wrapper's ``model.`` taken off its state's names (a no-op without the wrapper)."""
    prefix = WRAPPER + "."
    if not any(name.startswith(prefix) for name in program.state):
        return program

    def strip(label: str) -> str:
        kind, _, name = label.partition(" ")
        return f"{kind} {name.removeprefix(prefix)}" if kind in ("param", "buffer", "constant") else label

    return dataclasses.replace(program, input_names=[strip(n) for n in program.input_names],
                               output_names=[strip(n) for n in program.output_names],
                               state={k.removeprefix(prefix): v for k, v in program.state.items()})


class _WithoutPartialGraphs:
    """A stderr that drops the partial FX graph torch.export prints (with ``print``, not a
    logger) before it re-raises a capture error; everything else passes through."""

    PARTIAL_GRAPH = "class GraphModule(torch.nn.Module):"

    def __init__(self, stream):
        self.stream = stream
        self.dropped = False

    def write(self, text: str) -> int:
        if text.lstrip().startswith(self.PARTIAL_GRAPH) or (self.dropped and text == "\n"):
            self.dropped = not self.dropped  # the graph, then print's end="\n"
            return len(text)
        self.dropped = False
        return self.stream.write(text)

    def __getattr__(self, name):
        return getattr(self.stream, name)


@contextlib.contextmanager
def quiet_torch_logs():
    """Silence torch's guard logs, its partial-graph prints and Dynamo's side-effect warnings
    for the capture inside."""
    import sys

    loggers = [logging.getLogger(name) for name in QUIET_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stderr(_WithoutPartialGraphs(sys.stderr)):
            warnings.filterwarnings("ignore", message="While compiling, we found certain side effects")
            # torch.export's own pytree calls, not the user's: torch 2.13 deprecates LeafSpec
            warnings.filterwarnings("ignore", message=r"`isinstance\(treespec, LeafSpec\)` is deprecated",
                                    category=FutureWarning)
            yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


__all__ = ["keywords_as_positional", "quiet_torch_logs", "without_wrapper_prefix"]
