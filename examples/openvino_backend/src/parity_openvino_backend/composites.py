"""Composites this backend claims natively, run by OpenVINO's fused kernels instead of their
decompositions (layer_norm as MVN, gelu): each is certified against its composite's own bound,
in the dtypes ``COMPOSITE_DTYPES`` names (the others decompose into the primitives). Softmax is
left decomposed: OpenVINO's SoftMax is 1.46 ulp off (softmax[f32]:specials), the decomposition exact."""

from __future__ import annotations

import openvino.opset15 as ops

from parity.ir import DType

from .ov_types import dims, i64s


def _layer_norm(attrs, outs, x, weight, bias):
    rank = len(dims(x))
    axes = list(range(rank - attrs["normalized_ndim"], rank))
    normalized = ops.mvn(x, i64s(axes), True, attrs["eps"], "inside_sqrt")
    return ops.add(ops.multiply(normalized, weight), bias)


RULES = {
    "layer_norm": _layer_norm,
    "gelu": lambda attrs, outs, x: ops.gelu(x, "erf" if attrs["approximate"] == "none" else "tanh"),
}

COMPOSITE_DTYPES = frozenset({DType.float32})
