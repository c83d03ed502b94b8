"""parity's executables at each precision tier against the runtime's own anchor.

    python -m parity.bench.precision [--rounds N] [--threads N] [--workloads a,b] [--markdown PATH]
    python -m parity.bench.precision --sweep   # ORT Sigmoid's error over the domain, no timing

For each inference workload (quick size), in one process, interleaved round by round:

- xla: ``jax.jit`` of the hand-written JAX function on device arrays (the anchor), and the
  captured graph's XLA executable at ``exact`` and ``fast`` called with NumPy arrays;
- onnx: the ``torch.onnx.export`` model in raw ORT (the anchor), and parity's ONNX model of
  the same graph at ``exact`` and ``fast``, in raw ORT with the backend's session options,
  every input and output bound once.

The torch boundary (Dynamo's guards, conversions) is left out: it is the same at both tiers.
Not a test: tests never assert time.
"""

from __future__ import annotations

import argparse
import os
import time

import jax
import numpy as np
import onnxruntime as ort

from parity.backends.onnx.backend import DISABLED_OPTIMIZERS
from parity.backends.onnx.lowering import to_model
from parity.backends.xla.backend import XlaBackend
from parity.ir.precision import Precision

from .candidates import bound_ort_call, export_onnx
from .measure import TimingPlan, median, pin_threads, time_interleaved, write_report
from .workloads import WORKLOADS

DEFAULT = ("tiny", "mlp", "encoder", "chain", "sigmoid_chain", "softmax_ln", "convnet")


def captured_graph(case, backend: str):
    """The IR graph ``backend`` compiles for the case (its inference graph), captured afresh."""
    import torch

    import parity
    from parity.frontend import compiled_graph

    torch._dynamo.reset()
    before = set(map(id, compiled_graph._EXECUTABLES.values()))
    parity.compile(case.torch_fn, backend=backend)(*case.inputs)
    (executable,) = [e for e in compiled_graph._EXECUTABLES.values() if id(e) not in before]
    return executable.graph


def xla_calls(case, graph) -> dict:
    device = jax.devices("cpu")[0]
    on_device = [jax.device_put(t.detach().numpy(), device) for t in case.inputs]
    arrays = [np.ascontiguousarray(t.detach().numpy()) for t in case.inputs]
    jitted = jax.jit(case.jax_fn)
    calls = {"jax.jit": lambda: jax.block_until_ready(jitted(*on_device))}
    for tier in Precision:
        run = XlaBackend().compile(graph, "cpu", tier)
        calls[f"xla {tier.value}"] = (lambda r: lambda: jax.block_until_ready(r(*arrays)))(run)
    return calls


def onnx_calls(case, graph, threads: int) -> dict:
    arrays = {f"in{i}": np.ascontiguousarray(t.numpy()) for i, t in enumerate(case.inputs)}
    calls = {"torch.onnx": bound_ort_call(export_onnx(case)[0], arrays, threads)}
    for tier in Precision:
        model = to_model(graph, precision=tier).SerializeToString()
        calls[f"onnx {tier.value}"] = bound_ort_call(model, arrays, threads, DISABLED_OPTIMIZERS)
    return calls


def measure(workload: str, rounds: int, threads: int) -> tuple[dict[str, tuple[float, float]], dict[str, bool]]:
    """(median wall, median CPU) ms per call of each variant, and per backend whether its fast
    executable is the exact one (nothing at that tier applies to the workload)."""
    case = WORKLOADS[workload].build(quick=True)
    xla_graph, onnx_graph = captured_graph(case, "xla"), captured_graph(case, "onnx")
    backend = XlaBackend()
    same = {"xla": len({backend.compile(xla_graph, "cpu", p).hlo_text() for p in Precision}) == 1,
            "onnx": len({to_model(onnx_graph, precision=p).SerializeToString() for p in Precision}) == 1}
    calls = {**xla_calls(case, xla_graph), **onnx_calls(case, onnx_graph, threads)}
    cpu: dict[str, list[float]] = {}
    plan = TimingPlan(rounds=rounds, batch_s=0.05, min_rounds=rounds)  # every candidate runs all rounds
    wall = time_interleaved(calls, plan, cpu=cpu)
    return {name: (median(wall[name]) * 1e3, median(cpu[name]) * 1e3) for name in calls}, same


