"""Embedding aten ops: embedding and its dense backward, embedding bags and their backward."""

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
    if mode == _MAX:
        max_indices = ctx.convert(chosen, max_type.dtype)
    elif mode == _MEAN:  # the bag sizes, bags long (torch's meta kernel) even where bag_size is offsets-sized
        max_indices = ctx.convert(sizes, max_type.dtype) if max_type.shape == (bags,) else bag_size
    else:
        max_indices = ctx.full(0, max_type.dtype, max_type.shape)
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


def _bag_members(ctx: TranslationContext, indices, offsets, offset2bag, bags: int, padding_idx):
    """(weight row, bag clipped into range, counts) per index: counts is False for a padding_idx
    row and for an index past the last bag, which the forward skipped. torch's forward leaves
    offset2bag empty where its backward needs none (sum mode): the bags come from the offsets then."""
    b, i64 = ctx.b, DType.int64
    count = indices.type.shape[0]
    idx = ctx.convert(indices, i64)
    if offset2bag.type.shape == (count,):
        bag = ctx.convert(offset2bag, i64)
    else:
        bag = b.sub(_positions_past(ctx, offsets, count), ctx.full(1, i64, (count,)))
    counts = b.lt(bag, ctx.full(bags, i64, (count,)))
    if padding_idx is not None and padding_idx >= 0:
        counts = b.logical_and(counts, b.ne(idx, ctx.full(padding_idx, i64, (count,))))
    return idx, b.select(counts, bag, ctx.full(0, i64, (count,))), counts


def embedding_bag_backward(ctx: TranslationContext, grad, indices, offsets, offset2bag, bag_size, maximum_indices,
                           num_weights, scale_grad_by_freq, mode, sparse, per_sample_weights, padding_idx=-1):
    """The weight's gradient of ``embedding_bag`` (dense): each counted index adds its bag's
    gradient to its weight row (over the bag's size in mean mode, times its per-sample weight);
    in max mode each nonempty bag's gradient goes to the row its maximum came from."""
    if scale_grad_by_freq:
        unsupported("embedding_bag backward with scale_grad_by_freq=True")
    b, i64 = ctx.b, DType.int64
    (bags, dim), count, dtype = grad.type.shape, indices.type.shape[0], grad.type.dtype
    if not all(isinstance(d, int) for d in (bags, dim, count, num_weights)):
        unsupported("embedding_bag backward with symbolic sizes")
    zeros = ctx.full(0, dtype, (num_weights, dim))
    if mode == _MAX:
        nonempty = b.broadcast_in_dim(b.gt(ctx.convert(bag_size, i64), ctx.full(0, i64, bag_size.type.shape)),
                                      shape=(bags, dim), broadcast_dimensions=(0,)) if bag_size.type.shape == (bags,) \
            else ctx.full(True, DType.bool, (bags, dim))
        rows = b.select(nonempty, ctx.convert(maximum_indices, i64), ctx.full(0, i64, (bags, dim)))
        return b.scatter(zeros, rows, b.select(nonempty, grad, ctx.full(0, dtype, (bags, dim))), axis=0, reduce="add")
    idx, bag, counts = _bag_members(ctx, indices, offsets, offset2bag, bags, padding_idx)
    wide = (count, dim)
    picked = b.gather(grad, b.broadcast_in_dim(bag, shape=wide, broadcast_dimensions=(0,)), axis=0)
    if mode == _MEAN:
        size = b.gather(ctx.convert(bag_size, i64), bag, axis=0)
        size = ctx.convert(b.max(size, ctx.full(1, i64, (count,))), dtype)
        picked = b.div(picked, b.broadcast_in_dim(size, shape=wide, broadcast_dimensions=(0,)))
    if per_sample_weights is not None:
        scale = ctx.convert(per_sample_weights, dtype)
        picked = b.mul(picked, b.broadcast_in_dim(scale, shape=wide, broadcast_dimensions=(0,)))
    picked = b.select(b.broadcast_in_dim(counts, shape=wide, broadcast_dimensions=(0,)), picked, ctx.full(0, dtype, wide))
    return b.scatter(zeros, b.broadcast_in_dim(idx, shape=wide, broadcast_dimensions=(0,)), picked, axis=0, reduce="add")


def embedding_bag_per_sample_weights_backward(ctx: TranslationContext, grad, weight, indices, offsets, offset2bag,
                                              mode, padding_idx=-1):
    """Each per-sample weight's gradient (sum mode): its bag's gradient dotted with its weight row, 0 where not counted."""
    b = ctx.b
    (bags, dim), count = grad.type.shape, indices.type.shape[0]
    idx, bag, counts = _bag_members(ctx, indices, offsets, offset2bag, bags, padding_idx)
    wide = (count, dim)
    rows = b.gather(weight, b.broadcast_in_dim(idx, shape=wide, broadcast_dimensions=(0,)), axis=0)
    picked = b.gather(grad, b.broadcast_in_dim(bag, shape=wide, broadcast_dimensions=(0,)), axis=0)
    dots = b.reduce_sum(b.mul(ctx.convert(rows, grad.type.dtype), picked), axes=(1,))
    return ctx.convert(b.select(counts, dots, ctx.full(0, dots.type.dtype, (count,))), ctx.out.dtype)


TABLE = {
    "_embedding_bag_backward.default": embedding_bag_backward,
    "_embedding_bag_per_sample_weights_backward.default": embedding_bag_per_sample_weights_backward,
    "embedding.default": embedding,
    "embedding_dense_backward.default": embedding_dense_backward,
    "_embedding_bag.default": embedding_bag,
    "_embedding_bag_forward_only.default": embedding_bag,
}
