"""dtype legalization: what onnxruntime's CPU kernels lack, and what the backend does.

Found by trying, not from memory: tests/backends/onnx/probe_kernels.py lowers every
primitive case without legalization and lists what ORT cannot run;
test_legalize.py checks that every gap it finds is covered here.

- :data:`COMPUTE_IN_WIDER` ``(op, dtype) -> wider dtype``: the node's operands of that
  dtype are cast up, the op computes there, and its results are cast back once (for
  kernels ORT lacks, :data:`GAPS`; for ORT kernels outside the contract, :data:`PRECISION`;
  and for composites ORT runs natively, :data:`COMPOSITE_F32`). Exact for every
  integer op (two's complement results are the low bits of the wider result; rules
  that depend on the width, shifts and identities, use the IR dtype), for exact float
  ops, and for float16/bfloat16 arithmetic computed in float32: float32 has more than
  2p + 2 bits of the narrow formats, so a correctly rounded float32 result rounds once
  more to the correctly rounded narrow one, and a transcendental within a few float32
  ULPs rounds to within 1 ULP of the narrow dtype (the contract for f16/bf16).
- :data:`UNSUPPORTED` ``(op, dtype) -> reason``: no wider dtype exists; the claim
  leaves the dtype out, so the conformance matrix shows "unsupported".
"""

from __future__ import annotations

from ...ir.dtypes import DType
from ...ir.opdef import Kind
from ...ir.ops import ops_accepting
from .composites import NATIVE

_WIDER = {DType.bfloat16: DType.float32, DType.float16: DType.float32, DType.int8: DType.int32,
          DType.int16: DType.int32, DType.uint8: DType.int32, DType.uint32: DType.int64,
          DType.bool: DType.uint8}

# The bfloat16 primitives ORT 1.32's CPU provider runs (probe_kernels.py): ops that only
# move data (not Expand, so not broadcast_in_dim) and IsNaN/IsInf (is_nan, is_inf,
# is_finite). Every other bfloat16 primitive in the op table computes in float32.
_ORT_RUNS_BF16 = frozenset({
    "is_nan", "is_inf", "is_finite", "select", "bitcast_convert", "constant", "reshape", "transpose", "slice",
    "concatenate", "pad", "reverse", "gather", "dynamic_slice", "dynamic_update_slice",
})
_BF16_COMPUTE = tuple(op for op in ops_accepting(DType.bfloat16, Kind.PRIMITIVE) if op not in _ORT_RUNS_BF16)

# dtype -> the ops onnxruntime 1.32's CPU provider cannot run on it (probe_kernels.py).
GAPS: dict[DType, tuple[str, ...]] = {
    DType.bfloat16: _BF16_COMPUTE,
    DType.float16: ("scatter",),  # ScatterElements has no float16 reduction="add"
    DType.int16: tuple("sign div rem max min select clamp pad reduce_sum reduce_prod reduce_max reduce_min argmax "
                       "argmin cumsum cumprod cummax cummin reduce_window".split()),
    DType.int8: ("reduce_sum", "reduce_prod", "cumsum", "cumprod", "reduce_window"),
    DType.uint8: ("reduce_sum", "reduce_prod", "cumsum", "cumprod", "reduce_window"),
    DType.uint32: tuple("reduce_sum reduce_max reduce_min argmax argmin cumsum sort top_k "
                        "reduce_window".split()),
    DType.bool: ("select",),
}

# (op, dtype) -> (wider dtype, why): ORT runs these, but not within the contract.
PRECISION: dict[tuple[str, DType], tuple[DType, str]] = {
    # ORT's CPU provider runs most float16 ops by inserting Cast(f16->f32) around them
    # (InsertCastTransformer, at every optimization level) and then removes the
    # Cast(f32->f16)->Cast(f16->f32) pairs between consecutive such nodes: a consumer then
    # reads its producer's unrounded float32 value (fuzz regression onnx-mul-f16: 57440, not
    # 57472). Casts the model itself holds are kept, so the backend widens explicitly.
    **{(op, DType.float16): (DType.float32, "ORT drops the float16 rounding between nodes")
       for op in _BF16_COMPUTE},
    # Rules of several ONNX ops round at every step; in float16 that exceeds 1 ULP.
    **{(op, DType.float16): (DType.float32, "several float16 roundings")
       for op in ("exp2", "expm1", "log2", "log1p", "rsqrt", "atan2", "logistic")},
    # ORT's float32 Tanh is off by up to 28 ULP (3.7 ULP near 0.01, 28 at -1.2e-38);
    # float64 Tanh (<= 5 float64 ULP) rounded to float32 is within 1 ULP.
    ("tanh", DType.float32): (DType.float64, "ORT's float32 Tanh reaches 28 ULP"),
    # Products round, overflow and underflow at every step (inf * 0 = NaN where the IR's
    # float64 product is finite); float64 holds products of narrower floats, rounded once.
    **{(op, dtype): (DType.float64, "products overflow/underflow step by step")
       for op in ("reduce_prod", "cumprod") for dtype in (DType.float16, DType.bfloat16, DType.float32)},
}

# Composites claimed natively (composites.NATIVE) compute float16/bfloat16 in float32 and round
# once, as the IR's decompositions do (compose.widened); ORT's narrow kernels would round more.
COMPOSITE_F32: dict[tuple[str, DType], DType] = {
    (op, dtype): DType.float32 for op in NATIVE for dtype in (DType.float16, DType.bfloat16)}

COMPUTE_IN_WIDER: dict[tuple[str, DType], DType] = {
    **COMPOSITE_F32,
    **{(op, dtype): _WIDER[dtype] for dtype, ops in GAPS.items() for op in ops},
    **{key: wide for key, (wide, _) in PRECISION.items()},
}

_NO_F64 = "onnxruntime 1.32 has no float64 CPU kernel for {} and float64 has no wider type"
UNSUPPORTED: dict[tuple[str, DType], str] = {
    ("asin", DType.float64): _NO_F64.format("Asin"),
    ("acos", DType.float64): _NO_F64.format("Acos"),
    ("atan", DType.float64): _NO_F64.format("Atan"),
    ("atan2", DType.float64): _NO_F64.format("Atan"),
    ("sinh", DType.float64): _NO_F64.format("Sinh"),
    ("cosh", DType.float64): _NO_F64.format("Cosh"),
    ("asinh", DType.float64): _NO_F64.format("Asinh"),
    ("acosh", DType.float64): _NO_F64.format("Acosh"),
    ("atanh", DType.float64): _NO_F64.format("Atanh"),
    ("erf", DType.float64): _NO_F64.format("Erf"),
    ("convolution", DType.float64): _NO_F64.format("Conv"),
}
