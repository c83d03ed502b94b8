"""Norms and distances: ``linalg_vector_norm``, ``_cdist_forward`` and its backward, ``_pdist_forward``.

A p-norm is written with primitives by its definition; the special orders are torch's:
0 counts nonzeros, inf / -inf are the max / min of |x|, 1 and 2 avoid ``pow``.

Example: ``torch.linalg.vector_norm(x, 3, dim=1)`` becomes
``pow(reduce_sum(pow(abs(x), 3), axes=(1,)), 1/3)``.
"""

from __future__ import annotations

import math

import numpy as np

from ..context import TranslationContext, unsupported


def p_norm(ctx: TranslationContext, x, p: float, axes: tuple[int, ...]):
    """||x||_p over ``axes`` (removed), in x's float dtype."""
    b, dtype = ctx.b, x.type.dtype
    out_shape = tuple(s for d, s in enumerate(x.type.shape) if d not in axes)
    if p == 0:
        nonzero = ctx.convert(b.ne(x, ctx.full(0, dtype, x.type.shape)), dtype)
        return b.reduce_sum(nonzero, axes=axes)
    mag = b.abs(x)
    if p == math.inf:
        return b.reduce_max(mag, axes=axes)
    if p == -math.inf:
        return b.reduce_min(mag, axes=axes)
    if p == 1:
        return b.reduce_sum(mag, axes=axes)
    if p == 2:
        return b.sqrt(b.reduce_sum(b.mul(x, x), axes=axes))
    powered = b.pow(mag, ctx.full(p, dtype, x.type.shape))
    return b.pow(b.reduce_sum(powered, axes=axes), ctx.full(1.0 / p, dtype, out_shape))


