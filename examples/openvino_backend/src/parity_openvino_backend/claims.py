"""What the openvino backend does not claim, each with why: whole ops and dtypes it declines
(``declined``, ``declined_dtypes``: errors and the matrix show the reason), and single (op, dtype)
pairs where OpenVINO computes something else, found by ``parity conform --backend openvino``."""

from __future__ import annotations

from parity.ir import DType

DECLINED = {
    "bitcast_convert": "OpenVINO has no bitcast operation",
    "atan2": "OpenVINO has no two-argument arctangent",
    "expm1": "OpenVINO has no expm1: exp(x) - 1 loses every digit near 0",
    "log1p": "OpenVINO has no log1p: log(1 + x) loses every digit near 0",
    "cumprod": "OpenVINO's only scan is CumSum",
    "cummax": "OpenVINO's only scan is CumSum",
    "cummin": "OpenVINO's only scan is CumSum",
    "shift_right_logical": "OpenVINO has no logical right shift and no bitcast to build one",
}

DECLINED_DTYPES = {
    DType.bfloat16: "this plugin hands OpenVINO no bfloat16 tensors (ov.Tensor takes no ml_dtypes array)",
    DType.float64: "OpenVINO's CPU plugin computes float64 in float32 (its graphs are converted on load)",
}

# Measured by `parity conform --backend openvino --quick`, each with the case that shows it.
# int64: the CPU plugin computes it in 32 bits, even to move it (reshape[i64]:split, add[i64]:specials):
# this backend runs int64 as int32 pairs (wide.py) and claims int64 only for the ops it has pair rules for.
_SATURATES = "the CPU plugin saturates 8-bit integer arithmetic instead of wrapping: 127 + 1 = 127 (add[i8]:specials)"
_INT32_IN_FLOAT = "the CPU plugin compares and divides int32 in float32: 2**31 - 1 == 2**31 - 2 (eq[i32]:specials)"

# dtypes no op is claimed in, but not declined: a graph may still carry them where an op's claim is
# keyed by another dtype
UNCLAIMED_DTYPES = {
    DType.float16: "the CPU plugin computes float16 in float16, not wider and rounded once: 2 ulp "
                   "(sub[f16]:regression:onnx-sub-f16-048da3b8), 3.62 ulp (cos[f16])",
    DType.int8: _SATURATES,
    DType.uint8: "the CPU plugin saturates 8-bit integer arithmetic instead of wrapping (add[u8]:specials)",
    DType.uint32: "the CPU plugin computes uint32 as int32: max(2**31, 1) = 1 (max[u32]:specials)",
}

# op -> {dtype: why}: left out of the claims (an op's claim is all or nothing per dtype: a claim
# predicate, "int64 within int32's range", "convert to targets other than int64", would let more in)
NOT_CLAIMED: dict[str, dict[DType, str]] = {
    "div": {DType.int32: _INT32_IN_FLOAT},
    **{op: {DType.int32: "the CPU plugin reduces int32 in float32 (reduce_sum[i32]:specials)"}
       for op in ("reduce_sum", "reduce_max", "reduce_min", "argmax", "argmin", "dot_general")},
    "rem": {DType.int32: _INT32_IN_FLOAT,
            DType.float32: "OpenVINO's Mod computes x - y·trunc(x/y) in float32: 224 ulp (rem[f32]:random)"},
    "reduce_prod": {DType.float32: "the CPU plugin's ReduceProd is off by 1.45 ulp (reduce_prod[f32]:full_range)"},
}

# Composites claimed natively (composites.py) that are left to their decompositions when oneDNN is
# capped below the CPU (ONEDNN_MAX_CPU_ISA, the way to get the AVX2 kernels on an AVX-512 CPU).
# OpenVINO's MVN kernel takes its ISA from the CPU, not from the cap its other kernels obey: capped at
# AVX2 on an AVX-512 CPU it runs zmm code with the AVX2 kernel's tails and reads past its input, a
# SIGSEGV unless the normalized size is a multiple of 16 (layer_norm[f32]:last; gdb: vblendmps on zmm).
NOT_NATIVE_UNDER_ISA_CAP = {
    "layer_norm": "OpenVINO's MVN kernel ignores oneDNN's ISA cap and crashes under it (layer_norm[f32]:last)",
}


def isa_capped(environ) -> bool:
    """Whether oneDNN is told to use less than the CPU has (either spelling of its variable)."""
    return any(environ.get(name, "ALL").upper() != "ALL" for name in ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"))
