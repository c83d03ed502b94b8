"""Composites this backend claims natively, run by OpenVINO's fused kernels instead of their
decompositions (layer_norm as MVN, gelu): each is certified against its composite's own bound,
in the dtypes ``COMPOSITE_DTYPES`` names (the others decompose into the primitives). Softmax is
left decomposed: OpenVINO's SoftMax is 1.46 ulp off (softmax[f32]:specials), the decomposition exact."""

from __future__ import annotations

import openvino.opset15 as ops

from parity.ir import DType

from .compare import greater
from .ov_types import const, dims, i64s


def _layer_norm(attrs, outs, x, weight, bias):
    rank = len(dims(x))
    axes = list(range(rank - attrs["normalized_ndim"], rank))
    normalized = ops.mvn(x, i64s(axes), True, attrs["eps"], "inside_sqrt")
    return ops.add(ops.multiply(normalized, weight), bias)


# Past this, gelu(x) is x in every float dtype (1 - Φ(8) = 6e-16, under half an f32 ulp).
_GELU_IS_IDENTITY_FROM = 8.0


def _gelu(attrs, outs, x):
    if attrs["approximate"] != "none":
        return ops.gelu(x, "tanh")
    # OpenVINO's erf Gelu kernel for AVX-512 CPUs gives NaN at +inf and inf at 3e38 (x·(1 + erf)
    # overflows); its AVX2 kernel does not. Measured: conformance's gelu[f32]:specials.
    large = greater(x, const(_GELU_IS_IDENTITY_FROM, x))
    return ops.select(large, x, ops.gelu(x, "erf"))


RULES = {
    "layer_norm": _layer_norm,
    "gelu": _gelu,
}

COMPOSITE_DTYPES = frozenset({DType.float32})
