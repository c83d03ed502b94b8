"""``torch.linalg.matrix_exp`` (``orthogonal`` parametrization's default map), forward and
backward (torch's backward is a matrix exponential of a block matrix, so one translation serves
both), from matmuls: scaling and squaring around a Taylor polynomial.

For each matrix A of the batch, s = clamp(ceil(log2 ||A||_1), 0, MAX_SQUARINGS) (computed in the
graph, per call), X = A / 2**s (so ||X||_1 <= 1), exp(X) by Horner's rule on the degree-18
Taylor polynomial (truncation below 1/19! ~ 8e-18 of the result), then squared s times. The
squarings are MAX_SQUARINGS matmuls each selected by i < s, since the IR has no data-dependent
loop: exact to float rounding for ||A||_1 <= 2**MAX_SQUARINGS.

Example: ``torch.linalg.matrix_exp(torch.zeros(2, 2))`` is the identity: s = 0, X = 0, P = I.
"""

from __future__ import annotations

from ...ir.dtypes import DType
from ..context import TranslationContext, unsupported

DEGREE = 18
MAX_SQUARINGS = 32


def _matmul(ctx: TranslationContext, x, y):
    rank = x.type.rank
    batch = tuple(range(rank - 2))
    return ctx.b.dot_general(x, y, lhs_contracting_dims=(rank - 1,), rhs_contracting_dims=(rank - 2,),
                             lhs_batch_dims=batch, rhs_batch_dims=batch)


def matrix_exp(ctx: TranslationContext, a):
    b, t = ctx.b, a.type
    if t.dtype not in (DType.float32, DType.float64):
        unsupported(f"matrix_exp of {t.dtype.short}: float32 and float64 only")
    rank, shape = t.rank, t.shape
    batch = tuple(range(rank - 2))
    # ||A||_1 (the largest column sum of |A|) per matrix, and the squarings it needs
    norm = b.reduce_max(b.reduce_sum(b.abs(a), axes=(rank - 2,)), axes=(rank - 2,))
    squarings = b.max(b.ceil(b.log2(norm)), ctx.full(0, t.dtype, norm.type.shape))
    squarings = b.min(squarings, ctx.full(MAX_SQUARINGS, t.dtype, norm.type.shape))
    spread = b.broadcast_in_dim(squarings, shape=shape, broadcast_dimensions=batch)
    x = b.mul(a, b.exp2(b.neg(spread)))
    rows = b.iota(dtype=DType.int64, shape=shape, dimension=rank - 2)
    eye = ctx.convert(b.eq(rows, b.iota(dtype=DType.int64, shape=shape, dimension=rank - 1)), t.dtype)
    p = b.add(eye, b.div(x, ctx.full(DEGREE, t.dtype, shape)))
    for k in range(DEGREE - 1, 0, -1):  # I + X/k (I + X/(k+1) (...)): Horner's rule
        p = b.add(eye, b.div(_matmul(ctx, x, p), ctx.full(k, t.dtype, shape)))
    for i in range(MAX_SQUARINGS):
        p = b.select(b.lt(ctx.full(i, t.dtype, shape), spread), _matmul(ctx, p, p), p)
    return p


TABLE = {"linalg_matrix_exp.default": matrix_exp}
