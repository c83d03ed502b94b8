"""Reductions, scans, softmax and sorting aten ops.

Integer and bool inputs are converted to torch's result dtype before reducing (torch
sums them as int64); ``keepdim`` is a reshape to torch's result shape.
"""

from __future__ import annotations

import math

from ...ir.dims import DimExpr
from ...ir.dtypes import DType
from ..context import TranslationContext, unsupported


def _reduce(op: str):
    def translate(ctx: TranslationContext, x, dim=None, keepdim=False, *, dtype=None):
        out = ctx.out
        axes = ctx.axes(dim, x.type.rank)
        x = ctx.convert(x, out.dtype)
        if x.type.dtype.is_bool and op in ("reduce_max", "reduce_min", "reduce_sum", "reduce_prod"):
            op_bool = "reduce_or" if op in ("reduce_max", "reduce_sum") else "reduce_and"
            return ctx.reshape(ctx.b.op(op_bool, x, axes=axes), out.shape)
        return ctx.reshape(ctx.b.op(op, x, axes=axes), out.shape)

    return translate


def _logical_reduce(op: str):
    def translate(ctx: TranslationContext, x, dim=None, keepdim=False):
        axes = ctx.axes(dim, x.type.rank)
        result = ctx.b.op(op, ctx.convert(x, DType.bool), axes=axes)
        return ctx.convert(ctx.reshape(result, ctx.out.shape), ctx.out.dtype)

    return translate


def mean(ctx: TranslationContext, x, dim=None, keepdim=False, *, dtype=None):
    out = ctx.out
    axes = ctx.axes(dim, x.type.rank)
    return ctx.reshape(ctx.b.mean(ctx.convert(x, out.dtype), axes=axes), out.shape)


def _var(op: str):
    def translate(ctx: TranslationContext, x, dim=None, unbiased=None, keepdim=False, *, correction=None, **_kw):
        if isinstance(unbiased, bool) or unbiased is None:
            correction = (1 if unbiased in (None, True) else 0) if correction is None else correction
        if correction != int(correction):
            unsupported(f"fractional correction {correction}")
        axes = ctx.axes(dim, x.type.rank)
        result = ctx.b.op(op, ctx.convert(x, ctx.out.dtype), axes=axes, correction=int(correction))
        return ctx.reshape(result, ctx.out.shape)

    return translate


def _value_and_index(reduce_op: str, arg_op: str):
    def translate(ctx: TranslationContext, x, dim, keepdim=False):
        axis = ctx.axis(dim, x.type.rank)
        if x.type.rank == 0:
            return x, ctx.full(0, DType.int64, ())
        values = ctx.b.op(reduce_op, x, axes=(axis,))
        index = ctx.b.op(arg_op, x, axis=axis)
        return ctx.reshape(values, ctx.out_type(0).shape), ctx.reshape(index, ctx.out_type(1).shape)

    return translate


def _arg(arg_op: str):
    def translate(ctx: TranslationContext, x, dim=None, keepdim=False):
        if dim is None or x.type.rank == 0:
            x, axis = ctx.reshape(x, (_numel(ctx, x),)), 0
        else:
            axis = ctx.axis(dim, x.type.rank)
        return ctx.reshape(ctx.b.op(arg_op, x, axis=axis), ctx.out.shape)

    return translate


def _numel(ctx: TranslationContext, x) -> int | DimExpr:
    """x's element count: an int, or the product of its dims (B*S) when some are symbolic."""
    return math.prod(x.type.shape)


def _scan(op: str):
    def translate(ctx: TranslationContext, x, dim, *, dtype=None):
        x = ctx.convert(x, ctx.out.dtype)
        if x.type.rank == 0:
            return x
        return ctx.b.op(op, x, axis=ctx.axis(dim, x.type.rank))

    return translate


def _softmax(op: str):
    def translate(ctx: TranslationContext, x, dim, half_to_float=False):
        x = ctx.convert(x, ctx.out.dtype)
        if x.type.rank == 0:
            return ctx.full(0.0 if op == "log_softmax" else 1.0, x.type.dtype, ())
        return ctx.b.op(op, x, axis=ctx.axis(dim, x.type.rank))

    return translate


def softmax_backward(ctx: TranslationContext, grad, out, dim, input_dtype):
    """d softmax: out * (grad - sum(grad * out, dim))."""
    b, axis = ctx.b, ctx.axis(dim, grad.type.rank)
    grad, out = ctx.convert(grad, ctx.out.dtype), ctx.convert(out, ctx.out.dtype)
    dot = _keep_sum(ctx, b.mul(grad, out), axis)
    return b.mul(out, b.sub(grad, dot))


def log_softmax_backward(ctx: TranslationContext, grad, out, dim, input_dtype):
    """d log_softmax: grad - exp(out) * sum(grad, dim)."""
    b, axis = ctx.b, ctx.axis(dim, grad.type.rank)
    grad, out = ctx.convert(grad, ctx.out.dtype), ctx.convert(out, ctx.out.dtype)
    return b.sub(grad, b.mul(b.exp(out), _keep_sum(ctx, grad, axis)))


def _keep_sum(ctx: TranslationContext, x, axis: int):
    shape = x.type.shape
    total = ctx.b.reduce_sum(x, axes=(axis,))
    return ctx.b.broadcast_in_dim(total, shape=shape, broadcast_dimensions=tuple(d for d in range(len(shape)) if d != axis))


