"""Per-call overhead of the onnx backend on a tiny graph, against plain onnxruntime.

    python tests/backends/onnx/measure_overhead.py

Times (median of repeats, µs per call) for: ORT ``session.run`` with NumPy feeds, ORT
IOBinding with pre-bound buffers (the floor), and parity's executable (IOBinding per
call with fresh output arrays). Not a test: tests never assert time.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from parity.backends.onnx import OnnxBackend, to_model
from parity.backends.onnx.backend import make_session
from parity.ir import GraphBuilder, f32


def per_call(fn, calls: int = 2000, repeats: int = 7) -> float:
    for _ in range(200):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(times)


def main() -> dict[str, float]:
    b = GraphBuilder("tiny")
    x, y = b.input(f32[8]), b.input(f32[8])
    graph = b.build([b.add(x, y)])
    xs, ys = np.ones(8, np.float32), np.ones(8, np.float32)
    session = make_session(to_model(graph))
    bound = session.io_binding()
    out = np.empty(8, np.float32)
    bound.bind_input("in0", "cpu", 0, np.float32, [8], xs.ctypes.data)
    bound.bind_input("in1", "cpu", 0, np.float32, [8], ys.ctypes.data)
    bound.bind_output("out0", "cpu", 0, np.float32, [8], out.ctypes.data)
    run = OnnxBackend().compile(graph, "cpu")
    results = {
        "ort session.run (numpy feeds)": per_call(lambda: session.run(None, {"in0": xs, "in1": ys})),
        "ort run_with_iobinding (bound once)": per_call(lambda: session.run_with_iobinding(bound)),
        "parity executable": per_call(lambda: run(xs, ys)),
    }
    for name, us in results.items():
        print(f"{name:40s} {us:7.2f} µs")
    return results


if __name__ == "__main__":
    main()
