"""Inductor's compiled graph called without AOTAutograd's runtime wrapper, where that wrapper
has nothing to do.

``compile_fx`` runs a graph through AOTAutograd, which hands the functional graph to
``compile_fx_inner`` and wraps what comes back in its runtime wrapper (a disabled-Dynamo
context, the wrapper's own prologue and epilogue, Inductor's ``CompiledFxGraph.__call__``).
For parity's graphs that wrapper is mostly idle: the IR is functional, so nothing is written
back into an input and no output aliases one. Under parity's own Dynamo capture it is also
the second such wrapper on the call (the first is around the frontend's graph), and a decode
step pays both: about 6 µs a call on a 2-layer GPT-2 step in a tight loop, more in a real
generate() loop, where those frames run cold between kernels.

:func:`compile_direct` records what ``compile_fx_inner`` returned and the metadata AOTAutograd
traced it with, and calls Inductor's compiled callable itself when that metadata says the
wrapper would only switch grad mode off around the call (what it does for an inference graph,
and what the direct call does too). Otherwise, and on the first call (which sets up what
Inductor defers to it), the wrapped callable runs. :data:`WRAPPED_REASONS` counts why a graph
kept the wrapper.

Example::

    >>> import torch
    >>> gm = torch.fx.symbolic_trace(lambda x: (torch.relu(x) * 2,))
    >>> run = compile_direct(gm, [torch.randn(3)])
    >>> [run([torch.tensor([-1.0, 0.5, 2.0])])[0].tolist() for _ in range(2)]  # wrapped, then direct
    [[0.0, 1.0, 4.0], [0.0, 1.0, 4.0]]
    >>> run.direct
    True
"""

from __future__ import annotations

import collections
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

# Why graphs kept AOTAutograd's wrapper, by reason (tests and studies read it).
WRAPPED_REASONS: collections.Counter = collections.Counter()


class DirectCall:
    """A compiled graph as a function of its argument list (``run(list) -> outputs``)."""

    def __init__(self, wrapped: Callable, inner: Any | None, why_wrapped: str | None):
        self._wrapped = wrapped
        self._inner = inner
        self.direct = why_wrapped is None
        self.why_wrapped = why_wrapped
        self._calls = 0

    def __call__(self, args: list[torch.Tensor]):
        """The graph's outputs for ``args``, a list this call owns: the compiled code empties it."""
        if not self.direct or self._calls == 0:
            self._calls = 1
            return self._wrapped(*args)
        if torch.is_grad_enabled():  # out= kernels refuse inputs that require grad: as the wrapper does
            torch._C._set_grad_enabled(False)
            try:
                return self._inner.current_callable(args)
            finally:
                torch._C._set_grad_enabled(True)
        return self._inner.current_callable(args)

    def ready(self):
        """Inductor's compiled graph (call its ``current_callable(args)`` with grad mode off)
        where this call goes to it directly and its first call has run; else None. For a caller
        that makes the direct call itself, one frame fewer (InductorExecutable.guarded)."""
        return self._inner if self.direct and self._calls else None


class Kernel:
    """A compiled graph as backend.py calls it: ``kernel(tensors)`` runs ``run`` (a
    :class:`DirectCall`) on the inputs followed by the graph's constants, under a lock
    (Inductor's compiled callables are not documented thread-safe)."""

    def __init__(self, run: Callable, constants: Sequence[torch.Tensor]):
        self._run = run
        self._constants = list(constants)
        self._lock = threading.Lock()

    def __call__(self, tensors: list[torch.Tensor]):
        with self._lock:
            return self._run([*tensors, *self._constants])

    def direct_parts(self) -> tuple | None:
        """(Inductor's compiled graph, the constants appended to the inputs, the lock) for a
        caller that calls the graph itself, grad mode off (:meth:`DirectCall.ready`); None
        until its first call has run, or where the graph keeps AOTAutograd's wrapper."""
        ready = getattr(self._run, "ready", None)
        inner = ready() if ready is not None else None
        return None if inner is None else (inner, tuple(self._constants), self._lock)


