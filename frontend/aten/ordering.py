"""Order statistics, running extremes and searches in sorted sequences: ``kthvalue``,
``median(dim)``, ``cummax``/``cummin`` with their indices, ``searchsorted`` and ``bucketize``.

Each is exact in the IR (a sort, a scan, gathers and compares), with torch's NaN rules: NaN
sorts after every number, so it is the largest for ``kthvalue`` and the median of a line that
holds one; the searches take torch's binary-search steps, so a searched NaN lands last.

Example::

    >>> import torch
    >>> from torch.fx.experimental.proxy_tensor import make_fx
    >>> from parity.frontend.translate import fx_to_ir
    >>> gm = make_fx(lambda s, v: torch.searchsorted(s, v))(torch.arange(4.0), torch.ones(3))
    >>> sorted({n.op for n in fx_to_ir(gm).graph.nodes} & {"gather", "ge"})
    ['gather', 'ge']
"""

from __future__ import annotations

import math

from ...ir.dtypes import DType
from ..context import TranslationContext, unsupported


def _pick(ctx: TranslationContext, values, indices, axis: int, position, value_shape=None, index_shape=None):
    """values and indices at ``position`` (an int, or an i64 tensor of the other dims) along ``axis``,
    in torch's result shapes (``value_shape``, ``index_shape``: the op's own outputs by default)."""
    shape = list(values.type.shape)
    shape[axis] = 1
    if isinstance(position, int):
        where = ctx.full(position, DType.int64, shape)
    else:
        where = ctx.reshape(position, shape)
    if value_shape is None:
        value_shape, index_shape = ctx.out_type(0).shape, ctx.out_type(1).shape
    picked = ctx.reshape(ctx.b.gather(values, where, axis=axis), value_shape)
    if index_shape is None:  # a value alone (the median of everything)
        return picked, None
    return picked, ctx.reshape(ctx.b.gather(indices, where, axis=axis), index_shape)


def kthvalue(ctx: TranslationContext, x, k, dim=-1, keepdim=False):
    """The k-th smallest along ``dim`` (k from 1) and its index: the stable ascending sort's."""
    if x.type.rank == 0:
        return x, ctx.full(0, DType.int64, ())
    axis = ctx.axis(dim, x.type.rank)
    values, indices = ctx.b.sort(x, axis=axis, descending=False)
    return _pick(ctx, values, indices, axis, k - 1)


def median_dim(ctx: TranslationContext, x, dim=0, keepdim=False):
    """The lower median along ``dim`` and its index; a line holding NaN gives its first NaN (torch's rule)."""
    if x.type.rank == 0:
        return x, ctx.full(0, DType.int64, ())
    return _median(ctx, x, ctx.axis(dim, x.type.rank), ctx.out_type(0).shape, ctx.out_type(1).shape)


def _median(ctx: TranslationContext, x, axis: int, value_shape, index_shape):
    n = x.type.shape[axis]
    if not isinstance(n, int):
        unsupported(f"median over the symbolic size {n}")
    values, indices = ctx.b.sort(x, axis=axis, descending=False)
    if not x.type.dtype.is_float:
        return _pick(ctx, values, indices, axis, (n - 1) // 2, value_shape, index_shape)
    # NaN sorts last and stably: the first NaN of the line sits at n - (its NaN count)
    nans = ctx.b.reduce_sum(ctx.convert(ctx.b.is_nan(x), DType.int64), axes=(axis,))
    rest = nans.type.shape
    position = ctx.b.select(ctx.b.gt(nans, ctx.full(0, DType.int64, rest)),
                            ctx.b.sub(ctx.full(n, DType.int64, rest), nans), ctx.full((n - 1) // 2, DType.int64, rest))
    return _pick(ctx, values, indices, axis, position, value_shape, index_shape)


def median_all(ctx: TranslationContext, x):
    """torch.median(x) without a dim: the lower median of every element (NaN if one is NaN)."""
    return _median(ctx, ctx.reshape(x, (math.prod(x.type.shape),)), 0, ctx.out.shape, None)[0]


def _running(scan: str):
    def translate(ctx: TranslationContext, x, dim):
        """Running extreme and the index where it was last reached (ties and NaN move the index on, as in torch)."""
        if x.type.rank == 0:
            return x, ctx.full(0, DType.int64, ())
        b, axis, shape = ctx.b, ctx.axis(dim, x.type.rank), x.type.shape
        values = b.op(scan, x, axis=axis)
        # x[i] equal to the running extreme at i is a new extreme (or a tie): the latest such i is the index
        reached = b.eq(x, values)
        if x.type.dtype.is_float:
            reached = b.logical_or(reached, b.is_nan(x))
        at = b.select(reached, b.iota(dtype=DType.int64, shape=shape, dimension=axis), ctx.full(0, DType.int64, shape))
        return values, b.cummax(at, axis=axis)

    return translate


def _search(ctx: TranslationContext, seq, values, right: bool, sorter=None):
    """torch's binary search (``cus_lower_bound`` / ``cus_upper_bound``) run for every value at
    once: bit_length(n) halvings of [start, end), each a gather of the middle element. The same
    steps as torch give the same answer, for a sequence holding NaN or one that is not sorted too.
    A value goes right of the middle where ``!(mid >= v)`` (``right``: ``!(mid > v)``): NaN goes last.
    """
    b, i64 = ctx.b, DType.int64
    dtype, _ = ctx.promote(seq, values)
    seq, values = ctx.convert(seq, dtype), ctx.value(values, dtype)
    axis = seq.type.rank - 1
    if sorter is not None:
        seq = b.gather(seq, ctx.convert(sorter, i64), axis=axis)
    n = seq.type.shape[-1]
    if not isinstance(n, int):
        unsupported(f"searchsorted in a sequence of symbolic length {n}")
    if seq.type.rank == 1:  # one sequence for every value
        values = ctx.reshape(values, (math.prod(values.type.shape),))
    shape = values.type.shape
    start, end = ctx.full(0, i64, shape), ctx.full(n, i64, shape)
    one, last = ctx.full(1, i64, shape), ctx.full(max(n - 1, 0), i64, shape)
    for _ in range(n.bit_length()):
        active = b.lt(start, end)
        mid = b.add(start, b.div(b.sub(end, start), ctx.full(2, i64, shape)))
        middle = b.gather(seq, b.min(mid, last), axis=axis)
        go_right = b.logical_not(b.gt(middle, values) if right else b.ge(middle, values))
        start = b.select(b.logical_and(active, go_right), b.add(mid, one), start)
        end = b.select(b.logical_and(active, b.logical_not(go_right)), mid, end)
    return ctx.convert(ctx.reshape(start, ctx.out.shape), ctx.out.dtype)


def searchsorted(ctx: TranslationContext, seq, values, *, out_int32=False, right=False, side=None, sorter=None):
    return _search(ctx, seq, values, bool(right) or side == "right", sorter)


def bucketize(ctx: TranslationContext, values, boundaries, *, out_int32=False, right=False):
    return _search(ctx, boundaries, values, bool(right))


TABLE = {
    "kthvalue.default": kthvalue,
    "median.dim": median_dim,
    "median.default": median_all,
    "cummax.default": _running("cummax"),
    "cummin.default": _running("cummin"),
    "searchsorted.Tensor": searchsorted,
    "searchsorted.Scalar": searchsorted,
    "bucketize.Tensor": bucketize,
    "bucketize.Scalar": bucketize,
}
