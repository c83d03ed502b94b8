"""Elementwise rules: lax functions whose semantics are the IR's, and the ops where they are not.

Most unary and binary ops map to one ``lax`` function (:data:`UNARY`, :data:`BINARY`);
the rest have a rule each that states what the IR's semantics need beyond lax's
defaults (NaN, signed zeros, subnormals under DAZ, or accuracy XLA's expansion lacks).

Example::

    >>> import numpy as np
    >>> from parity.ir import f32
    >>> from .context import XlaNodeContext
    >>> ctx = XlaNodeContext({}, (f32[2],), (f32[2],))
    >>> np.asarray(RULES["trunc"](ctx, np.array([-0.5, 1.5], np.float32))).tolist()
    [-0.0, 1.0]
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from jax import lax

from .context import Rule

UNARY = {
    "neg": lax.neg, "abs": lax.abs, "sign": lax.sign,
    "exp": lax.exp, "expm1": lax.expm1, "log": lax.log,
    "sqrt": lax.sqrt, "rsqrt": lax.rsqrt, "sin": lax.sin, "cos": lax.cos, "tan": lax.tan,
    "acos": lax.acos, "atan": lax.atan,
    "asinh": lax.asinh, "acosh": lax.acosh,
    "floor": lax.floor, "ceil": lax.ceil, "logistic": lax.logistic,
    "is_finite": lax.is_finite, "logical_not": lax.bitwise_not, "bitwise_not": lax.bitwise_not,
}

# Integer div/rem truncate like C (lax.div/rem); max/min propagate NaN elementwise (with
# fast min/max off, see backend.COMPILER_OPTIONS); shifts by >= the width give 0 / sign.
BINARY = {
    "add": lax.add, "sub": lax.sub, "mul": lax.mul, "rem": lax.rem,
    "max": lax.max, "min": lax.min,
    "eq": lax.eq, "ne": lax.ne, "lt": lax.lt, "le": lax.le, "gt": lax.gt, "ge": lax.ge,
    "logical_and": lax.bitwise_and, "logical_or": lax.bitwise_or, "logical_xor": lax.bitwise_xor,
    "bitwise_and": lax.bitwise_and, "bitwise_or": lax.bitwise_or, "bitwise_xor": lax.bitwise_xor,
    "shift_left": lax.shift_left, "shift_right_logical": lax.shift_right_logical,
}


def elementwise_rule(fn: Callable) -> Rule:
    """The rule of an op that is the lax function ``fn`` of its operands."""

    def rule(ctx, *args):
        return fn(*args)

    return rule



def _exp2(ctx, x):
    # XLA's exp2 is exp(x * ln 2), whose rounded product costs |x| ulps (671 in f64). Split
    # x = n + f with n integral: 2**f is accurate for |f| <= 0.5, and 2**n is exact, applied
    # in two halves so that neither overflows before the product does.
    n = lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)
    n = lax.clamp(lax.full_like(x, -2200), n, lax.full_like(x, 2200))
    frac = lax.exp(lax.mul(lax.sub(x, n), lax.full_like(x, math.log(2))))
    half = lax.floor(lax.mul(n, lax.full_like(x, 0.5)))
    scaled = lax.mul(lax.mul(frac, _pow2(half)), _pow2(lax.sub(n, half)))
    return lax.select(lax.eq(lax.abs(x), lax.full_like(x, np.inf)), lax.exp(x), scaled)


def _pow2(k):
    """2**k for integral float k in [-1100, 1100], built from exponent bits (0 below normal)."""
    kind = {np.dtype(np.float64): (np.int64, 52, 1023), np.dtype(np.float32): (np.int32, 23, 127)}
    ints, shift, bias = kind[np.dtype(k.dtype)]
    biased = lax.clamp(np.array(0, ints), lax.add(lax.convert_element_type(k, ints), np.array(bias, ints)),
                       np.array(2 * bias, ints))
    return lax.bitcast_convert_type(lax.shift_left(biased, np.array(shift, ints)), k.dtype)


def _is_f64(x) -> bool:
    return np.dtype(x.dtype) == np.float64


def _log1p(ctx, x):
    # XLA's f64 log1p loses 128 ulp near -0.41. Goldberg: log(u) * x / (u - 1) with u = 1 + x
    # cancels u's rounding error (u == 1: x itself, keeping -0.0; u = inf: inf). The barrier
    # stops XLA's simplifier from folding (1 + x) - 1 to x, which would undo the correction.
    if not _is_f64(x):
        return lax.log1p(x)
    one = lax.full_like(x, 1)
    u = lax.optimization_barrier(lax.add(one, x))
    goldberg = lax.mul(lax.log(u), lax.div(x, lax.sub(u, one)))
    return lax.select(lax.eq(u, one), x, lax.select(lax.eq(u, lax.full_like(x, np.inf)), u, goldberg))


def _atanh(ctx, x):
    # fdlibm's form on |x| over the accurate log1p (XLA's f64 atanh inherits its log1p's 128 ulp).
    if not _is_f64(x):
        return lax.atanh(x)
    a = lax.abs(x)
    two_a, one_minus = lax.add(a, a), lax.sub(lax.full_like(x, 1), a)
    small = lax.add(two_a, lax.div(lax.mul(two_a, a), one_minus))  # |x| < 0.5: 2a + 2a²/(1 - a)
    arg = lax.select(lax.lt(a, lax.full_like(x, 0.5)), small, lax.div(two_a, one_minus))
    y = lax.mul(lax.full_like(x, 0.5), _log1p(ctx, arg))
    return lax.select(lax.ne(x, x), x, _copysign(y, x))


def _copysign(magnitude, sign):
    bits = np.uint64 if _is_f64(magnitude) else np.uint32
    high = np.array(1 << (np.dtype(bits).itemsize * 8 - 1), bits)
    m = lax.bitwise_and(lax.bitcast_convert_type(magnitude, bits), lax.bitwise_not(high))
    return lax.bitcast_convert_type(lax.bitwise_or(m, lax.bitwise_and(lax.bitcast_convert_type(sign, bits), high)),
                                    magnitude.dtype)


# sinh(x) = x + x·z·P(z), z = x²: P's coefficients 1/3!, 1/5!, ..., 1/21!, highest first.
_SINH_TAYLOR = tuple(1 / math.factorial(k) for k in range(21, 2, -2))


def _hyperbolic(name: str) -> Rule:
    """f64 sinh/cosh/tanh from exp and expm1 of |x| (fdlibm's forms), sign restored.

    XLA's f64 sinh/cosh use exp(|x| + log 0.5), whose rounded sum costs ~|x| ulps (15 at 18,
    495 at 635), and its tanh reaches 6 ulp near 19. Above 20, e^-|x| is below half an ulp
    and sinh = cosh = (e/2)·e with e = exp(|x|/2): exact halving, and no overflow before the
    result's own. sinh: (t + t/(t + 1))/2 with t = expm1(|x|) on [1, 20], its Taylor series below
    (XLA's reaches 5 ulp near 0.24); tanh: 1 - 2/(e^2|x| + 1) from 0.55 on (no cancellation),
    XLA's own below (within 4 ulp there).
    """
    native = {"sinh": lax.sinh, "cosh": lax.cosh, "tanh": lax.tanh}[name]

    def rule(ctx, x):
        if not _is_f64(x):
            return native(x)
        a = lax.abs(x)
        c = lambda v: lax.full_like(x, v)  # noqa: E731 - a constant of x's type
        if name == "tanh":
            big = lax.sub(c(1), lax.div(c(2), lax.add(lax.exp(lax.add(a, a)), c(1))))
            y = lax.select(lax.ge(a, c(0.55)), big, lax.abs(native(x)))
        else:
            e = lax.exp(lax.mul(a, c(0.5)))
            large = lax.mul(lax.mul(e, c(0.5)), e)
            if name == "sinh":
                t = lax.expm1(a)
                mid = lax.mul(c(0.5), lax.add(t, lax.div(t, lax.add(t, c(1)))))
            else:
                ea = lax.exp(a)
                mid = lax.mul(c(0.5), lax.add(ea, lax.div(c(1), ea)))
            y = lax.select(lax.gt(a, c(20)), large, mid)
            if name == "sinh":  # below 1: Taylor to x**21 (the rest is < 2**-65 relative)
                z = lax.mul(a, a)
                series = c(_SINH_TAYLOR[0])
                for coef in _SINH_TAYLOR[1:]:
                    series = lax.add(lax.mul(series, z), c(coef))
                y = lax.select(lax.lt(a, c(1)), lax.add(a, lax.mul(lax.mul(a, z), series)), y)
        return y if name == "cosh" else lax.select(lax.ne(x, x), x, _copysign(y, x))

    return rule


def _flushed(x):
    """Subnormals as signed zeros, spelled out: what the CPU's DAZ does to arithmetic inputs,
    for the XLA expansions that read the exponent bits instead (and so miss it)."""
    tiny = np.finfo(x.dtype).tiny
    return lax.select(lax.lt(lax.abs(x), lax.full_like(x, tiny)), lax.mul(x, lax.full_like(x, 0)), x)


def _pow(ctx, x, y):
    # XLA's pow splits x by its exponent bits: a subnormal base gives garbage (pow(2**-126 - 2**-149,
    # 0.5) = 2.6e-23, not 1.08e-19, nor 0 as DAZ would say), and pow(0, -2**-149) = inf where
    # DAZ reads the exponent as 0 (result 1). Flushed first, both give what DAZ does.
    return lax.pow(_flushed(x), _flushed(y))


def _atan2(ctx, y, x):
    # Two subnormals gave NaN (f32) and y subnormal over x subnormal π/2 (f64): flushed, both
    # are atan2 of zeros, as everywhere else under DAZ.
    return lax.atan2(_flushed(y), _flushed(x))


def _asin(ctx, x):
    # XLA's asin flushes a tiny intermediate: asin(2**-126) came out 0. Below √ε, asin(x) = x
    # to within x²/6 < ε/6.
    small = lax.lt(lax.abs(x), lax.full_like(x, math.sqrt(np.finfo(x.dtype).eps)))
    return lax.select(small, x, lax.asin(x))


def _erf(ctx, x):
    # XLA's f32 erf reaches 5.6 ulp near ±3.72 (its polynomial's tail); 1 - erfc(|x|) above 1
    # has no cancellation (erfc < 0.16) and stays within 3.5 ulp overall, at no extra cost
    # (f64 erf would be 4x slower).
    if np.dtype(x.dtype) != np.float32:
        return lax.erf(x)
    a = lax.abs(x)
    tail = lax.sub(lax.full_like(x, 1), lax.erfc(a))
    tail = lax.select(lax.lt(x, lax.full_like(x, 0)), lax.neg(tail), tail)
    return lax.select(lax.gt(a, lax.full_like(x, 1)), tail, lax.erf(x))


def _div(ctx, x, y):
    # XLA's simplifier turns a / broadcast(b) into a * broadcast(1 / b), whatever the options
    # (1.1 ulp in f16, ~25% of f32/f64 quotients off by one ulp, measured); the barrier hides
    # the divisor's producer so the quotient stays correctly rounded. The dividend goes through
    # the barrier too: else (1 / c) / y is reassociated into 1 / (c * y), skipping the rounding
    # of the first quotient (fuzz regression xla-div-f32-9c4b15ff: logistic then div, 1.003 ULP).
    if ctx.out.dtype.is_float or ctx.out.dtype.is_complex:
        x, y = lax.optimization_barrier((x, y))
    if ctx.out.dtype.is_complex:
        return _smith_div(x, y)
    return lax.div(x, y)


def _smith_div(x, y):
    """x / y by Smith's algorithm: XLA divides by |y|², which overflows past |y| = 2**64 in
    c64 (2**512 in c128) and gives NaN for finite quotients. Dividing by the larger part of
    y first keeps every intermediate within the quotient's range."""
    a, b, c, d = lax.real(x), lax.imag(x), lax.real(y), lax.imag(y)
    wide = lax.ge(lax.abs(c), lax.abs(d))  # |c| >= |d|: r = d/c, else r = c/d
    r = lax.div(lax.select(wide, d, c), lax.select(wide, c, d))
    den = lax.add(lax.select(wide, c, d), lax.mul(lax.select(wide, d, c), r))
    re = lax.select(wide, lax.add(a, lax.mul(b, r)), lax.add(lax.mul(a, r), b))
    im = lax.select(wide, lax.sub(b, lax.mul(a, r)), lax.sub(lax.mul(b, r), a))
    return lax.complex(lax.div(re, den), lax.div(im, den))


def _shift_right_arithmetic(ctx, x, y):
    # Unsigned values have no sign to fill with: the IR's arithmetic shift is the logical one.
    fn = lax.shift_right_logical if ctx.in_types[0].dtype.is_unsigned else lax.shift_right_arithmetic
    return fn(x, y)


def _round(ctx, x):
    return lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)


