"""Rules that look at more than one element: reductions, argmax/argmin, cumsum, dot_general,
convolution, reduce_window.

Empty reductions give the identity (a constant: shapes are concrete); max and min propagate
NaN, as the IR says and OpenVINO's ReduceMax does not.
"""

from __future__ import annotations

import math

import numpy as np
import openvino as ov
import openvino.opset15 as ops

from .compare import greater
from .ov_types import const, dims, i64s, is_float, ov_type, typed_const
from .shape import pad, reshape, slice_axes


def _identity(kind, dtype):
    if kind in ("sum", "or"):
        return 0
    if kind in ("prod", "and"):
        return 1
    if dtype.is_float:
        return -math.inf if kind == "max" else math.inf
    info = np.iinfo(dtype.numpy)
    return info.min if kind == "max" else info.max


_REDUCERS = {"sum": ops.reduce_sum, "prod": ops.reduce_prod, "max": ops.reduce_max, "min": ops.reduce_min,
             "and": ops.reduce_logical_and, "or": ops.reduce_logical_or}


def _reduce(kind):
    def rule(attrs, outs, x):
        axes, t = list(attrs["axes"]), outs[0]
        if not axes:
            return ops.convert(x, x.get_element_type())
        if any(dims(x)[a] == 0 for a in axes):  # an empty reduction: the identity
            return typed_const(np.full(t.shape, _identity(kind, t.dtype)), ov_type(t.dtype))
        reduced = _REDUCERS[kind](x, i64s(axes), False)
        if kind in ("max", "min") and is_float(x):
            has_nan = ops.reduce_logical_or(ops.is_nan(x), i64s(axes), False)
            reduced = ops.select(has_nan, const(math.nan, x), reduced)
        return reduced

    return rule


def _arg(kind):
    """The lowest index of the extreme (NaN counts as the extreme), in ``index_dtype``."""
    def rule(attrs, outs, x):
        axis = attrs["axis"]
        n = dims(x)[axis]
        extreme = _reduce(kind)({"axes": [axis]}, [outs[0]], x)
        extreme = ops.unsqueeze(extreme, i64s([axis]))
        hit = ops.equal(x, extreme)
        if is_float(x):
            hit = ops.logical_or(hit, ops.logical_and(ops.is_nan(x), ops.is_nan(extreme)))
        line = [1] * len(dims(x))
        line[axis] = n
        positions = ops.broadcast(reshape(i64s(range(n)), line), i64s(dims(x)))
        index = ops.reduce_min(ops.select(hit, positions, i64s([n])), i64s([axis]), False)
        return ops.convert(index, ov_type(outs[0].dtype))

    return rule


def _cumsum(attrs, outs, x):
    return ops.cumsum(x, typed_const(attrs["axis"], ov.Type.i64), exclusive=False, reverse=attrs["reverse"])


def _dot_general(attrs, outs, lhs, rhs):
    """One batched MatMul, [b, m, k] x [b, n, k]ᵀ: batch dims first, then free dims, then contracted
    ones on both sides, so a Linear's weight ([out, in]) needs no transpose (MatMul's transpose_b)."""
    lb, rb = list(attrs["lhs_batch_dims"]), list(attrs["rhs_batch_dims"])
    lc, rc = list(attrs["lhs_contracting_dims"]), list(attrs["rhs_contracting_dims"])
    ls, rs = dims(lhs), dims(rhs)
    lf = [d for d in range(len(ls)) if d not in lb and d not in lc]
    rf = [d for d in range(len(rs)) if d not in rb and d not in rc]
    b, m, k = (math.prod(ls[d] for d in group) for group in (lb, lf, lc))
    n = math.prod(rs[d] for d in rf)
    left = reshape(_transposed(lhs, lb + lf + lc), [b, m, k])
    right = reshape(_transposed(rhs, rb + rf + rc), [b, n, k])
    return reshape(ops.matmul(left, right, False, True), outs[0].shape)


def _transposed(x, permutation):
    """``x`` transposed, or as it is where ``permutation`` is the identity (no copy at run time)."""
    return x if permutation == sorted(permutation) else ops.transpose(x, i64s(permutation))


def _convolution(attrs, outs, lhs, rhs):
    """Convolution (one group) or GroupConvolution, NC... x OI...; the padding (zeros, input
    dilation as interior zeros, negative amounts as a crop) is done before the runtime's op: its
    own padding skips the padded positions, so 0 · inf there gave 0, not NaN
    (convolution[f32]:regression:xla-convolution-f32-49e4a9aa)."""
    spatial = len(dims(lhs)) - 2
    x = pad(lhs, const(0, lhs), [0, 0] + [lo for lo, _ in attrs["padding"]],
            [0, 0] + [hi for _, hi in attrs["padding"]], [0, 0] + [d - 1 for d in attrs["lhs_dilation"]])
    strides, dilations, none = list(attrs["window_strides"]), list(attrs["rhs_dilation"]), [0] * spatial
    groups = attrs["feature_group_count"]
    if groups == 1:
        return ops.convolution(x, rhs, strides, none, none, dilations)
    o, *rest = dims(rhs)
    grouped = reshape(rhs, [groups, o // groups, *rest])
    return ops.group_convolution(x, grouped, strides, none, none, dilations)


def _reduce_window(attrs, outs, x):
    """Every window offset as one strided slice of the padded operand, combined elementwise:
    exact for max, a sequential sum over the window's terms for sum."""
    is_max, rank = attrs["kind"] == "max", len(dims(x))
    fill = _identity("max" if is_max else "sum", outs[0].dtype)
    padded = pad(x, typed_const(fill, x.get_element_type()), [lo for lo, _ in attrs["padding"]],
                 [hi for _, hi in attrs["padding"]], [0] * rank)
    out_shape = list(outs[0].shape)
    if 0 in out_shape:
        return typed_const(np.zeros(out_shape), ov_type(outs[0].dtype))
    window, strides, dilations = attrs["window_dimensions"], attrs["window_strides"], attrs["window_dilations"]
    combined = None
    for offset in np.ndindex(*window):
        starts = [o * d for o, d in zip(offset, dilations)]
        stops = [s + (n - 1) * st + 1 for s, n, st in zip(starts, out_shape, strides)]
        part = slice_axes(padded, starts, stops, strides, range(rank))
        if combined is None:
            combined = part
        elif is_max:
            combined = ops.select(ops.logical_or(ops.is_nan(part), greater(part, combined)), part, combined) \
                if is_float(x) else ops.maximum(combined, part)
        else:
            combined = ops.add(combined, part)
    return combined


RULES = {
    **{f"reduce_{kind}": _reduce(kind) for kind in _REDUCERS},
    "argmax": _arg("max"), "argmin": _arg("min"),
    "cumsum": _cumsum,
    "dot_general": _dot_general,
    "convolution": _convolution,
    "reduce_window": _reduce_window,
}
