"""Measuring: thread pinning, the machine's own roofline, correctness, interleaved timing.

Threads: :func:`pin_threads` bounds the whole process to ``n`` CPUs with
``os.sched_setaffinity`` (XLA:CPU sizes its thread pool from the schedulable CPUs, so
the mask is what bounds it; it is applied before JAX starts its CPU client), then sets
``torch.set_num_threads(n)`` (eager and Inductor's OpenMP kernels) and one inter-op
thread. onnxruntime gets ``intra_op_num_threads=n, inter_op_num_threads=1`` per
session (see :mod:`parity.bench.candidates`).

Timing (:func:`time_interleaved`): every candidate is warmed up first, then timed in
rounds; in each round every candidate runs one batch of calls, in an order that
rotates from round to round, so slow drift in the machine's load hits all of them
alike. A candidate's time is the median over its rounds of (batch time / calls). The
same loop serves the suite and the studies (``studies/``); asked for, it also records
each batch's CPU time, which time spent descheduled by other processes does not inflate.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

RTOL = 1e-4  # the float32 contract for these workloads (see check_outputs)


def pin_threads(n: int | None) -> dict:
    """Pin every runtime to ``n`` threads (default: the CPUs this process may use)."""
    import torch

    allowed = sorted(os.sched_getaffinity(0))
    n = min(n or len(allowed), len(allowed))
    if n < len(allowed):
        os.sched_setaffinity(0, allowed[:n])
    torch.set_num_threads(n)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # only allowed before torch's first parallel work; already fixed then
        pass
    return {"threads": n, "cpus": allowed[:n], "torch_threads": torch.get_num_threads(),
            "torch_interop_threads": torch.get_num_interop_threads(), "ort_intra_op": n, "ort_inter_op": 1,
            "xla_cpu": f"default pool, bounded by the CPU affinity mask ({n} CPUs)"}


def machine_context(repeats: int = 5) -> dict:
    """Measured float32 matmul GFLOP/s (torch.mm 1024³) and copy GB/s (64 MiB, read + write)."""
    import torch

    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    src, dst = torch.randn(1 << 24), torch.empty(1 << 24)
    mm = _best(lambda: torch.mm(a, b), repeats)
    copy = _best(lambda: dst.copy_(src), repeats)
    return {"matmul_gflops": 2 * 1024**3 / mm / 1e9, "copy_gbs": 2 * 4 * (1 << 24) / copy / 1e9}


def _best(fn: Callable, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def roofline_s(flops: float | None, nbytes: float | None, machine: dict) -> float | None:
    """The least time the machine allows: compute-bound or memory-bound, whichever is larger."""
    if flops is None or nbytes is None:
        return None
    return max(flops / (machine["matmul_gflops"] * 1e9), nbytes / (machine["copy_gbs"] * 1e9))


def check_outputs(got: Sequence[np.ndarray], want: Sequence[np.ndarray], rtol: float = RTOL) -> str | None:
    """Why ``got`` is not ``want`` (None when it is), output by output.

    Each element must satisfy |got − want| ≤ rtol·|want| + rtol·max|want|: relative error
    ``rtol``, with an absolute floor scaled to the output so that an element that
    cancels to near zero (sums of thousands of products) is not judged by its own tiny
    magnitude. NaN must match NaN. Integer and bool outputs (generated tokens) must be equal.
    """
    if len(got) != len(want):
        return f"{len(got)} outputs, expected {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape:
            return f"output {i} has shape {list(g.shape)}, expected {list(w.shape)}"
        if g.dtype != w.dtype:
            return f"output {i} is {g.dtype}, expected {w.dtype}"
        if not np.issubdtype(w.dtype, np.inexact):  # integers (generated tokens), bools: exact
            if not np.array_equal(g, w):
                bad = g != w
                j = np.unravel_index(int(np.argmax(bad)), bad.shape)
                return (f"output {i}: {int(bad.sum())} of {bad.size} elements differ "
                        f"(first at {list(map(int, j))}: {g[j]} vs {w[j]})")
            continue
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        scale = float(np.max(np.abs(w64), initial=0.0, where=np.isfinite(w64)))
        bad = ~np.isclose(g64, w64, rtol=rtol, atol=rtol * scale, equal_nan=True)
        if bad.any():
            j = np.unravel_index(int(np.argmax(bad)), bad.shape)
            err = float(np.nanmax(np.abs(g64 - w64)))
            return (f"output {i}: {int(bad.sum())} of {bad.size} elements off (max abs error {err:.3g}, "
                    f"first at {list(map(int, j))}: {g64[j]:.7g} vs {w64[j]:.7g})")
    return None


@dataclass
class TimingPlan:
    """How long to time: ``rounds`` batches of about ``batch_s`` each, capped per candidate."""

    rounds: int = 11
    batch_s: float = 0.05
    budget_s: float = 4.0  # at most this long per candidate and workload (slow ones do fewer rounds)
    min_rounds: int = 3
    warmup: int = 2


def time_interleaved(calls: dict[str, Callable[[], object]], plan: TimingPlan,
                     cpu: dict[str, list[float]] | None = None) -> dict[str, list[float]]:
    """Per-call wall times (one per round) for each named call, interleaved round by round.

    With ``cpu`` (a dict), the per-call CPU time of the process (every thread of it) in the
    same batches is recorded there too, a list per name.
    """
    batch: dict[str, int] = {}
    rounds: dict[str, int] = {}
    for name, call in calls.items():
        for _ in range(plan.warmup):
            call()
        one = _best(call, 1)
        batch[name] = max(1, min(100_000, int(plan.batch_s / max(one, 1e-9))))
        rounds[name] = max(plan.min_rounds, min(plan.rounds, int(plan.budget_s / max(one * batch[name], 1e-9))))
    times: dict[str, list[float]] = {name: [] for name in calls}
    cpu_times = cpu if cpu is not None else {}
    cpu_times.update({name: [] for name in calls})
    names = list(calls)
    for r in range(max(rounds.values(), default=0)):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            if len(times[name]) >= rounds[name]:
                continue
            call, k = calls[name], batch[name]
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(k):
                call()
            times[name].append((time.perf_counter() - t0) / k)
            cpu_times[name].append((time.process_time() - c0) / k)
    return times


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def write_report(lines: Sequence[str], path: str = "") -> str:
    """The lines as one Markdown text, also written to ``path`` when one is given."""
    text = "\n".join(lines) + "\n"
    if path:
        with open(path, "w") as f:
            f.write(text)
    return text
