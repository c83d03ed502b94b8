"""Ops that create tensors from attributes alone: constant and iota."""

from __future__ import annotations

import numpy as np

from ..dtypes import ALL_DTYPES, COMPLEX_DTYPES, DType
from ..errors import TypeRuleError
from ..opdef import Accuracy, AttrKind, AttrSpec, Group, Kind, OpDef
from ..types import TensorType


def _constant_infer(types, attrs):
    value = attrs["value"]
    return (TensorType(DType.from_numpy(value.dtype), value.shape),)


def _constant_ref(ctx):
    return ctx.attrs["value"]


def _iota_infer(types, attrs):
    shape, dim = attrs["shape"], attrs["dimension"]
    if not 0 <= dim < len(shape):
        raise TypeRuleError("iota", f"dimension {dim} is out of range for shape {list(shape)}", "dimension")
    if attrs["dtype"].is_bool:
        raise TypeRuleError("iota", "bool is not a counting dtype", "dtype")
    return (TensorType(attrs["dtype"], shape),)


def _iota_ref(ctx):
    t = ctx.out_types[0]
    dim = ctx.attrs["dimension"]
    line = np.arange(t.shape[dim], dtype=np.int64)
    view = [1] * t.rank
    view[dim] = t.shape[dim]
    # Integer iota wraps like any integer arithmetic; float iota is exact up to 2**mantissa.
    counts = np.broadcast_to(line.reshape(view), t.shape)
    return counts.astype(np.float64) if t.dtype.is_float else counts.astype(t.dtype.numpy)


OPS = (
    OpDef(
        name="constant",
        kind=Kind.PRIMITIVE,
        operands=(),
        attrs=(AttrSpec("value", AttrKind.ARRAY, doc="the tensor, with its dtype and shape"),),
        infer=_constant_infer,
        dtypes=ALL_DTYPES + COMPLEX_DTYPES,
        accuracy=Accuracy.EXACT,
        groups=frozenset({Group.EXACT}),
        reference=_constant_ref,
        doc="A literal tensor.",
    ),
    OpDef(
        name="iota",
        kind=Kind.PRIMITIVE,
        operands=(),
        attrs=(
            AttrSpec("dtype", AttrKind.DTYPE),
            AttrSpec("shape", AttrKind.SHAPE),
            AttrSpec("dimension", AttrKind.INT, 0),
        ),
        infer=_iota_infer,
        dtypes=tuple(d for d in ALL_DTYPES if not d.is_bool),
        accuracy=Accuracy.EXACT,
        groups=frozenset({Group.EXACT}),
        reference=_iota_ref,
        doc="0, 1, 2, ... along `dimension`, broadcast over the other dimensions.",
    ),
)
