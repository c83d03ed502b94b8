"""Rules that combine elements: reductions, scans, sorting, contractions, windows.

Written for the IR's semantics, not ORT's defaults:

- ORT's ReduceMax/ReduceMin and ArgMax/ArgMin skip NaN; the IR propagates it (and
  argmax returns the first NaN's index), so a NaN count is reduced alongside.
- ReduceSum/CumSum of only -0.0 terms give -0.0 in ORT; the IR folds from +0.0, so
  float sums get ``+ 0.0`` (which changes nothing else).
- ``cummax``/``cummin`` have no ONNX op: a Hillis–Steele scan (log2(n) shifted Max/Min).
- ``sort``/``top_k`` are TopK with ``sorted=1``: ORT breaks ties by the lower index (so
  it is stable in both directions) and orders NaN above +inf (checked by conformance).
- ``reduce_window`` gathers every window into new axes (one Gather per windowed dim,
  index arrays computed here) and reduces them: exact for any padding, stride and
  dilation, and NaN-propagating, which ORT's MaxPool is not.
- ``dot_general`` is Transpose → Reshape → MatMul → Reshape; ``convolution`` is Conv
  (float32), with input dilation as interior padding and negative padding as a crop.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...ir.dtypes import DType
from ...ir.ops.reduction import highest, lowest
from ...ir.ops.window import windowed_size
from ...ir.types import DimExpr
from .context import OnnxNodeContext
from .shape import interior_pad, reshape_to, transpose_to

_I32, _I64 = DType.int32, DType.int64


def _reduce(ctx: OnnxNodeContext, op_type: str, x: str, axes: Sequence[int], **attrs) -> str:
    return ctx.op(op_type, x, ctx.em.ints(axes), keepdims=0, **attrs)


def _any_nan(ctx: OnnxNodeContext, x: str, axes: Sequence[int]) -> str:
    nan = ctx.cast(ctx.op("IsNaN", x), _I32)
    return ctx.op("Greater", _reduce(ctx, "ReduceMax", nan, axes), ctx.scalar(0, _I32))  # empty: INT_MIN


def _nan_propagating(ctx: OnnxNodeContext, op_type: str, x: str, axes: Sequence[int], dtype: DType) -> str:
    out = _reduce(ctx, op_type, x, axes)
    if not dtype.is_float:
        return out
    return ctx.where(_any_nan(ctx, x, axes), ctx.scalar(np.nan, dtype), out, dtype)


def _plus_zero(ctx: OnnxNodeContext, x: str, dtype: DType) -> str:
    return ctx.op("Add", x, ctx.scalar(0.0, dtype)) if dtype.is_float else x


def _fold_by_scan(ctx: OnnxNodeContext, scan_op: str, x: str, shape, axes: Sequence[int], identity) -> str:
    """Reduce ``axes`` by scanning them (flattened, last) and taking the last element.

    ORT's integer ReduceSum/ReduceProd saturate or go through double and its float
    ReduceProd is inaccurate; CumSum/CumProd wrap and round like the IR's fold."""
    keep = [i for i in range(len(shape)) if i not in axes]
    kept = [shape[i] for i in keep]
    terms = tuple(shape[a] for a in axes)
    if 0 in terms:
        return ctx.full(identity, ctx.out)
    x = transpose_to(ctx, x, keep + list(axes))
    x = reshape_to(ctx, x, [*kept, terms], kept + list(terms))
    scanned = ctx.op(scan_op, x, ctx.scalar(-1, _I64))
    last = ctx.op("Slice", scanned, ctx.em.ints([-1]), ctx.em.ints([np.iinfo(np.int64).max]), ctx.em.ints([-1]))
    return ctx.op("Squeeze", last, ctx.em.ints([-1]))


def _sum(ctx: OnnxNodeContext, x: str, shape, axes: Sequence[int]) -> str:
    if ctx.dtype.is_float:
        return _plus_zero(ctx, _reduce(ctx, "ReduceSum", x, axes), ctx.dtype)
    return _fold_by_scan(ctx, "CumSum", x, shape, axes, 0)


def _reducer(op_type: str):
    def rule(ctx, x):
        axes = ctx.attrs["axes"]
        if not axes:
            return ctx.op("Identity", x)
        if op_type == "ReduceSum":
            return _sum(ctx, x, ctx.in_types[0].shape, axes)
        if op_type == "ReduceProd":
            return _fold_by_scan(ctx, "CumProd", x, ctx.in_types[0].shape, axes, 1)
        if op_type in ("ReduceMax", "ReduceMin"):
            if any(ctx.in_types[0].shape[a] == 0 for a in axes):  # the identity of the IR dtype, not ORT's
                return ctx.full((lowest if op_type == "ReduceMax" else highest)(ctx.ir_dtype), ctx.out)
            return _nan_propagating(ctx, op_type, x, axes, ctx.dtype)  # empty: ∓inf / the int limits
        raise AssertionError(op_type)

    return rule


