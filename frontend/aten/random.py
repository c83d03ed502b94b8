"""Random aten ops translated to the IR's explicit-key random composites.

Each random op gets its own key, an extra graph input (u32[2]) drawn per call from
torch's default generator (see docs/frontend.md), so ``torch.manual_seed`` makes a
compiled function reproducible. The bits are threefry (the IR's ``random_bits``), so
the numbers differ from eager torch's, but are identical on every parity backend.
"""

from __future__ import annotations

from ...ir.dtypes import DType
from ..context import TranslationContext, unsupported


def _uniform(ctx: TranslationContext, shape, dtype: DType, low: float = 0.0, high: float = 1.0):
    return ctx.b.uniform(ctx.new_key(), shape=tuple(shape), dtype=dtype, low=float(low), high=float(high))


def rand(ctx: TranslationContext, *_args, **_kwargs):
    out = ctx.out
    return _uniform(ctx, out.shape, out.dtype)


def randn(ctx: TranslationContext, *_args, **_kwargs):
    out = ctx.out
    return ctx.b.normal(ctx.new_key(), shape=tuple(out.shape), dtype=out.dtype)


def uniform(ctx: TranslationContext, x, low=0.0, high=1.0, *, generator=None):
    return _uniform(ctx, ctx.out.shape, ctx.out.dtype, low, high)


def native_dropout(ctx: TranslationContext, x, p, train):
    """(x * keep / (1 - p), keep) with keep ~ Bernoulli(1 - p); identity when not training."""
    shape, dtype = x.type.shape, x.type.dtype
    if train is False or p == 0:
        return x, ctx.full(True, DType.bool, shape)
    if p >= 1:
        return ctx.full(0, dtype, shape), ctx.full(False, DType.bool, shape)
    u = _uniform(ctx, shape, DType.float32)
    keep = ctx.b.lt(u, ctx.full(1.0 - p, DType.float32, shape))
    scaled = ctx.b.mul(x, ctx.full(1.0 / (1.0 - p), dtype, shape))
    return ctx.b.select(keep, scaled, ctx.full(0, dtype, shape)), keep


def _exponential(ctx: TranslationContext, shape, dtype: DType):
    """-log(1 - u), u uniform in [0, 1): Exp(1) noise, finite and >= 0."""
    return ctx.b.neg(ctx.b.log1p(ctx.b.neg(_uniform(ctx, shape, dtype))))


def exponential(ctx: TranslationContext, x, lambd=1.0, *, generator=None):
    """Exp(lambd) noise, as torch's finite and >= 0 (drawn in float32 at least); gumbel_softmax's noise."""
    shape, dtype = ctx.out.shape, ctx.out.dtype
    wide = dtype if dtype in (DType.float32, DType.float64) else DType.float32
    drawn = _exponential(ctx, shape, wide)
    if lambd != 1:
        drawn = ctx.b.div(drawn, ctx.full(float(lambd), wide, shape))
    return ctx.convert(drawn, dtype)


def multinomial(ctx: TranslationContext, p, num_samples, replacement=False, *, generator=None):
    """Class indices drawn with probabilities proportional to the rows of ``p`` (1-d or 2-d):
    the largest p / E with E ~ Exp(1) per class is a draw (the exponential race), and the k
    largest are k draws without replacement; with replacement each sample races on its own
    noise. A class of probability 0 is never drawn (its key is -1, below every other).

    Example: p = [0, 1, 3] draws class 2 three times out of four, class 0 never.
    """
    b, f32 = ctx.b, DType.float32
    wide = p.type.dtype if p.type.dtype is DType.float64 else f32
    rows = p.type.shape[0] if p.type.rank == 2 else 1
    n = p.type.shape[-1]
    p = ctx.reshape(ctx.convert(p, wide), (rows, 1, n))
    races = (rows, num_samples if replacement else 1, n)
    p = b.broadcast_in_dim(p, shape=races, broadcast_dimensions=(0, 1, 2))
    keys = b.select(b.gt(p, ctx.full(0, wide, races)), b.div(p, _exponential(ctx, races, wide)),
                    ctx.full(-1, wide, races))
    if replacement:
        drawn = b.argmax(keys, axis=2)
    else:
        _, drawn = b.top_k(ctx.reshape(keys, (rows, n)), k=num_samples, largest=True)
    return ctx.convert(ctx.reshape(drawn, ctx.out.shape), ctx.out.dtype)


def bernoulli(ctx: TranslationContext, x, p=None, *, generator=None):
    """1 with probability p (a float, or the tensor x itself for bernoulli.default)."""
    shape = ctx.out.shape
    u = _uniform(ctx, shape, DType.float64)
    prob = ctx.broadcast(ctx.value(x if p is None else p, DType.float64), shape)
    return ctx.convert(ctx.b.lt(u, prob), ctx.out.dtype)


def randint(ctx: TranslationContext, *args, **_kwargs):
    """low + floor(u * (high - low)) from a float64 uniform (exact for ranges below 2**52)."""
    numbers = [a for a in args if isinstance(a, int)]
    low, high = (0, numbers[0]) if len(args) == 2 or len(numbers) == 1 else (numbers[0], numbers[1])
    if high - low >= 2**52:
        unsupported("randint with a range of 2**52 or more")
    out = ctx.out
    u = _uniform(ctx, out.shape, DType.float64)
    span = ctx.b.floor(ctx.b.mul(u, ctx.full(high - low, DType.float64, out.shape)))
    return ctx.convert(ctx.b.add(span, ctx.full(low, DType.float64, out.shape)), out.dtype)


def randperm(ctx: TranslationContext, n, **_kwargs):
    """The order that sorts n random 32-bit words: a uniform permutation (ties keep index order).

    Not torch's permutation for the same seed (another generator), but the same on every backend.
    """
    out = ctx.out
    if n == 0:
        return ctx.full(0, out.dtype, (0,))
    words = ctx.convert(ctx.b.random_bits(ctx.new_key(), shape=(n,)), DType.int64)
    _, order = ctx.b.sort(words, axis=0)
    return ctx.convert(order, out.dtype)


TABLE = {
    "rand.default": rand,
    "randn.default": randn,
    "rand_like.default": rand,
    "randn_like.default": randn,
    "uniform.default": uniform,
    "native_dropout.default": native_dropout,
    "exponential.default": exponential,
    "multinomial.default": multinomial,
    "bernoulli.p": bernoulli,
    "bernoulli.default": bernoulli,
    "randint.default": randint,
    "randint.low": randint,
    "randperm.default": randperm,
    "randperm.generator": randperm,
}
