"""``backend="auto"`` for JAX programs, a first version: once per graph, at its first call,
compile every installed backend auto may time (frontend/auto_contract.py), check each
against ``jax.jit``'s outputs on those inputs within :data:`RTOL_BY_DTYPE`, time the ones
that pass (median of a few runs after a warm-up) and keep the fastest.

Not yet here, unlike the PyTorch frontend's auto (frontend/auto.py, which imports torch):
a time budget, the float64 second chance for ill-conditioned outputs, picks kept on disk,
and the conformance matrix as a filter.

Example::

    >>> import numpy as np
    >>> mismatch([np.float32([1.0, 2.0])], [np.float32([1.0, 2.00001])]) is None
    True
"""

from __future__ import annotations

import statistics
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ...backends.registry import backend_names
from ...ir.dtypes import DType
from ...ir.errors import ParityError
from ...ir.graph import Graph
from ...ir.precision import Precision
from ..auto_contract import NEVER_AUTO, RTOL_BY_DTYPE
from .run import compile_graph

TIMED_RUNS = 5


@dataclass
class AutoPick:
    """What auto chose for one graph: the backend, each candidate's median time, and why any dropped."""

    backend: str
    times_s: dict[str, float] = field(default_factory=dict)
    dropped: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        timed = ", ".join(f"{n} {t * 1e6:.1f} µs" for n, t in sorted(self.times_s.items(), key=lambda kv: kv[1]))
        dropped = "; ".join(f"{n}: {why}" for n, why in self.dropped.items())
        return f"{self.backend} (fastest of {timed or 'none'})" + (f"; dropped {dropped}" if dropped else "")


class AutoFoundNothing(ParityError):
    """No installed backend ran the graph within the contract."""


def candidates(device: str) -> list[str]:
    return [n for n in backend_names() if device not in NEVER_AUTO.get(n, ((), ""))[0]]


def choose(graph: Graph, device: str, precision: Precision, arrays: Sequence[np.ndarray],
           want: Sequence[np.ndarray], names: Sequence[str] | None = None,
           cache_dir: str | None = None) -> tuple[Callable, AutoPick]:
    """The fastest candidate whose outputs on ``arrays`` match ``want`` (jax.jit's); each compiled
    through the executable cache (``cache_dir``: on disk too)."""
    compiled: dict[str, Callable] = {}
    pick = AutoPick(backend="")
    for name in candidates(device) if names is None else names:
        try:
            run = compile_graph(name, graph, device, precision, cache_dir=cache_dir)
            why = mismatch([np.asarray(o) for o in run(*arrays)], want)
        except Exception as exc:  # noqa: BLE001 - a candidate that fails is dropped, with the reason
            why = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        if why is not None:
            pick.dropped[name] = why
            continue
        compiled[name] = run
        pick.times_s[name] = _median_time(run, arrays)
    if not compiled:
        raise AutoFoundNothing(f"backend='auto' found no backend that runs @{graph.name} within the contract: "
                               f"{pick.dropped}; name one with backend=...")
    pick.backend = min(pick.times_s, key=pick.times_s.get)
    if pick.dropped:
        warnings.warn(f"parity.jax.jit(backend='auto') on @{graph.name}: {pick}", stacklevel=4)
    return compiled[pick.backend], pick


def _median_time(run: Callable, arrays: Sequence[np.ndarray]) -> float:
    run(*arrays)  # warm-up
    times = []
    for _ in range(TIMED_RUNS):
        start = time.perf_counter()
        run(*arrays)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def mismatch(got: Sequence[np.ndarray], want: Sequence[np.ndarray]) -> str | None:
    """Why ``got`` is not ``want`` within the contract (None when it is): floats within their
    dtype's rtol (|got − want| ≤ rtol·|want| + rtol·max|want|, NaN where NaN), the rest exact."""
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if g.shape != w.shape or g.dtype != w.dtype:
            return f"output {i} is {g.dtype}{list(g.shape)}, jax.jit's is {w.dtype}{list(w.shape)}"
        dtype = DType.from_numpy(w.dtype)
        if dtype not in RTOL_BY_DTYPE:
            if not np.array_equal(g, w):
                return f"output {i} differs from jax.jit's (an exact dtype, {dtype.short})"
            continue
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        if not np.array_equal(np.isnan(g64), np.isnan(w64)):
            return f"output {i} has NaN where jax.jit's does not, or the reverse"
        infinite = np.isinf(w64)
        if not np.array_equal(g64[infinite], w64[infinite]):
            return f"output {i} differs from jax.jit's where jax.jit's is infinite"
        finite = np.isfinite(w64)
        rtol = RTOL_BY_DTYPE[dtype]
        scale = float(np.max(np.abs(w64[finite]), initial=0.0))
        error = np.abs(g64 - w64)[finite]
        bound = rtol * np.abs(w64[finite]) + rtol * scale
        if np.any(error > bound):
            return f"output {i} is off jax.jit's by {float(np.max(error)):.3g} (bound {rtol:g} of its scale {scale:.3g})"
    return None
