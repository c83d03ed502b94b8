"""max_pool's NaN check on the onnx backend: the convnet workload in raw ORT, three ways.

    .venv/bin/python -m bench.onnx_maxpool [--rounds N] [--threads N] [--markdown PATH]

ORT's MaxPool skips NaN where the IR's max propagates it, so parity pools a NaN indicator
next to the values. The rule now decides with one read pass (``IsNaN(ReduceSum(x))``) and
an ``If``: a NaN-free input pools plainly, which keeps ORT's NCHWc MaxPool after a Conv.
This times, at quick and full size, in raw ORT with inputs and outputs bound once:

- ``torch.onnx``: the workload exported by ``torch.onnx.export`` (MaxPool alone, the anchor);
- ``parity``: parity's model of the same graph, as the backend builds it;
- ``parity, indicator always``: that model with each ``If`` replaced by its exact branch
  (the rule before this change).

Rounds are interleaved, medians after warm-up. Not a test: tests never assert time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import onnx
import onnxruntime as ort

from parity.backends.onnx.backend import DISABLED_OPTIMIZERS
from parity.backends.onnx.lowering import to_model

from .candidates import bound_ort_call, export_onnx
from .workloads import WORKLOADS


def parity_model(case) -> onnx.ModelProto:
    """parity's ONNX model of the case's inference graph (inputs in0.., as the backend builds it)."""
    import parity
    from parity.frontend import compiler

    before = set(map(id, compiler._EXECUTABLES.values()))
    parity.compile(case.torch_fn, backend="onnx")(*case.inputs)
    (executable,) = [e for e in compiler._EXECUTABLES.values() if id(e) not in before]
    return to_model(executable.graph)


def indicator_always(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with each ``If`` replaced by the nodes of its then-branch (renamed to its output)."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    nodes = []
    for node in out.graph.node:
        if node.op_type != "If":
            nodes.append(node)
            continue
        then = next(a.g for a in node.attribute if a.name == "then_branch")
        rename = {then.output[0].name: node.output[0]}
        for inner in then.node:
            inner.output[:] = [rename.get(o, o) for o in inner.output]
            nodes.append(inner)
    del out.graph.node[:]
    out.graph.node.extend(nodes)
    return out


def measure(quick: bool, rounds: int, threads: int) -> dict[str, float]:
    case = WORKLOADS["convnet"].build(quick=quick)
    arrays = {f"in{i}": np.ascontiguousarray(t.numpy()) for i, t in enumerate(case.inputs)}
    ours = parity_model(case)
    # the anchor as `parity bench` runs it; parity's models with the backend's disabled rewrites
    calls = {"torch.onnx": bound_ort_call(export_onnx(case)[0], arrays, threads),
             "parity": bound_ort_call(ours.SerializeToString(), arrays, threads, DISABLED_OPTIMIZERS),
             "parity, indicator always": bound_ort_call(indicator_always(ours).SerializeToString(), arrays, threads,
                                                        DISABLED_OPTIMIZERS)}
    want = calls["torch.onnx"]()[0].copy()
    for name, call in calls.items():
        np.testing.assert_allclose(call()[0], want, rtol=1e-5, atol=1e-6, err_msg=name)
    per_call = 20 if quick else 3
    times: dict[str, list[float]] = {name: [] for name in calls}
    names = list(calls)
    for r in range(rounds + 2):
        for name in names[r % len(names):] + names[:r % len(names)]:
            call = calls[name]
            start = time.perf_counter()
            for _ in range(per_call):
                call()
            if r >= 2:  # two warm-up rounds
                times[name].append((time.perf_counter() - start) / per_call * 1e3)
    return {name: statistics.median(t) for name, t in times.items()}


def main(argv=None) -> str:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--markdown", default="")
    args = ap.parse_args(argv)
    lines = [f"onnxruntime {ort.__version__}, {args.threads} thread(s), load average {os.getloadavg()[0]:.1f}, "
             f"{time.strftime('%Y-%m-%d %H:%M')}", "",
             "| convnet | torch.onnx (ms) | parity (ms) | parity, indicator always (ms) | parity ÷ torch.onnx | "
             "indicator always ÷ torch.onnx |", "|---|---|---|---|---|---|"]
    for quick in (True, False):
        t = measure(quick, args.rounds, args.threads)
        base = t["torch.onnx"]
        lines.append(f"| {'quick (b4 3×32×32)' if quick else 'full (b16 3×64×64)'} | {base:.3f} | {t['parity']:.3f} | "
                     f"{t['parity, indicator always']:.3f} | {t['parity'] / base:.2f} | "
                     f"{t['parity, indicator always'] / base:.2f} |")
        print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    return text


if __name__ == "__main__":
    main()
