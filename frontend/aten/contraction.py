"""Contraction aten ops: mm, bmm, mv, dot, addmm, matmul, linear, and the grouped
matmul of mixture-of-experts layers (``_grouped_mm``).
"""

from __future__ import annotations

from ..translate import Lowering


def _dot(ctx: Lowering, a, b, contract, batch=((), ())):
    return ctx.b.dot_general(a, b, lhs_contracting_dims=contract[0], rhs_contracting_dims=contract[1],
                             lhs_batch_dims=batch[0], rhs_batch_dims=batch[1])


def mm(ctx: Lowering, a, b):
    return _dot(ctx, a, b, ((1,), (0,)))


def bmm(ctx: Lowering, a, b):
    return _dot(ctx, a, b, ((2,), (1,)), ((0,), (0,)))


def mv(ctx: Lowering, a, b):
    return _dot(ctx, a, b, ((1,), (0,)))


def dot(ctx: Lowering, a, b):
    return _dot(ctx, a, b, ((0,), (0,)))


def addmm(ctx: Lowering, bias, a, b, *, beta=1, alpha=1):
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


def matmul(ctx: Lowering, a, b):
    return ctx.b.matmul(a, b)


def linear(ctx: Lowering, x, w, bias=None):
    if bias is None:
        bias = ctx.full(0, x.type.dtype, (w.type.shape[0],))
    return ctx.b.linear(x, w, bias)


TABLE = {
    "mm.default": mm, "bmm.default": bmm, "mv.default": mv, "dot.default": dot, "addmm.default": addmm,
    "matmul.default": matmul, "linear.default": linear,
}
