"""Where each µs of a tiny call goes (issue 24, item 4): ``x + 1`` on f32[4], p50 and p99.

``python -m studies.dispatch [--samples 400] [--backends onnx,xla]`` times, in one
process on one thread (``parity.bench.measure.pin_threads(1)``), interleaved rounds of
short batches (about 0.2 ms each); one sample is one batch's wall time per call. It
prints a Markdown table of p50 and p99 per candidate:

- anchors: torch eager; ``jax.jit`` on a device array, and ``jax.jit`` across the torch
  boundary (a torch tensor in: ``.numpy()``, the jitted call, ``np.asarray`` and
  ``torch.from_numpy`` of the result), the boundary parity's xla backend also crosses;
  raw onnxruntime with every input and output bound once (IOBinding);
- ``parity[NAME]``: ``parity.compile(fn, backend=NAME)`` with no flag, as a user calls it
  (the signature fast path on: frontend/fast_path.py), and ``parity (default)``:
  ``parity.compile(fn)``, which is ``backend="auto"``;
- layers under it: ``NAME fast-path entry`` (what a hit calls: CompiledGraph.positional's
  call and the tensor it returns), ``NAME executable`` (the backend's executable alone,
  with its per-input checks, on the same tensor: CompiledGraph hands CPU tensors as they
  are to executables that take them, and NumPy arrays to the others) and ``NAME executable,
  unchecked`` (its ``unchecked()`` call, which a hit runs: the guards checked the types).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np


def tiny(x):
    return x + 1


def _entry_and_executable(compiled) -> tuple[Callable, object]:
    """The fast path's one entry, and the backend executable under it (found through the
    closures of the entry and of CompiledGraph.positional's call)."""
    (entry,) = compiled.fast_path.entries.values()
    todo, seen = [entry], set()
    while todo:
        fn = todo.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        for cell in getattr(fn, "__closure__", None) or ():
            value = cell.cell_contents
            if hasattr(value, "graph") and hasattr(value, "unchecked"):
                return entry, value
            if callable(value):
                todo.append(value)
    from parity.frontend.compiled_graph import _EXECUTABLES  # an unchecked call keeps no executable

    found = [e for (_, backend, _, _), e in _EXECUTABLES.items() if backend == compiled.options.backend]
    return entry, found[-1] if found else None


def candidates(backends: list[str]) -> dict[str, Callable[[], object]]:
    import jax
    import torch

    import parity
    from parity.bench.candidates import bound_ort_call, export_onnx
    from parity.bench.workloads import WORKLOADS, tiny_jax

    x = torch.arange(4, dtype=torch.float32)
    jitted = jax.jit(tiny_jax)
    device_x = jax.device_put(x.numpy())
    calls: dict[str, Callable[[], object]] = {
        "torch eager": lambda: tiny(x),
        "jax.jit (device array)": lambda: jitted(device_x),
        "jax.jit across the torch boundary": lambda: torch.from_numpy(np.asarray(jitted(x.numpy()))),
    }
    model, _ = export_onnx(WORKLOADS["tiny"].build(quick=True))
    calls["onnxruntime IOBinding"] = bound_ort_call(model, {"in0": x.numpy().copy()}, 1)
    for name in backends:
        compiled = parity.compile(tiny, backend=name)
        for _ in range(3):
            compiled(x)  # compile, then make the fast-path entry
        calls[f"parity[{name}]"] = (lambda c: lambda: c(x))(compiled)
        entry, executable = _entry_and_executable(compiled)
        calls[f"{name} fast-path entry"] = (lambda e: lambda: e((x,)))(entry)
        if executable is not None:
            arg = x if getattr(executable, "takes_torch_tensors", False) else x.numpy()
            calls[f"{name} executable"] = (lambda e, a: lambda: e(a))(executable, arg)
            run = executable.unchecked()
            if run is not None:
                calls[f"{name} executable, unchecked"] = (lambda r, a: lambda: r(a))(run, arg)
    default = parity.compile(tiny)
    for _ in range(3):
        default(x)
    calls["parity (default: auto)"] = lambda: default(x)
    want = tiny(x)
    for name, call in calls.items():
        got = call()
        got = got[0] if isinstance(got, list) else got
        if not np.array_equal(np.asarray(got), want.numpy()):
            raise AssertionError(f"{name} returned {got}, expected {want}")
    return calls


def sample(calls: dict[str, Callable[[], object]], samples: int, batch_s: float = 2e-4) -> dict[str, list[float]]:
    """``samples`` per-call times per candidate, in interleaved rounds of short batches."""
    sizes = {}
    for name, call in calls.items():
        for _ in range(50):
            call()
        t0 = time.perf_counter()
        for _ in range(50):
            call()
        sizes[name] = max(1, int(batch_s / ((time.perf_counter() - t0) / 50)))
    out: dict[str, list[float]] = {name: [] for name in calls}
    names = list(calls)
    for r in range(samples):
        for name in names[r % len(names):] + names[:r % len(names)]:
            call, k = calls[name], sizes[name]
            t0 = time.perf_counter()
            for _ in range(k):
                call()
            out[name].append((time.perf_counter() - t0) / k)
    return out


def main(argv=None) -> None:
    import os

    from parity.bench.measure import pin_threads

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=400)
    ap.add_argument("--backends", default="onnx,xla")
    args = ap.parse_args(argv)
    pin_threads(1)
    calls = candidates([b for b in args.backends.split(",") if b])
    before = os.getloadavg()[0]
    times = sample(calls, args.samples)
    after = os.getloadavg()[0]
    print(f"1 thread, {args.samples} samples of ~0.2 ms batches each, load average {before:.1f} → {after:.1f}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
    print("| candidate | p50 µs | p99 µs |\n| --- | --- | --- |")
    for name, values in times.items():
        q = statistics.quantiles(values, n=100)
        print(f"| {name} | {statistics.median(values) * 1e6:.2f} | {q[98] * 1e6:.2f} |")


if __name__ == "__main__":
    main()
