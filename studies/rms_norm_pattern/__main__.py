"""Is ORT's fused RMSNormalization within the onnx backend's contract for a hand-written RMSNorm?

Question: Hugging Face's RMSNorm is nine primitives (``weight * (x * rsqrt(mean(x * x) + eps))``);
``backends/onnx/recompose.py`` lowers the chain as one ``rms_norm`` (ORT's RMSNormalization). Its
rounding differs from the chain's. For each dtype and input family, the error of (a) the chain
lowered op by op and (b) the recomposed node, both on onnxruntime, against the float64 oracle,
under the ``rms_norm`` bound with the onnx backend's declared summation (conformance.compare).
The chain is the composite's decomposition, so the oracle of the case ``rms_norm(x, w)`` is the
chain's oracle.

Run: ``python -m studies.rms_norm_pattern`` (prints one Markdown table; results.md keeps it).
"""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("PARITY_CACHE_DIR", tempfile.mkdtemp())

import numpy as np  # noqa: E402

from parity.backends.onnx import lowering  # noqa: E402
from parity.backends.onnx.backend import OnnxBackend  # noqa: E402
from parity.conformance import values as V  # noqa: E402
from parity.conformance.case import Case  # noqa: E402
from parity.conformance.compare import measure  # noqa: E402
from parity.conformance.declared import Declared  # noqa: E402
from parity.ir import GraphBuilder, TensorType, evaluate  # noqa: E402
from parity.ir.dtypes import DType  # noqa: E402

DTYPES = (DType.float32, DType.float16, DType.bfloat16, DType.float64)
EPS = 1e-6


def hand_written(x_type: TensorType, w_type: TensorType, eps: float):
    """The graph Hugging Face's LlamaRMSNorm is captured as (last-axis norm, in one dtype)."""
    b = GraphBuilder("hf_rms_norm")
    x, w = b.input(x_type), b.input(w_type)
    d, shape, rank = x_type.dtype, x_type.shape, x_type.rank
    rows = shape[:-1]
    total = b.reduce_sum(b.mul(x, x), axes=(rank - 1,))
    n = b.broadcast_in_dim(b.constant(shape[-1], d), shape=rows, broadcast_dimensions=())
    ms = b.reshape(b.div(total, n), shape=(*rows, 1))
    e = b.broadcast_in_dim(b.constant(eps, d), shape=(*rows, 1), broadcast_dimensions=())
    r = b.broadcast_in_dim(b.rsqrt(b.add(ms, e)), shape=shape, broadcast_dimensions=tuple(range(rank)))
    y = b.mul(x, r)
    return b.build([b.mul(b.broadcast_in_dim(w, shape=shape, broadcast_dimensions=(rank - 1,)), y)])


def families(d: DType):
    """name -> inputs(rng): x rows and a weight."""
    def rows(width, scale=1.0, spread=False):
        def draw(rng):
            x = rng.standard_normal((8, width)) * scale
            if spread:  # elements over six decades within one row
                x = x * 10.0 ** rng.uniform(-3, 3, x.shape)
            return V.cast(x, d), V.normal(rng, d, (width,), 1.0)
        return draw

    out = {f"normal w={w}": rows(w) for w in (6, 32, 128, 1024, 4096)}
    out["six decades w=1024"] = rows(1024, spread=True)
    out["small rows (1e-3) w=64"] = rows(64, scale=1e-3)
    big = {DType.float32: 1e15, DType.float64: 1e150, DType.float16: 10.0, DType.bfloat16: 1e15}[d]
    out[f"large rows ({big:g}) w=64"] = rows(64, scale=big)
    out["zeros w=16"] = lambda rng: (V.cast(np.zeros((2, 16)), d), V.normal(rng, d, (16,), 1.0))
    return out


def run(graph, arrays, recomposed: bool):
    saved = lowering.recompose
    if not recomposed:
        lowering.recompose = lambda g: g
    try:
        executable = OnnxBackend().compile(graph)
        ops = [n.op_type for n in lowering.to_model(graph).graph.node]
    finally:
        lowering.recompose = saved
    return [np.asarray(a) for a in executable(*arrays)], ops


def main() -> None:
    declared = Declared.of(OnnxBackend(), "cpu")
    print("| dtype | inputs | chain: max ULP, max error/bound | recomposed: max ULP, error/bound | elements that differ | ONNX nodes chain → recomposed |")
    print("|---|---|---|---|---|---|")
    for d in DTYPES:
        eps = float(np.asarray(EPS, d.numpy).astype(np.float64)) if d is not DType.float64 else float(np.float32(EPS))
        for name, draw in families(d).items():
            case = Case("rms_norm", d, draw, {"normalized_ndim": 1, "eps": eps}, name=name)
            arrays = case.arrays()
            oracle = evaluate(case.graph(arrays), arrays, oracle=True)
            graph = hand_written(*[TensorType(d, a.shape) for a in arrays], eps)
            cells, counts, outs = [], [], []
            for recomposed in (False, True):
                got, ops = run(graph, arrays, recomposed)
                outs.append(got[0])
                m = measure(case, case.graph(arrays), arrays, oracle, got, declared)
                cells.append(f"{m.max_ulp:.2f}, {m.max_ratio:.3f}" + ("" if m.passed else " **FAIL**"))
                counts.append(str(len(ops)))
            differ = int((outs[0].view(f"u{outs[0].itemsize}") != outs[1].view(f"u{outs[0].itemsize}")).sum())
            print(f"| {d.short} | {name} | {cells[0]} | {cells[1]} | {differ} of {outs[0].size} | "
                  f"{' → '.join(counts)} |", flush=True)


if __name__ == "__main__":
    main()
