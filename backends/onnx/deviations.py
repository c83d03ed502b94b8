"""Known, measured differences of the onnx backend from the IR's contract.

Each entry was measured (tests/backends/onnx/test_deviations.py re-measures it and fails
when the number changes, so a fixed or worsened deviation gets noticed). Where ORT's
kernel was out of contract but another lowering meets it (Sigmoid, float32 Tanh,
float64 Sin/Cos/Tanh near their bad ranges, float products), the lowering changed
instead and there is no entry here.
"""

from __future__ import annotations

from ...ir.dtypes import DType
from ..base import ANY_OP, Deviation, Summation

# (op, dtype) -> measured max error in ULPs of the dtype, and why.
MEASURED: dict[tuple[str, DType], tuple[float, str]] = {
    ("tan", DType.float64): (
        5.0,
        "ORT has no float64 Tan; sin(r) / cos(r) after range reduction reaches 5 ULP "
        "(4 of 200000 uniform samples in [-20, 20] above 4 ULP)"),
}

DEVIATIONS: tuple[Deviation, ...] = tuple(
    Deviation(op=op, reason=reason, max_error=f"{ulps:.3g} ulp", dtype=dtype, device="cpu")
    for (op, dtype), (ulps, reason) in MEASURED.items()
)


# How ORT sums (conformance holds each accumulation to (ceil(log2 n) + block)·ε·Σ|terms|, or
# n·ε·Σ|terms| for one sequential pass). Measured with one 1.0 among 2**-25s (the chain the
# 1.0 starts absorbs the 2**-25s it meets one at a time): ReduceSum adds 8 lanes one element
# after another (chain n/8: 127,000 of 2**20), CumSum one pass (chain n), Conv n/8 over its
# channels; MatMul (MLAS) chains at most 1,021 terms at K = 4,096 and 65,536.
SUMMATION: tuple[Summation, ...] = (
    Summation(ANY_OP, None, "ReduceSum, CumSum and Conv add their terms in one pass (8 lanes); "
              "measured chains n/8, n and n/8"),
    *(Summation(op, 1024, "MLAS's gemm adds K in blocks: measured chains of 1,021 terms at K = 4,096 and 65,536")
      for op in ("dot_general", "matmul", "linear")),
)