def _boolean(op_type: str):
    # and = min over 0/1 > 0, or = max > 0; the int32 limits of empty reductions give true/false.
    def rule(ctx, x):
        axes = ctx.attrs["axes"]
        if not axes:
            return ctx.op("Identity", x)
        return ctx.op("Greater", _reduce(ctx, op_type, ctx.cast(x, _I32), axes), ctx.scalar(0, _I32))

    return rule


def _arg(op_type: str):
    def rule(ctx, x):
        axis = ctx.attrs["axis"]
        out = ctx.op(op_type, x, axis=axis, keepdims=0, select_last_index=0)  # ties: first index
        if ctx.dtype.is_float:
            nan = ctx.cast(ctx.op("IsNaN", x), _I32)
            first_nan = ctx.op("ArgMax", nan, axis=axis, keepdims=0, select_last_index=0)
            out = ctx.op("Where", _any_nan(ctx, x, (axis,)), first_nan, out)
        return out if ctx.out.dtype is _I64 else ctx.cast(out, ctx.out.dtype)

    return rule


# -- scans --------------------------------------------------------------------------------


def _native_scan(op_type: str):
    def rule(ctx, x):
        a = ctx.attrs
        out = ctx.op(op_type, x, ctx.scalar(a["axis"], _I64), reverse=int(a["reverse"]))
        return _plus_zero(ctx, out, ctx.dtype) if op_type == "CumSum" else out

    return rule


def _flip(ctx, x, axis):
    return ctx.op("Slice", x, ctx.em.ints([-1]), ctx.em.ints([np.iinfo(np.int64).min]), ctx.em.ints([axis]),
                  ctx.em.ints([-1]))


def _extreme_scan(op_type: str, identity):
    def rule(ctx, x):
        axis, reverse = ctx.attrs["axis"], ctx.attrs["reverse"]
        n = ctx.in_types[0].shape[axis]
        if isinstance(n, DimExpr):
            raise ctx.unsupported(f"a scan along the symbolic dim {n}")
        if reverse:
            x = _flip(ctx, x, axis)
        fill = ctx.scalar(identity(ctx.dtype))
        step = 1
        while step < n:  # Hillis–Steele: after step k every element covers 2**k predecessors
            head = ctx.op("Slice", x, ctx.em.ints([0]), ctx.em.ints([n - step]), ctx.em.ints([axis]))
            shifted = ctx.op("Pad", head, ctx.em.ints([step, 0]), fill, ctx.em.ints([axis]))
            x = ctx.op(op_type, x, shifted)
            step *= 2
        return _flip(ctx, x, axis) if reverse else ctx.op("Identity", x)

    return rule


# -- sorting ------------------------------------------------------------------------------


def sort(ctx, x):
    axis = ctx.attrs["axis"]
    k = ctx.em.shape([ctx.in_types[0].shape[axis]])
    values, indices = ctx.op("TopK", x, k, axis=axis, largest=int(ctx.attrs["descending"]), sorted=1, outputs=2)
    return values, indices


def top_k(ctx, x):
    k = ctx.em.ints([ctx.attrs["k"]])
    values, indices = ctx.op("TopK", x, k, axis=-1, largest=int(ctx.attrs["largest"]), sorted=1, outputs=2)
    return values, indices


# -- contractions ---------------------------------------------------------------------------


def dot_general(ctx, lhs, rhs):
    a = ctx.attrs
    lt, rt = ctx.in_types
    lc, rc, lb, rb = a["lhs_contracting_dims"], a["rhs_contracting_dims"], a["lhs_batch_dims"], a["rhs_batch_dims"]
    lf = tuple(i for i in range(lt.rank) if i not in lc + lb)
    rf = tuple(i for i in range(rt.rank) if i not in rc + rb)
    batch = [lt.shape[i] for i in lb]
    free_l, contract = tuple(lt.shape[i] for i in lf), tuple(lt.shape[i] for i in lc)
    free_r = tuple(rt.shape[i] for i in rf)
    # [*batch, F, C] @ [*batch, C, G] -> [*batch, F, G]
    lhs = reshape_to(ctx, transpose_to(ctx, lhs, lb + lf + lc), [*batch, free_l, contract],
                     [*batch, *free_l, *contract])
    rhs = reshape_to(ctx, transpose_to(ctx, rhs, rb + rc + rf), [*batch, contract, free_r],
                     [*batch, *contract, *free_r])
    out = ctx.op("MatMul", lhs, rhs)
    if len(free_l) == 1 and len(free_r) == 1:
        return out
    return ctx.op("Reshape", out, ctx.em.shape(ctx.out.shape), allowzero=1)