def logsumexp(ctx: TranslationContext, x, dim, keepdim=False):
    axes = ctx.axes(dim, x.type.rank)
    return ctx.reshape(ctx.b.logsumexp(ctx.convert(x, ctx.out.dtype), axes=axes), ctx.out.shape)


def sort(ctx: TranslationContext, x, dim=-1, descending=False, *, stable=None):
    if x.type.rank == 0:
        return x, ctx.full(0, DType.int64, ())
    return ctx.b.sort(x, axis=ctx.axis(dim, x.type.rank), descending=bool(descending))


def sort_stable(ctx: TranslationContext, x, *, stable=None, dim=-1, descending=False):
    return sort(ctx, x, dim, descending)


def topk(ctx: TranslationContext, x, k, dim=-1, largest=True, sorted=True):
    rank = x.type.rank
    if rank == 0:  # torch: a 0-d tensor is its own top-1, at index 0
        return x, ctx.full(0, DType.int64, ())
    axis = ctx.axis(dim, rank)
    if axis != rank - 1:
        perm = [d for d in range(rank) if d != axis] + [axis]
        inverse = [perm.index(d) for d in range(rank)]
        values, indices = ctx.b.top_k(ctx.b.transpose(x, permutation=perm), k=k, largest=bool(largest))
        return (ctx.b.transpose(values, permutation=inverse), ctx.b.transpose(indices, permutation=inverse))
    return ctx.b.top_k(x, k=k, largest=bool(largest))


def histc(ctx: TranslationContext, x, bins=100, min=0, max=0):
    """Counts of x in ``bins`` equal bins of [min, max], computed as torch's CPU kernel does.

    bin = trunc((x - lo) * bins / (hi - lo)) in x's dtype (the last bin takes hi too);
    elements outside [lo, hi] and NaN are not counted. min == max means the data's range
    (widened by 1 each way if that is one value too).

    Example: ``histc([0., 1., 1., 3.], bins=3, min=0, max=3)`` is ``[1., 2., 1.]``.
    """
    b, dtype = ctx.b, ctx.out.dtype
    if not dtype.is_float:
        unsupported(f"histc of {dtype.short} (torch takes floats only)")
    x = ctx.reshape(ctx.convert(x, dtype), (_numel(ctx, x),))
    lo, hi = ctx.const(min, dtype), ctx.const(max, dtype)
    if min == max:
        if x.type.shape[0] == 0:
            return ctx.full(0, dtype, (bins,))
        lo, hi = b.reduce_min(x, axes=(0,)), b.reduce_max(x, axes=(0,))
        same = b.eq(lo, hi)
        lo = b.select(same, b.sub(lo, ctx.const(1, dtype)), lo)
        hi = b.select(same, b.add(hi, ctx.const(1, dtype)), hi)
    shape = x.type.shape
    lo, hi = ctx.broadcast(lo, shape), ctx.broadcast(hi, shape)
    scaled = b.div(b.mul(b.sub(x, lo), ctx.full(bins, dtype, shape)), b.sub(hi, lo))
    inside = b.logical_and(b.ge(x, lo), b.le(x, hi))
    # an element outside the range goes to an extra bin (bins), dropped at the end
    safe = b.select(inside, scaled, ctx.full(0, dtype, shape))
    index = b.min(ctx.convert(safe, DType.int64), ctx.full(bins - 1, DType.int64, shape))
    index = b.select(inside, index, ctx.full(bins, DType.int64, shape))
    counts = b.scatter(ctx.full(0, dtype, (bins + 1,)), index, ctx.full(1, dtype, shape), axis=0, reduce="add")
    return b.slice(counts, start_indices=(0,), limit_indices=(bins,), strides=(1,))


def _table():
    table = {
        "sum.dim_IntList": _reduce("reduce_sum"), "sum.default": _reduce("reduce_sum"),
        "prod.default": _reduce("reduce_prod"), "prod.dim_int": _reduce("reduce_prod"),
        "amax.default": _reduce("reduce_max"), "amin.default": _reduce("reduce_min"),
        "max.default": _reduce("reduce_max"), "min.default": _reduce("reduce_min"),
        "any.default": _logical_reduce("reduce_or"), "any.dim": _logical_reduce("reduce_or"),
        "any.dims": _logical_reduce("reduce_or"), "all.default": _logical_reduce("reduce_and"),
        "all.dim": _logical_reduce("reduce_and"), "all.dims": _logical_reduce("reduce_and"),
        "mean.default": mean, "mean.dim": mean,
        "var.correction": _var("var"), "var.dim": _var("var"), "var.default": _var("var"),
        "std.correction": _var("std"), "std.dim": _var("std"), "std.default": _var("std"),
        "max.dim": _value_and_index("reduce_max", "argmax"), "min.dim": _value_and_index("reduce_min", "argmin"),
        "argmax.default": _arg("argmax"), "argmin.default": _arg("argmin"),
        "cumsum.default": _scan("cumsum"), "cumprod.default": _scan("cumprod"),
        "_softmax.default": _softmax("softmax"), "_log_softmax.default": _softmax("log_softmax"),
        "_softmax_backward_data.default": softmax_backward,
        "_log_softmax_backward_data.default": log_softmax_backward,
        "logsumexp.default": logsumexp,
        "histc.default": histc,
        "sort.default": sort, "sort.stable": sort_stable, "topk.default": topk,
    }
    return table


TABLE = _table()
