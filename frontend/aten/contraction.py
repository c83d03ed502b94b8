"""Contraction aten ops: mm, bmm, mv, dot, addmm, matmul, linear, and the grouped
matmul of mixture-of-experts layers (``_grouped_mm``).
"""

from __future__ import annotations

from ...ir.dtypes import DType
from ..translate import TranslationContext, unsupported


def _dot(ctx: TranslationContext, a, b, contract, batch=((), ())):
    return ctx.b.dot_general(a, b, lhs_contracting_dims=contract[0], rhs_contracting_dims=contract[1],
                             lhs_batch_dims=batch[0], rhs_batch_dims=batch[1])


def mm(ctx: TranslationContext, a, b):
    return _dot(ctx, a, b, ((1,), (0,)))


def bmm(ctx: TranslationContext, a, b):
    return _dot(ctx, a, b, ((2,), (1,)), ((0,), (0,)))


def mv(ctx: TranslationContext, a, b):
    return _dot(ctx, a, b, ((1,), (0,)))


def dot(ctx: TranslationContext, a, b):
    return _dot(ctx, a, b, ((0,), (0,)))


def addmm(ctx: TranslationContext, bias, a, b, *, beta=1, alpha=1):
    out = ctx.out
    product = mm(ctx, a, b)
    if alpha != 1:
        product = ctx.b.mul(product, ctx.full(alpha, out.dtype, out.shape))
    if beta == 0:
        return product
    bias = ctx.broadcast(ctx.convert(bias, out.dtype), out.shape)
    if beta != 1:
        bias = ctx.b.mul(bias, ctx.full(beta, out.dtype, out.shape))
    return ctx.b.add(bias, product)


def matmul(ctx: TranslationContext, a, b):
    return ctx.b.matmul(a, b)


def linear(ctx: TranslationContext, x, w, bias=None):
    if bias is None:
        bias = ctx.full(0, x.type.dtype, (w.type.shape[0],))
    return ctx.b.linear(x, w, bias)



def grouped_mm(ctx: TranslationContext, a, b, offs=None, bias=None, out_dtype=None):
    """torch's grouped matmul; ``offs`` (int32, cumulative) splits the 2-d operand's grouped dim.

    - a [S, K], b [G, K, N] (MoE experts): row s uses expert g(s) = #{offsets <= s};
    - a [K, S], b [S, N] (its weight gradient): out[g] = a[:, rows of g] @ b[rows of g];
    - a [G, M, K], b [K, N]: column n uses a[g(n)];
    - a [G, M, K], b [G, K, N] (no offs): bmm.

    Rows (columns) past ``offs[-1]`` belong to no group: they are zeros (torch leaves them
    unwritten). Every group's product is computed and the row's own is selected, so a
    NaN in one expert never reaches another's rows (G times the flops of one matmul).

    Example: offs = [2, 5] sends rows 0-1 of a [6, K] to b[0], rows 2-4 to b[1], row 5 to zeros.
    """
    if bias is not None:
        unsupported("_grouped_mm with a bias (torch does not support it either)")
    out = ctx.out
    a, b = ctx.convert(a, out.dtype), ctx.convert(b, out.dtype)
    if a.type.rank == 3 and b.type.rank == 3:
        return bmm(ctx, a, b)
    if offs is None:
        unsupported("_grouped_mm of a 2-d operand needs offs")
    dot = ctx.b.dot_general
    if a.type.rank == 2 and b.type.rank == 3:  # [S, G, N]: every row times every expert
        every = dot(a, b, lhs_contracting_dims=(1,), rhs_contracting_dims=(1,), lhs_batch_dims=(), rhs_batch_dims=())
        return _pick_group(ctx, every, offs, group_axis=1, row_axis=0)
    if a.type.rank == 3:  # [G, M, N]: every expert times every column
        every = dot(a, b, lhs_contracting_dims=(2,), rhs_contracting_dims=(0,), lhs_batch_dims=(), rhs_batch_dims=())
        return _pick_group(ctx, every, offs, group_axis=0, row_axis=2)
    return _grouped_outer(ctx, a, b, offs)


def _group_of(ctx: TranslationContext, offs, n: int):
    """i64[n]: the group of each position, #{offsets <= i} (G for positions past the last offset)."""
    groups = offs.type.shape[0]
    positions = ctx.b.iota(dtype=DType.int64, shape=(n, groups), dimension=0)
    bounds = ctx.b.broadcast_in_dim(ctx.convert(offs, DType.int64), shape=(n, groups), broadcast_dimensions=(1,))
    return ctx.b.reduce_sum(ctx.convert(ctx.b.le(bounds, positions), DType.int64), axes=(1,))


def _pick_group(ctx: TranslationContext, every, offs, group_axis: int, row_axis: int):
    """From per-group results ``every``, each row's own group (zeros past the last offset)."""
    b, shape = ctx.b, every.type.shape
    groups, rows = shape[group_axis], shape[row_axis]
    group = _group_of(ctx, offs, rows)
    picked_shape = tuple(1 if d == group_axis else s for d, s in enumerate(shape))
    out_shape = tuple(s for d, s in enumerate(shape) if d != group_axis)
    clamped = b.min(group, ctx.full(groups - 1, DType.int64, (rows,)))
    index = b.broadcast_in_dim(clamped, shape=picked_shape, broadcast_dimensions=(row_axis,))
    picked = ctx.reshape(b.gather(every, index, axis=group_axis), out_shape)
    kept = b.lt(group, ctx.full(groups, DType.int64, (rows,)))
    out_row_axis = row_axis - (row_axis > group_axis)
    kept = b.broadcast_in_dim(kept, shape=out_shape, broadcast_dimensions=(out_row_axis,))
    return b.select(kept, picked, ctx.full(0, every.type.dtype, out_shape))


def _grouped_outer(ctx: TranslationContext, a, c, offs):
    """a [K, S], c [S, N] -> [G, K, N]: each group's rows of the contraction, the others zeroed in both."""
    b = ctx.b
    (k, s), n, groups = a.type.shape, c.type.shape[1], offs.type.shape[0]
    group = _group_of(ctx, offs, s)
    member = b.eq(b.broadcast_in_dim(group, shape=(groups, s), broadcast_dimensions=(1,)),
                  b.iota(dtype=DType.int64, shape=(groups, s), dimension=0))
    a_g = b.select(b.broadcast_in_dim(member, shape=(groups, k, s), broadcast_dimensions=(0, 2)),
                   b.broadcast_in_dim(a, shape=(groups, k, s), broadcast_dimensions=(1, 2)),
                   ctx.full(0, a.type.dtype, (groups, k, s)))
    c_g = b.select(b.broadcast_in_dim(member, shape=(groups, s, n), broadcast_dimensions=(0, 1)),
                   b.broadcast_in_dim(c, shape=(groups, s, n), broadcast_dimensions=(1, 2)),
                   ctx.full(0, c.type.dtype, (groups, s, n)))
    return bmm(ctx, a_g, c_g)


TABLE = {
    "mm.default": mm, "bmm.default": bmm, "mv.default": mv, "dot.default": dot, "addmm.default": addmm,
    "matmul.default": matmul, "linear.default": linear,
    "_grouped_mm.default": grouped_mm,
}
