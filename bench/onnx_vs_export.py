"""parity's ONNX models against the torch.onnx export of the same workload, in raw ORT.

    .venv/bin/python -m bench.onnx_vs_export [--rounds N] [--threads N] [--markdown PATH]

Issue 15 asks onnx to run the convnet and the encoder within 1.05x of the exported model in
raw ORT, without giving up exactness. Two rules changed for that, and each row here times,
at quick and full size, with inputs and outputs bound once:

- ``torch.onnx``: the workload exported by ``torch.onnx.export`` (the anchor of ``parity bench``);
- ``parity``: parity's model of the same graph, as the backend builds it;
- ``parity before``: the same model as the rule before the change built it:
  - convnet: max_pool pooled a NaN indicator next to the values on every call. Now one
    read pass, ``IsNaN(ReduceSum(x))``, and an ``If`` let a NaN-free input pool plainly,
    which keeps ORT's NCHWc MaxPool. The before model is the new one with each ``If``
    replaced by its exact branch.
  - encoder: attention was ONNX ``Attention``, which ORT 1.32 runs by inlining the op's
    function (extra passes). Unmasked float32 attention is now MatMul, Mul, Softmax and
    MatMul. The before model is built with the old rule.

Rounds are interleaved, medians after warm-up. Not a test: tests never assert time.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import onnx
import onnxruntime as ort

from parity.backends.onnx.backend import DISABLED_OPTIMIZERS
from parity.backends.onnx.composites import onnx_attention
from parity.backends.onnx.lowering import LOWERINGS, to_model

from .candidates import bound_ort_call, export_onnx
from .measure import TimingPlan, median, time_interleaved, write_report
from .workloads import WORKLOADS


def parity_graph(case):
    """The IR graph parity's onnx backend compiles for the case (its inference graph)."""
    import parity
    from parity.frontend import compiled_graph

    before = set(map(id, compiled_graph._EXECUTABLES.values()))
    parity.compile(case.torch_fn, backend="onnx")(*case.inputs)
    (executable,) = [e for e in compiled_graph._EXECUTABLES.values() if id(e) not in before]
    return executable.graph


def with_onnx_attention(graph) -> onnx.ModelProto:
    """``graph``'s model with every attention lowered to ONNX Attention (the rule before)."""
    saved = LOWERINGS[_SDPA]
    LOWERINGS[_SDPA] = onnx_attention
    try:
        return to_model(graph)
    finally:
        LOWERINGS[_SDPA] = saved


_SDPA = "scaled_dot_product_attention"


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


BEFORE = {"convnet": lambda graph: indicator_always(to_model(graph)), "encoder": with_onnx_attention}


def measure(workload: str, quick: bool, rounds: int, threads: int) -> dict[str, float]:
    case = WORKLOADS[workload].build(quick=quick)
    arrays = {f"in{i}": np.ascontiguousarray(t.numpy()) for i, t in enumerate(case.inputs)}
    graph = parity_graph(case)
    # the anchor as `parity bench` runs it; parity's models with the backend's disabled rewrites
    calls = {"torch.onnx": bound_ort_call(export_onnx(case)[0], arrays, threads),
             "parity": bound_ort_call(to_model(graph).SerializeToString(), arrays, threads, DISABLED_OPTIMIZERS),
             "parity before": bound_ort_call(BEFORE[workload](graph).SerializeToString(), arrays, threads,
                                             DISABLED_OPTIMIZERS)}
    want = calls["torch.onnx"]()[0].copy()
    for name, call in calls.items():
        np.testing.assert_allclose(call()[0], want, rtol=1e-5, atol=1e-6, err_msg=name)
    plan = TimingPlan(rounds=rounds, batch_s=0.05, budget_s=1e9, min_rounds=rounds)
    return {name: median(t) * 1e3 for name, t in time_interleaved(calls, plan).items()}


def main(argv=None) -> str:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--markdown", default="")
    args = ap.parse_args(argv)
    lines = [f"onnxruntime {ort.__version__}, {args.threads} thread(s), load average {os.getloadavg()[0]:.1f}, "
             f"{time.strftime('%Y-%m-%d %H:%M')}", "",
             "| workload | torch.onnx (ms) | parity (ms) | parity before (ms) | parity ÷ torch.onnx | "
             "before ÷ torch.onnx |", "|---|---|---|---|---|---|"]
    for workload in BEFORE:
        for quick in (True, False):
            t = measure(workload, quick, args.rounds, args.threads)
            base = t["torch.onnx"]
            lines.append(f"| {workload} ({'quick' if quick else 'full'}) | {base:.3f} | {t['parity']:.3f} | "
                         f"{t['parity before']:.3f} | {t['parity'] / base:.2f} | {t['parity before'] / base:.2f} |")
            print(lines[-1], flush=True)
    return write_report(lines, args.markdown)


if __name__ == "__main__":
    main()
