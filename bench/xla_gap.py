"""Where parity[xla]'s time goes against jax.jit, per workload (issue #15: "no gap at small sizes").

Each workload of :mod:`.workloads` is timed in one process, interleaved round by round in a
rotating order (:func:`time_both`: medians of wall and of CPU time), as these variants:

* ``jax.jit``: the hand-written JAX function on device arrays (the bench's anchor);
* ``parity call``: ``parity.compile(torch_fn, backend="xla")`` called with torch tensors,
  as the bench calls it (torch → NumPy views in, NumPy/DLPack → torch out);
* ``executable``: the captured graph's :class:`~parity.backends.xla.backend.XlaExecutable`
  called with NumPy arrays (no torch conversions; large outputs block until ready);
* ``graph plain``: ``jax.jit`` of parity's own ``graph_function`` (every semantic rule,
  products free to fuse into FMAs), on device arrays;
* ``graph protected``: the same with products kept out of fused sums (``products.opaque``);
* ``plain, checking max`` / ``protected, checking max``: the two above with every float
  ``reduce_max`` NaN-checking, also those :func:`~parity.backends.xla.composites.shift_only_maxes`
  proves may drop NaN (the lowering before that proof): what the NaN-checking combiner costs.

Each cell: the median wall time per call, its ratio to jax.jit's, and the same ratio of CPU
times. A second table counts each variant's optimized HLO: fusions, custom calls, dots and
convolutions, reduces, whether a loop fusion holds a float multiply and an add (``fma loops``),
and the entry computation's ops. Training workloads are not broken down. Run::

    .venv/bin/python -m parity.bench.xla_gap [--quick] [--threads 1] [--workloads encoder,mlp]
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable

import numpy as np

import time

from .measure import median, pin_threads
from .workloads import WORKLOADS

DEFAULT = ("tiny", "mlp", "encoder", "chain", "softmax_ln", "convnet")


def _block(outputs):
    import jax

    return jax.block_until_ready(outputs)


def _hlo_counts(text: str) -> dict[str, int]:
    from ..backends.xla.products import fuses_products

    entry = text[text.find("ENTRY "):]
    return {
        "fusions": len(re.findall(r" fusion\(", entry)),
        "custom": len(re.findall(r" custom-call\(", entry)),
        "dots": len(re.findall(r" (dot|convolution)\(", text)),
        "reduce": len(re.findall(r" reduce\(", text)),
        "fma loops": int(fuses_products(text)),
        "entry ops": sum(1 for line in entry.splitlines() if " = " in line),
    }


def _captured(case):
    """parity.compile of the torch function, called once: (call, XlaExecutable)."""
    import parity
    from ..frontend import compiled_graph

    before = set(map(id, compiled_graph._EXECUTABLES.values()))
    fn = parity.compile(case.torch_fn, backend="xla", device="cpu")
    fn(*case.inputs)
    new = [e for e in compiled_graph._EXECUTABLES.values() if id(e) not in before]
    if len(new) != 1:
        raise RuntimeError(f"expected one executable, got {len(new)}")
    return fn, new[0]


def _checking_max_function(graph, keep_products: bool):
    """graph_function as before composites.shift_only_maxes: every float max NaN-checking."""
    from ..backends.xla import composites
    from ..backends.xla.lowering import graph_function

    saved = composites._shift_only
    composites._shift_only = lambda node, users, outputs: False
    try:
        return graph_function(graph, run_time_zero=True, keep_products=keep_products)
    finally:
        composites._shift_only = saved


def variants(case) -> tuple[dict[str, Callable[[], object]], dict[str, dict[str, int]]]:
    import jax

    from ..backends.xla.backend import COMPILER_OPTIONS, RUN_TIME_ZERO
    from ..backends.xla.lowering import graph_function

    device = jax.devices("cpu")[0]
    on_device = [jax.device_put(t.detach().numpy(), device) for t in case.inputs]
    jitted = jax.jit(case.jax_fn)
    calls: dict[str, Callable[[], object]] = {"jax.jit": lambda: _block(jitted(*on_device))}
    hlo = {"jax.jit": _hlo_counts(jitted.lower(*on_device).compile().as_text())}

    fn, executable = _captured(case)
    calls["parity call"] = lambda: fn(*case.inputs)
    arrays = [t.detach().numpy() for t in case.inputs]
    calls["executable"] = lambda: _block(executable(*arrays))
    hlo["executable"] = _hlo_counts(executable.hlo_text())

    graph = executable.graph
    zero = jax.device_put(RUN_TIME_ZERO, device)
    options = COMPILER_OPTIONS["cpu"]
    x64 = any(np.dtype(a.dtype).itemsize == 8 for a in arrays)
    with jax.enable_x64(x64):
        for name, function in (("graph plain", graph_function(graph, run_time_zero=True, keep_products=False)),
                               ("graph protected", graph_function(graph, run_time_zero=True)),
                               ("plain, checking max", _checking_max_function(graph, False)),
                               ("protected, checking max", _checking_max_function(graph, True))):
            compiled = jax.jit(function).lower(*on_device, zero).compile(options)
            hlo[name] = _hlo_counts(compiled.as_text())
            calls[name] = (lambda c: lambda: _block(c(*on_device, zero)))(compiled)
    return calls, hlo


def time_both(calls: dict[str, Callable[[], object]], rounds: int, batch_s: float) -> dict[str, tuple[float, float]]:
    """(median wall, median CPU) seconds per call, interleaved round by round in a rotating
    order. CPU time (every thread of this process) is the steadier of the two on a loaded
    machine: it does not count the time other processes hold the cores."""
    batch = {}
    for name, call in calls.items():
        call(), call()
        t0 = time.perf_counter()
        call()
        batch[name] = max(1, int(batch_s / max(time.perf_counter() - t0, 1e-9)))
    wall: dict[str, list[float]] = {name: [] for name in calls}
    cpu: dict[str, list[float]] = {name: [] for name in calls}
    names = list(calls)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            call, k = calls[name], batch[name]
            w0, c0 = time.perf_counter(), time.process_time()
            for _ in range(k):
                call()
            wall[name].append((time.perf_counter() - w0) / k)
            cpu[name].append((time.process_time() - c0) / k)
    return {name: (median(wall[name]), median(cpu[name])) for name in calls}


def main(argv=None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--workloads", default=",".join(DEFAULT))
    parser.add_argument("--rounds", type=int, default=31)
    parser.add_argument("--batch", type=float, default=0.02, help="seconds per batch (short: fine interleaving)")
    args = parser.parse_args(argv)
    pin_threads(args.threads)
    rows, hlo_rows = [], []
    names = None
    for name in args.workloads.split(","):
        case = WORKLOADS[name].build(quick=args.quick)
        if case.training:
            raise SystemExit(f"{name}: training workloads are not broken down here")
        calls, hlo = variants(case)
        times = time_both(calls, args.rounds, args.batch)
        names = list(calls)
        wall, cpu = times["jax.jit"]
        rows.append(f"| {name} ({case.shape}) | " + " | ".join(
            f"{times[k][0] * 1e3:.3f} ms ×{times[k][0] / wall:.2f}, cpu ×{times[k][1] / cpu:.2f}" for k in names)
            + " |")
        for variant, counts in hlo.items():
            hlo_rows.append(f"| {name} | {variant} | " + " | ".join(str(v) for v in counts.values()) + " |")
        print(rows[-1], flush=True)
    head = "| workload | " + " | ".join(names or ()) + " |\n|---|" + "---|" * len(names or ()) + "\n"
    counts_head = ("| workload | variant | " + " | ".join(_hlo_counts("ENTRY ").keys()) + " |\n|---|---|"
                   + "---|" * len(_hlo_counts("ENTRY ")) + "\n")
    out = (f"threads={args.threads} quick={args.quick}, {args.rounds} interleaved rounds: median wall ms, its ratio"
           f" to jax.jit's, and the ratio of median CPU times (load average {os.getloadavg()[0]:.1f})\n\n"
           + head + "\n".join(rows) + "\n\n" + counts_head + "\n".join(hlo_rows) + "\n")
    print(out)
    return out


if __name__ == "__main__":
    main()
