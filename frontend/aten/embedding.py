"""Embedding aten ops: embedding and its dense backward, embedding bags."""

from __future__ import annotations

import math

from ...ir.dtypes import DType
from ..context import TranslationContext, unsupported


def embedding(ctx: TranslationContext, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return ctx.b.embedding(weight, indices)


def embedding_dense_backward(ctx: TranslationContext, grad, indices, num_weights, padding_idx, scale_grad_by_freq):
    if scale_grad_by_freq:
        unsupported("embedding backward with scale_grad_by_freq=True")
    dim = grad.type.shape[-1]
    count = math.prod(indices.type.shape) if indices.type.is_static else unsupported("symbolic embedding indices")
    flat_idx = ctx.reshape(ctx.convert(indices, DType.int64), (count,))
    flat_grad = ctx.reshape(grad, (count, dim))
    if padding_idx is not None and padding_idx >= 0:
        keep = ctx.b.ne(flat_idx, ctx.full(padding_idx, DType.int64, (count,)))
        keep = ctx.b.broadcast_in_dim(keep, shape=(count, dim), broadcast_dimensions=(0,))
        flat_grad = ctx.b.select(keep, flat_grad, ctx.full(0, grad.type.dtype, (count, dim)))
    index = ctx.b.broadcast_in_dim(flat_idx, shape=(count, dim), broadcast_dimensions=(0,))
    zeros = ctx.full(0, grad.type.dtype, (num_weights, dim))
    return ctx.b.scatter(zeros, index, flat_grad, axis=0, reduce="add")



_SUM, _MEAN, _MAX = 0, 1, 2


def embedding_bag(ctx: TranslationContext, weight, indices, offsets, scale_grad_by_freq=False, mode=_SUM, sparse=False,
                  per_sample_weights=None, include_last_offset=False, padding_idx=-1):
    """Sums, means or maxima of the weight rows of each bag; bag b holds indices offsets[b]:offsets[b+1].

    Index i is in bag #{offsets <= i} - 1; a ``padding_idx`` row counts for nothing; an empty
    bag gives zeros. The extra results follow torch's CPU kernel: offset2bag (each index's
    bag), bag_size (0 in sum mode), max_indices (the chosen weight row in max mode, bag_size
    in mean mode, 0 in sum mode).

    Example: indices [1, 2, 4], offsets [0, 2], mode sum: [w1 + w2, w4].
    """
    b, i64 = ctx.b, DType.int64
    count, dim = indices.type.shape[0], weight.type.shape[1]
    bags = ctx.out_type(0).shape[0]
    if not all(isinstance(d, int) for d in (count, dim, bags)):
        unsupported("embedding_bag with symbolic sizes")
    idx = ctx.convert(indices, i64)
    bag = b.sub(_positions_past(ctx, offsets, count), ctx.full(1, i64, (count,)))
    if include_last_offset:  # torch's CPU kernel puts indices past the last offset in the last bag
        bag = b.min(bag, ctx.full(bags - 1, i64, (count,)))
    valid = b.lt(bag, ctx.full(bags, i64, (count,)))
    if padding_idx is not None and padding_idx >= 0:
        valid = b.logical_and(valid, b.ne(idx, ctx.full(padding_idx, i64, (count,))))
    rows = b.gather(weight, b.broadcast_in_dim(idx, shape=(count, dim), broadcast_dimensions=(0,)), axis=0)
    if per_sample_weights is not None:
        scale = ctx.convert(per_sample_weights, weight.type.dtype)
        rows = b.mul(rows, b.broadcast_in_dim(scale, shape=(count, dim), broadcast_dimensions=(0,)))
    slot = b.select(valid, bag, ctx.full(bags, i64, (count,)))  # bags: a dump slot for skipped indices
    sizes = _bag_sum(ctx, ctx.convert(valid, i64), slot, bags)
    if mode == _MAX:
        output, chosen = _bag_max(ctx, rows, idx, bag, valid, bags)
    else:
        spread = b.broadcast_in_dim(slot, shape=(count, dim), broadcast_dimensions=(0,))
        output = _bag_sum(ctx, rows, spread, bags)
        if mode == _MEAN:
            output = _divide_nonempty(ctx, output, sizes)
    offset2bag = ctx.convert(bag, ctx.out_type(1).dtype) if ctx.out_type(1).shape == (count,) else \
        ctx.full(0, ctx.out_type(1).dtype, ctx.out_type(1).shape)
    int_type, size_len = ctx.out_type(2).dtype, ctx.out_type(2).shape[0]
    bag_size = ctx.full(0, int_type, (bags,)) if mode == _SUM else ctx.convert(sizes, int_type)
    if size_len > bags:  # _embedding_bag_forward_only: offsets-sized, the extra entries 0
        bag_size = b.pad(bag_size, ctx.const(0, int_type), edge_padding_low=(0,),
                         edge_padding_high=(size_len - bags,), interior_padding=(0,))
    max_type = ctx.out_type(3)
    max_indices = ctx.convert(chosen, max_type.dtype) if mode == _MAX else (
        bag_size if mode == _MEAN else ctx.full(0, max_type.dtype, max_type.shape))
    return output, offset2bag, bag_size, ctx.reshape(max_indices, max_type.shape)


def _positions_past(ctx: TranslationContext, offsets, count: int):
    """For each index position i, #{offsets <= i}."""
    n = offsets.type.shape[0]
    positions = ctx.b.iota(dtype=DType.int64, shape=(count, n), dimension=0)
    bounds = ctx.b.broadcast_in_dim(ctx.convert(offsets, DType.int64), shape=(count, n), broadcast_dimensions=(1,))
    return ctx.b.reduce_sum(ctx.convert(ctx.b.le(bounds, positions), DType.int64), axes=(1,))


def _bag_sum(ctx: TranslationContext, values, slot, bags: int):
    """Scatter-add ``values`` (first dim: indices) into bags + 1 slots and drop the dump slot."""
    shape = (bags + 1, *values.type.shape[1:])
    total = ctx.b.scatter(ctx.full(0, values.type.dtype, shape), slot, values, axis=0, reduce="add")
    limits = (bags, *values.type.shape[1:])
    return ctx.b.slice(total, start_indices=(0,) * len(shape), limit_indices=limits, strides=(1,) * len(shape))


def _divide_nonempty(ctx: TranslationContext, sums, sizes):
    shape = sums.type.shape
    sizes = ctx.b.broadcast_in_dim(sizes, shape=shape, broadcast_dimensions=(0,))
    nonempty = ctx.b.gt(sizes, ctx.full(0, DType.int64, shape))
    quotient = ctx.b.div(sums, ctx.convert(ctx.b.max(sizes, ctx.full(1, DType.int64, shape)), sums.type.dtype))
    return ctx.b.select(nonempty, quotient, ctx.full(0, sums.type.dtype, shape))


def _bag_max(ctx: TranslationContext, rows, idx, bag, valid, bags: int):
    """Per bag and feature: the largest member row value and that row's weight index (0 if empty)."""
    b = ctx.b
    count, dim = rows.type.shape
    wide = (bags, count, dim)
    member = b.logical_and(b.eq(b.broadcast_in_dim(bag, shape=(bags, count), broadcast_dimensions=(1,)),
                                b.iota(dtype=DType.int64, shape=(bags, count), dimension=0)),
                           b.broadcast_in_dim(valid, shape=(bags, count), broadcast_dimensions=(1,)))
    member = b.broadcast_in_dim(member, shape=wide, broadcast_dimensions=(0, 1))
    lowest = ctx.full(-math.inf, rows.type.dtype, wide)
    candidates = b.select(member, b.broadcast_in_dim(rows, shape=wide, broadcast_dimensions=(1, 2)), lowest)
    which = b.argmax(candidates, axis=1)  # [bags, dim]: position in indices
    any_member = b.reduce_or(member, axes=(1,))
    values = b.select(any_member, b.reduce_max(candidates, axes=(1,)), ctx.full(0, rows.type.dtype, (bags, dim)))
    chosen = b.gather(b.broadcast_in_dim(idx, shape=(count, dim), broadcast_dimensions=(0,)), which, axis=0) \
        if count else ctx.full(0, DType.int64, (bags, dim))
    return values, b.select(any_member, chosen, ctx.full(0, DType.int64, (bags, dim)))


TABLE = {
    "embedding.default": embedding,
    "embedding_dense_backward.default": embedding_dense_backward,
    "_embedding_bag.default": embedding_bag,
    "_embedding_bag_forward_only.default": embedding_bag,
}