def _trunc(ctx, x):
    # ceil for negatives keeps -0.0 (trunc(-0.5) = -0.0); NaN passes through either branch.
    return lax.select(lax.lt(x, lax.full_like(x, 0)), lax.ceil(x), lax.floor(x))


def _log2(ctx, x):
    # log(x) / ln 2 (as jnp.log2): measured within the contract in f32/f64; f16/bf16 widen.
    return lax.div(lax.log(x), lax.full_like(x, math.log(2)))


def _reciprocal(ctx, x):
    # Through _div's barrier: else XLA folds 1 / (a / b) into b / a and 1 / exp(u) into
    # exp(-u), skipping the rounding of x (fuzz regression xla-reciprocal-f32: 1.09 ULP).
    return _div(ctx, lax.full_like(x, 1), x)


def _is_nan(ctx, x):
    return lax.ne(x, x)


def _is_inf(ctx, x):
    return lax.eq(lax.abs(x), lax.full_like(x, np.inf))


def _clamp(ctx, lo, x, hi):
    return lax.min(lax.max(x, lo), hi)  # IR: min(max(x, lo), hi), NaN from any operand


def _select(ctx, pred, on_true, on_false):
    return lax.select(pred, on_true, on_false)

RULES: dict[str, Rule] = {
    **{name: elementwise_rule(fn) for name, fn in {**UNARY, **BINARY}.items()},
    "round": _round, "trunc": _trunc, "exp2": _exp2, "log2": _log2, "log1p": _log1p, "atanh": _atanh,
    "sinh": _hyperbolic("sinh"), "cosh": _hyperbolic("cosh"), "tanh": _hyperbolic("tanh"), "div": _div,
    "pow": _pow, "atan2": _atan2, "asin": _asin, "erf": _erf, "reciprocal": _reciprocal,
    "is_nan": _is_nan, "is_inf": _is_inf, "shift_right_arithmetic": _shift_right_arithmetic,
    "select": _select, "clamp": _clamp,
}