def compile_direct(module: torch.fx.GraphModule, examples: list, compile_fx: Callable | None = None) -> DirectCall:
    """``compile_fx(module, examples)``, called directly where AOTAutograd's wrapper is idle.

    Where AOTAutograd's own cache answers, no inner compile runs and its metadata is not traced
    again: the verdict recorded beside that cache, under the inner graph's key, by the compile
    that filled it decides (:func:`_recall`); without one the wrapper stays."""
    from torch._guards import TracingContext
    from torch._inductor.compile_fx import compile_fx as default_compile_fx
    from torch._inductor.compile_fx import compile_fx_inner

    compiled: list = []

    def inner(gm, example_inputs, **kwargs):
        out = compile_fx_inner(gm, example_inputs, **kwargs)
        context = TracingContext.try_get()
        compiled.append((out, getattr(context, "fw_metadata", None), kwargs.get("is_inference"),
                         len(example_inputs)))
        return out

    wrapped = (compile_fx or default_compile_fx)(module, examples, inner_compile=inner)
    if compiled:
        why = why_wrapped(compiled, len(examples))
        graph = compiled[0][0]
        _remember(graph, why)
    else:  # AOTAutograd's cache answered
        graph = _cached_inner_graph(wrapped)
        why = _recall(graph)
    if why is not None:
        WRAPPED_REASONS[why] += 1
    return DirectCall(wrapped, graph if why is None else None, why)


def _verdict_path(graph: Any) -> Path | None:
    key = getattr(graph, "cache_key", None)
    root = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if not isinstance(key, str) or not key.isalnum() or not root:
        return None
    return Path(root) / "parity_direct_calls" / key


def _remember(graph: Any, why: str | None) -> None:
    """Record the verdict beside Inductor's cache (the directory that holds AOTAutograd's entry)."""
    path = _verdict_path(graph)
    if path is None:
        return
    try:
        os.makedirs(path.parent, mode=0o700, exist_ok=True)
        path.write_text(_DIRECT if why is None else why)
    except OSError:
        pass  # unwritable: a later process keeps the wrapper for this graph


def _recall(graph: Any) -> str | None:
    """The recorded verdict for ``graph`` (None: call it directly), or why the wrapper stays."""
    if getattr(graph, "current_callable", None) is None:
        return "AOTAutograd's cache answered (no compiled graph found)"
    path = _verdict_path(graph)
    try:
        text = path.read_text() if path is not None else None
    except OSError:
        text = None
    if text is None:
        return "AOTAutograd's cache answered (no verdict recorded)"
    return None if text == _DIRECT else text


_DIRECT = "direct"


def _cached_inner_graph(wrapped: Callable) -> Any | None:
    """Inductor's compiled graph inside the callable AOTAutograd's cache rebuilt (torch 2.13:
    ``forward`` → ``compiled_fn`` (SerializableCompiledFunction) → ``compiled_fn``
    (``runtime_wrapper``) → ``_inner_compiled_fn``); None where the layout differs."""
    def free(fn: Any, name: str) -> Any:
        code = getattr(fn, "__code__", None)
        if code is None or name not in code.co_freevars:
            return None
        return fn.__closure__[code.co_freevars.index(name)].cell_contents

    step = free(getattr(wrapped, "__wrapped__", wrapped), "compiled_fn") or free(free(wrapped, "fn"), "compiled_fn")
    step = getattr(step, "compiled_fn", None)
    return free(step, "_inner_compiled_fn") if step is not None else None


def why_wrapped(compiled: list, num_inputs: int) -> str | None:
    """Why AOTAutograd's wrapper must stay around the graph, or None where it has nothing to do."""
    if len(compiled) != 1:  # none: AOTAutograd's own cache answered; several: a forward and a backward
        return f"{len(compiled)} inner compiles"
    out, meta, is_inference, inputs = compiled[0]
    if not is_inference:
        return "not an inference graph"
    if meta is None:
        return "no AOTAutograd metadata"
    if getattr(out, "current_callable", None) is None:
        return "no compiled callable"
    if inputs != num_inputs:
        return "AOTAutograd changed the inputs"
    # An input written inside the graph (InductorExecutable.in_place's copy_, kept there for an
    # inference graph) needs nothing of the wrapper; one it would write back after the call does.
    if any(i.mutates_metadata or i.mutates_storage_metadata or (i.mutates_data and i.mutation_type.name != "MUTATED_IN_GRAPH")
           for i in meta.input_info):
        return "an input is mutated outside the graph"
    if any(o.output_type.name != "non_alias" or o.requires_grad for o in meta.output_info):
        return "an output aliases or needs grad"
    if meta.num_intermediate_bases or meta.tokens or getattr(meta, "is_rng_op_functionalized", False):
        return "intermediate bases, effect tokens or functionalized RNG"
    if any(type(m).__name__ != "PlainTensorMeta" for m in meta.subclass_inp_meta):
        return "a tensor subclass input"
    if torch._C._is_any_autocast_enabled():  # the wrapper would disable autocast around the call
        return "compiled under autocast"
    return None