def sigmoid_sweep(points: int = 2_000_001) -> list[str]:
    """ORT's Sigmoid (the onnx fast tier's logistic) against the float64 oracle over dense sweeps
    of [-800, 800] and [-40, 40]: its largest absolute error in units of ε, where that is, and
    below which x it returns 0 (the data behind bounds.FAST_BOUNDS["logistic"])."""
    from parity.backends.onnx.backend import OnnxBackend
    from parity.ir import GraphBuilder, evaluate, f32, f64

    lines = ["| dtype | tier | max abs error / ε | at x | largest x giving 0 | max ULP |", "|---|---|---|---|---|---|"]
    for dtype in (f32, f64):
        xs = np.concatenate([np.linspace(-800, 800, points), np.linspace(-40, 40, points)]).astype(dtype.numpy)
        b = GraphBuilder("logistic")
        x = b.input(dtype[xs.size])
        graph = b.build([b.logistic(x)])
        oracle = evaluate(graph, [xs], oracle=True)[0].astype(np.float64)
        eps = float(dtype.finfo.eps)
        for tier in Precision:
            got = OnnxBackend().compile(graph, "cpu", tier)(xs)[0].astype(np.float64)
            err = np.abs(got - oracle)
            ulps = err / np.spacing(oracle.astype(dtype.numpy)).astype(np.float64)
            zero = xs[(got == 0) & (oracle > 0)]
            lines.append(f"| {dtype.short} | {tier.value} | {err.max() / eps:.2f} | {xs[np.argmax(err)]:.2f} | "
                         f"{f'{zero.max():.2f}' if zero.size else 'none'} | {ulps.max():.3g} |")
    return lines


def main(argv=None) -> str:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--workloads", default=",".join(DEFAULT))
    ap.add_argument("--markdown", default="")
    ap.add_argument("--sweep", action="store_true", help="only the Sigmoid error sweep (no timing)")
    args = ap.parse_args(argv)
    pin_threads(args.threads)
    if args.sweep:
        text = write_report(sigmoid_sweep(), args.markdown)
        print(text)
        return text
    lines = [f"jax {jax.__version__}, onnxruntime {ort.__version__}, {args.threads} thread(s), quick sizes, "
             f"{args.rounds} interleaved rounds (medians), load average {os.getloadavg()[0]:.1f} at the start, "
             f"{time.strftime('%Y-%m-%d %H:%M')}. Each cell: the ratio of median CPU times to the anchor's "
             "(wall in parentheses); '=' marks a fast executable identical to the exact one.", "",
             "| workload | jax.jit (ms CPU) | xla exact | xla fast | torch.onnx in ORT (ms CPU) | onnx exact | onnx fast |",
             "|---|---|---|---|---|---|---|"]
    for workload in args.workloads.split(","):
        t, same = measure(workload, args.rounds, args.threads)

        def ratio(name, anchor):
            return f"{t[name][1] / t[anchor][1]:.2f}× ({t[name][0] / t[anchor][0]:.2f}×)"

        lines.append(f"| {workload} | {t['jax.jit'][1]:.3f} | {ratio('xla exact', 'jax.jit')} | "
                     f"{'= ' if same['xla'] else ''}{ratio('xla fast', 'jax.jit')} | {t['torch.onnx'][1]:.3f} | "
                     f"{ratio('onnx exact', 'torch.onnx')} | {'= ' if same['onnx'] else ''}"
                     f"{ratio('onnx fast', 'torch.onnx')} |")
        print(lines[-1], flush=True)
    return write_report(lines, args.markdown)


if __name__ == "__main__":
    main()