def vector_norm(ctx: TranslationContext, x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """torch.linalg.vector_norm: every ord torch accepts (0, ±inf, any other real)."""
    out = ctx.out
    if not out.dtype.is_float:
        unsupported(f"vector_norm with result dtype {out.dtype.short}")
    axes = ctx.axes(dim, x.type.rank)
    x = ctx.convert(x, out.dtype)
    if x.type.rank == 0:
        x, axes = ctx.reshape(x, (1,)), (0,)
    return ctx.reshape(p_norm(ctx, x, float(ord), axes), out.shape)


def _uses_matmul(p: float, rows: int, cols: int, compute_mode) -> bool:
    """torch's choice for p = 2: the matmul form for more than 25 rows or columns (mode 0/None) or always (1)."""
    if p != 2 or compute_mode == 2:
        return False
    return compute_mode == 1 or rows > 25 or cols > 25


def cdist(ctx: TranslationContext, x1, x2, p, compute_mode=None):
    """Distances between rows: x1 [*B, P, M], x2 [*B, R, M] -> [*B, P, R], as torch computes them."""
    out = ctx.out
    x1, x2 = ctx.convert(x1, out.dtype), ctx.convert(x2, out.dtype)
    batch, rows, cols, m = tuple(out.shape[:-2]), out.shape[-2], out.shape[-1], x1.type.shape[-1]
    x1 = ctx.broadcast(x1, (*batch, rows, m))
    x2 = ctx.broadcast(x2, (*batch, cols, m))
    if _uses_matmul(float(p), rows, cols, compute_mode):
        return _euclid_matmul(ctx, x1, x2)
    return p_norm(ctx, _differences(ctx, x1, x2), float(p), (len(batch) + 2,))


def _differences(ctx: TranslationContext, x1, x2):
    """x1[..., i, :] - x2[..., j, :] for every pair: [*B, P, M] and [*B, R, M] -> [*B, P, R, M]."""
    nb = x1.type.rank - 2
    wide = (*x1.type.shape[:-1], x2.type.shape[-2], x1.type.shape[-1])
    a = ctx.b.broadcast_in_dim(x1, shape=wide, broadcast_dimensions=(*range(nb), nb, nb + 2))
    c = ctx.b.broadcast_in_dim(x2, shape=wide, broadcast_dimensions=(*range(nb), nb + 1, nb + 2))
    return ctx.b.sub(a, c)


def cdist_backward(ctx: TranslationContext, grad, x1, x2, p, dist):
    """x1's gradient of ``cdist`` (x2's is the same op with the roles swapped): torch's per-pair
    terms summed over x2's rows, 0 where a distance is 0. [*B, P, M] in the broadcast batch
    (autograd sums it back to x1's own shape)."""
    b, out, p = ctx.b, ctx.out, float(p)
    batch, m = tuple(out.shape[:-2]), out.shape[-1]
    x1 = ctx.broadcast(ctx.convert(x1, out.dtype), out.shape)
    x2 = ctx.broadcast(ctx.convert(x2, out.dtype), (*batch, x2.type.shape[-2], m))
    diff = _differences(ctx, x1, x2)
    wide, nb = diff.type.shape, len(batch)

    def pairs(t):  # [*B, P, R] -> [*B, P, R, M]
        t = ctx.broadcast(ctx.convert(t, out.dtype), wide[:-1])
        return b.broadcast_in_dim(t, shape=wide, broadcast_dimensions=tuple(range(nb + 2)))

    g, d = pairs(grad), pairs(dist)
    zero = ctx.full(0, out.dtype, wide)
    if p == 0:
        return ctx.full(0, out.dtype, out.shape)
    if p == 1:
        term = b.mul(b.sign(diff), g)
    elif p == math.inf:
        term = b.mul(b.mul(b.sign(diff), ctx.convert(b.eq(b.abs(diff), d), out.dtype)), g)
    else:
        if p == 2:
            term = b.div(b.mul(diff, g), d)
        elif p < 2:
            power = b.pow(b.abs(diff), ctx.full(p - 1, out.dtype, wide))
            term = b.div(b.mul(b.mul(b.sign(diff), power), g), b.pow(d, ctx.full(p - 1, out.dtype, wide)))
        else:
            power = b.pow(b.abs(diff), ctx.full(p - 2, out.dtype, wide))
            term = b.div(b.mul(b.mul(diff, power), g), b.pow(d, ctx.full(p - 1, out.dtype, wide)))
        vanishes = b.eq(d, zero)
        if p < 1:  # |diff|^(p - 1) is infinite at diff = 0: torch takes 0
            vanishes = b.logical_or(vanishes, b.eq(diff, zero))
        term = b.select(vanishes, zero, term)
    return b.reduce_sum(term, axes=(nb + 1,))


def _euclid_matmul(ctx: TranslationContext, x1, x2):
    """torch's ``_euclidean_dist``: sqrt(max([-2·x1, |x1|², 1] @ [x2, 1, |x2|²]ᵀ, 0))."""
    b, dtype = ctx.b, x1.type.dtype
    nb = x1.type.rank - 2

    def squared_norms(x):
        sq = b.reduce_sum(b.mul(x, x), axes=(nb + 1,))
        return ctx.reshape(sq, (*x.type.shape[:-1], 1))

    ones1 = ctx.full(1, dtype, (*x1.type.shape[:-1], 1))
    ones2 = ctx.full(1, dtype, (*x2.type.shape[:-1], 1))
    left = b.concatenate(b.mul(x1, ctx.full(-2, dtype, x1.type.shape)), squared_norms(x1), ones1, dimension=nb + 1)
    right = b.concatenate(x2, ones2, squared_norms(x2), dimension=nb + 1)
    batch = tuple(range(nb))
    product = b.dot_general(left, right, lhs_contracting_dims=(nb + 1,), rhs_contracting_dims=(nb + 1,),
                            lhs_batch_dims=batch, rhs_batch_dims=batch)
    return b.sqrt(b.max(product, ctx.full(0, dtype, product.type.shape)))


def pdist(ctx: TranslationContext, x, p=2):
    """Distances between all pairs i < j of rows of x [N, M], in torch's row-major pair order."""
    n, m = x.type.shape
    first, second = np.triu_indices(n, k=1)
    if first.size == 0:
        return ctx.full(0, ctx.out.dtype, (0,))
    x = ctx.convert(x, ctx.out.dtype)

    def rows(index):
        positions = ctx.b.constant(np.broadcast_to(index[:, None], (index.size, m)).astype(np.int64))
        return ctx.b.gather(x, positions, axis=0)

    return p_norm(ctx, ctx.b.sub(rows(first), rows(second)), float(p), (1,))


TABLE = {
    "linalg_vector_norm.default": vector_norm,
    "_cdist_forward.default": cdist,
    "_cdist_backward.default": cdist_backward,
    "_pdist_forward.default": pdist,
}
