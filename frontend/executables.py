"""An IR graph compiled for one backend, the one path both frontends take (torch's
compiled_graph.py, JAX's jax/run.py): the composites the backend does not claim expanded
(:func:`prepare`), then ``backend.compile`` at the tier asked for, with the user's
``backend_options`` (a :class:`~parity.backends.runtime.RuntimeRequest`), cached by content
hash in this process and, with a ``cache_dir``, on disk across processes
(:func:`compiled_executable`). Imports no torch and no JAX: a frontend adapts the executable
to its own tensors (``adapt``).

Example::

    >>> from parity.backends.registry import get_backend
    >>> from parity.ir import GraphBuilder, f32
    >>> import numpy as np
    >>> b = GraphBuilder(); x = b.input(f32[2])
    >>> reference = get_backend("reference")
    >>> run = compiled_executable(prepare(b.build([b.neg(x)]), reference), reference, "cpu")
    >>> run(np.ones(2, np.float32))[0].tolist()
    [-1.0, -1.0]
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable
from typing import Any

from ..backends.base import declined_by_predicate, precision_for
from ..backends.disk_cache import compile_cached
from ..backends.program_compiles import for_a_program
from ..backends.runtime import RuntimeRequest
from ..ir.graph import Graph
from ..ir.passes import dce, decompose
from ..ir.precision import Precision

#: Counters of the work done: "translations" (FX graphs translated to IR),
#: "backend_compiles" (calls of backend.compile), "cache_hits" (executables reused) and
#: "disk_loads" (executables read from the disk cache instead of compiled).
STATS: collections.Counter = collections.Counter()

_EXECUTABLES: dict[tuple, Any] = {}
_LOCK = threading.Lock()


def reset_caches() -> None:
    """Forget compiled executables and zero :data:`STATS` (tests, notebooks)."""
    with _LOCK:
        _EXECUTABLES.clear()
        STATS.clear()


def prepare(graph: Graph, backend) -> Graph:
    """Expand the composites ``backend`` does not claim (or whose claim's predicate declines the
    node), then drop dead nodes."""
    claims = backend.claims()
    graph, _ = decompose(graph, claimed=lambda op: op in claims,
                         declined=lambda node: declined_by_predicate(claims, node) is not None)
    graph, _ = dce(graph)
    return graph


def compiled_executable(graph: Graph, backend, device: str, cache_dir: str | None = None, *,
                        precision: Precision = Precision.EXACT, request: RuntimeRequest | None = None,
                        adapt: Callable | None = None):
    """backend.compile(graph, device) at the tier the backend runs ``precision`` at
    (backends.base.precision_for), with ``request``'s options and parameters where the backend
    declares them (docs/plugins.md), cached by (content hash, backend, device, tier, request,
    ``adapt``) in this process and, with a ``cache_dir``, on disk across processes.

    ``adapt(executable, backend, graph, request)``, when given, is what the caller's frontend
    calls instead of the backend's executable (torch tensors in: plugin_runtime.adapt); it is
    cached with the executable (one binding of parameters per executable) and is part of the
    key, so each frontend gets executables adapted to its own tensors."""
    if not graph.outputs:
        # Nothing to compute (a region whose every effect is an input's mutation, which the
        # frontend applies): no backend is asked; onnxruntime refuses a graph without values.
        return _computes_nothing
    precision = precision_for(backend, precision)
    request = request.for_backend(backend) if request is not None else None
    key = (graph.content_hash(), backend.name, device, precision.value, request.key() if request else "", adapt)
    with _LOCK:
        cached = _EXECUTABLES.get(key)
        if cached is not None:
            STATS["cache_hits"] += 1
            return cached
    with for_a_program():  # a user's program: a backend may keep its code for the next process
        executable, loaded = compile_cached(graph, backend, device, cache_dir, precision, request)
    STATS["disk_loads" if loaded else "backend_compiles"] += 1
    if adapt is not None:
        executable = adapt(executable, backend, graph, request)
    with _LOCK:
        _EXECUTABLES[key] = executable
    return executable


def _computes_nothing(*arrays) -> list:
    return []