def convolution(ctx, lhs, rhs):
    a = ctx.attrs
    lt = ctx.in_types[0]
    if 0 in ctx.out.shape:
        return ctx.full(0, ctx.out)
    zero = ctx.scalar(0)
    x, shape = interior_pad(ctx, lhs, list(lt.shape), [0, 0] + [d - 1 for d in a["lhs_dilation"]], zero)
    spatial = range(2, lt.rank)
    crops = [(max(-lo, 0), max(-hi, 0)) for lo, hi in a["padding"]]
    if any(c != (0, 0) for c in crops):  # Conv pads must be >= 0: crop first
        x = ctx.op("Slice", x, ctx.em.ints([lo for lo, _ in crops]),
                   ctx.em.ints([shape[d] - hi for d, (_, hi) in zip(spatial, crops)]), ctx.em.ints(list(spatial)))
    pads = [max(lo, 0) for lo, _ in a["padding"]] + [max(hi, 0) for _, hi in a["padding"]]
    return ctx.op("Conv", x, rhs, strides=list(a["window_strides"]), dilations=list(a["rhs_dilation"]),
                  group=a["feature_group_count"], pads=pads)


# -- windows ----------------------------------------------------------------------------------


def gather_windows(ctx, x: str, shape, window, strides, dilations) -> tuple[str, list[int], list[int]]:
    """Every window of ``x`` as new axes: dim d becomes (positions, window) where the window
    is not trivial. Returns the tensor, the window axes and the new (static) shape."""
    dims: list[list[int]] = [[n] for n in shape]
    for d in reversed(range(len(shape))):  # last to first: earlier axes keep their position
        w, s, dl = window[d], strides[d], dilations[d]
        if w == 1 and s == 1:
            continue
        out = windowed_size(shape[d], w, s, (0, 0), dl)
        index = np.arange(out)[:, None] * s + np.arange(w)[None, :] * dl
        x = ctx.op("Gather", x, ctx.em.const(index.astype(np.int64)), axis=d)
        dims[d] = [out, w]
    axes, new_shape = [], []
    for group in dims:
        new_shape += group
        if len(group) == 2:
            axes.append(len(new_shape) - 1)
    return x, axes, new_shape


def reduce_window(ctx, x):
    a = ctx.attrs
    t = ctx.in_types[0]
    # the IR's type rule keeps windows off symbolic dims: one (a batch) passes through Pad and the Gathers
    is_max = a["kind"] == "max"
    fill = ctx.scalar(lowest(ctx.ir_dtype) if is_max else 0)
    pads = [lo for lo, _ in a["padding"]] + [hi for _, hi in a["padding"]]
    if any(pads):
        x = ctx.op("Pad", x, ctx.em.ints(pads), fill)  # negative amounts crop
    shape = [n + lo + hi for n, (lo, hi) in zip(t.shape, a["padding"])]
    x, axes, shape = gather_windows(ctx, x, shape, a["window_dimensions"], a["window_strides"],
                                    a["window_dilations"])
    if not axes:
        return ctx.op("Identity", x)
    if is_max:
        return _nan_propagating(ctx, "ReduceMax", x, axes, ctx.dtype)
    if ctx.dtype.is_float:
        return _reduce(ctx, "ReduceSum", x, axes)  # no +0.0: the reference sums windows from their first term
    return _fold_by_scan(ctx, "CumSum", x, shape, axes, 0)


RULES = {
    "reduce_sum": _reducer("ReduceSum"), "reduce_prod": _reducer("ReduceProd"),
    "reduce_max": _reducer("ReduceMax"), "reduce_min": _reducer("ReduceMin"),
    "reduce_and": _boolean("ReduceMin"), "reduce_or": _boolean("ReduceMax"),
    "argmax": _arg("ArgMax"), "argmin": _arg("ArgMin"),
    "cumsum": _native_scan("CumSum"), "cumprod": _native_scan("CumProd"),
    "cummax": _extreme_scan("Max", lowest), "cummin": _extreme_scan("Min", highest),
    "sort": sort, "top_k": top_k, "dot_general": dot_general, "convolution": convolution,
    "reduce_window": reduce_window,
}
