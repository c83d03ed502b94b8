"""The encoder training step's matrix products alone: torch, XLA:CPU (jax.jit) and ORT (MLAS).

    .venv/bin/python -m bench.gemm [--rounds N] [--markdown PATH]

The encoder_train workload (b8 s128 d256, ff 1024) is matmul-bound: its roofline is 39 ms
of eager's ~60 ms step. Each row is one product the step runs (forward and backward, with
the transposed operands autograd uses), timed alone on 1 thread in three runtimes,
interleaved rounds, medians. A runtime whose products are slower than eager's cannot run
the step at eager's speed, however well the rest is fused. Not a test: tests never assert
time.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from .measure import TimingPlan, median, pin_threads, time_interleaved, write_report

TOKENS, MODEL, HIDDEN = 8 * 128, 256, 1024

# (label, lhs shape, rhs shape, transpose lhs?, how many times one step runs it)
PRODUCTS = [
    ("x @ Wqkvᵀ (forward)", (TOKENS, MODEL), (MODEL, 3 * MODEL), False, 1),
    ("h @ W1ᵀ (forward)", (TOKENS, MODEL), (MODEL, HIDDEN), False, 1),
    ("g @ W2ᵀ (forward)", (TOKENS, HIDDEN), (HIDDEN, MODEL), False, 1),
    ("dy @ W2 (backward, dx)", (TOKENS, MODEL), (MODEL, HIDDEN), False, 1),
    ("gᵀ @ dy (backward, dW2)", (TOKENS, HIDDEN), (TOKENS, MODEL), True, 1),
    ("hᵀ @ dg (backward, dW1)", (TOKENS, MODEL), (TOKENS, HIDDEN), True, 1),
]


def _calls(lhs: np.ndarray, rhs: np.ndarray, transposed: bool) -> dict:
    import jax
    import onnxruntime as ort
    import torch
    from onnx import TensorProto, helper

    tl, tr = torch.from_numpy(lhs), torch.from_numpy(rhs)
    jl, jr = jax.device_put(lhs), jax.device_put(rhs)
    jitted = jax.jit(lambda a, b: (a.T if transposed else a) @ b)
    nodes = [helper.make_node("Transpose", ["a"], ["at"], perm=[1, 0])] if transposed else []
    nodes.append(helper.make_node("MatMul", ["at" if transposed else "a", "b"], ["y"]))
    graph = helper.make_graph(nodes, "mm", [helper.make_tensor_value_info("a", TensorProto.FLOAT, lhs.shape),
                                            helper.make_tensor_value_info("b", TensorProto.FLOAT, rhs.shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = 1, 1
    session = ort.InferenceSession(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
                                   .SerializeToString(), options, providers=["CPUExecutionProvider"])
    feeds = {"a": lhs, "b": rhs}
    return {"torch": lambda: (tl.T if transposed else tl) @ tr,
            "XLA:CPU": lambda: jitted(jl, jr).block_until_ready(),
            "ORT": lambda: session.run(None, feeds)}


def main(argv=None) -> str:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--markdown", default="")
    args = ap.parse_args(argv)
    pin_threads(1)
    rng = np.random.default_rng(0)
    lines = [f"1 thread, load average {os.getloadavg()[0]:.1f}, {time.strftime('%Y-%m-%d %H:%M')}", "",
             "| product | shapes | torch (ms) | XLA:CPU (ms) | ORT (ms) | XLA ÷ torch | ORT ÷ torch |",
             "|---|---|---|---|---|---|---|"]
    totals = {"torch": 0.0, "XLA:CPU": 0.0, "ORT": 0.0}
    for label, a_shape, b_shape, transposed, count in PRODUCTS:
        lhs = rng.standard_normal(a_shape, dtype=np.float32)
        rhs = rng.standard_normal(b_shape, dtype=np.float32)
        calls = _calls(lhs, rhs, transposed)
        plan = TimingPlan(rounds=args.rounds, batch_s=0.025, budget_s=1e9, min_rounds=args.rounds)
        t = {name: median(v) * 1e3 for name, v in time_interleaved(calls, plan).items()}
        for name in totals:
            totals[name] += count * t[name]
        shapes = f"{'ᵀ' if transposed else ''}{list(a_shape)} @ {list(b_shape)}"
        lines.append(f"| {label} | {shapes} | {t['torch']:.3f} | {t['XLA:CPU']:.3f} | {t['ORT']:.3f} | "
                     f"{t['XLA:CPU'] / t['torch']:.2f} | {t['ORT'] / t['torch']:.2f} |")
        print(lines[-1], flush=True)
    lines.append(f"| **sum** | | {totals['torch']:.3f} | {totals['XLA:CPU']:.3f} | {totals['ORT']:.3f} | "
                 f"{totals['XLA:CPU'] / totals['torch']:.2f} | {totals['ORT'] / totals['torch']:.2f} |")
    print(lines[-1])
    return write_report(lines, args.markdown)


if __name__ == "__main__":
    main()
