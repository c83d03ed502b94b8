"""Elementwise rules: one table row per op, most of them a torch function applied as is.

:data:`UNARY` and :data:`BINARY` map an op to the torch function whose semantics are the
IR's (docs/ir.md); :func:`_table_rule` makes each a rule. Where torch's differ, the
op has a rule of its own below, and its comment says what differs:

- integer ``div``/``rem``: torch truncates as C does, but ``x / 0`` and ``INT_MIN / -1``
  trap in the generated C++ (SIGFPE); the IR defines both;
- ``sign`` keeps -0.0 and NaN; ``logistic`` uses the IR's two-branch formula (torch's
  ``1 / (1 + exp(-x))`` loses the relative accuracy of tiny results);
- ``shift_right_logical`` of signed integers (torch shifts arithmetically);
- ``expm1``, ``acosh``, ``atanh``: Inductor's kernels lose tiny results or overflow
  (measured: expm1(-1.5e-33) = 0, acosh(1e22) = inf, atanh(8e-28) = 0 in float32), so
  they are written with accurate formulas from exp, log, log1p and sqrt;
- ``convert`` and ``bitcast_convert`` go through the ``u32``-in-int64 carrier.

Ops in :data:`IN_FLOAT64` run in float64 and round once for the narrower float dtypes:
Inductor's vectorized float32 kernel for them is outside the contract. ``erf`` in float32
has a formula of float32 kernels instead (:data:`FLOAT32_FORMULAS`): float64 is slow there.
"""

from __future__ import annotations

import math

import torch

from ...ir.dtypes import DType
from .context import FLOAT_BITS, U32_MASK, InductorNodeContext, carried

UNARY = {
    "abs": torch.abs,
    "exp": torch.exp, "exp2": torch.exp2,
    "log": torch.log, "log2": torch.log2, "log1p": torch.log1p,
    "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "reciprocal": torch.reciprocal,
    "sin": torch.sin, "cos": torch.cos, "tan": torch.tan,
    "asin": torch.asin, "acos": torch.acos, "atan": torch.atan,
    "sinh": torch.sinh, "cosh": torch.cosh, "tanh": torch.tanh,
    "asinh": torch.asinh, "erf": torch.erf,
    "floor": torch.floor, "ceil": torch.ceil, "trunc": torch.trunc,
    "round": torch.round,  # half to even, as the IR
    "is_nan": torch.isnan, "is_inf": torch.isinf, "is_finite": torch.isfinite,
    "logical_not": torch.logical_not, "bitwise_not": torch.bitwise_not,
}

BINARY = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul,
    "pow": torch.pow, "atan2": torch.atan2,
    "max": torch.maximum, "min": torch.minimum,  # both propagate NaN, as the IR
    "eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge,
    "logical_and": torch.logical_and, "logical_or": torch.logical_or, "logical_xor": torch.logical_xor,
    "bitwise_and": torch.bitwise_and, "bitwise_or": torch.bitwise_or, "bitwise_xor": torch.bitwise_xor,
    # torch defines shifts past the width (or negative) as the IR does: 0, or the sign's fill
    "shift_left": torch.bitwise_left_shift, "shift_right_arithmetic": torch.bitwise_right_shift,
}


def _expm1(x):
    """Kahan's expm1: (u - 1) · x / log(u), u = exp(x); exact where u rounds to 1 or is ±inf/0."""
    u = torch.exp(x)
    d = u - 1.0
    accurate = d * x / torch.log(u)
    return torch.where(u == 1.0, x, torch.where((d == -1.0) | torch.isinf(u), d, accurate))


def _acosh(x):
    """log1p(t + sqrt(2t + t²)), t = x - 1 (accurate near 1); log(x) + ln 2 past 2**28 (t² overflows)."""
    t = x - 1.0
    near = torch.log1p(t + torch.sqrt(2.0 * t + t * t))
    y = torch.where(x > 2.0**28, torch.log(x) + math.log(2.0), near)
    return torch.where(x < 1.0, torch.full_like(x, math.nan), y)  # (-huge gave inf, not NaN)


def _atanh(x):
    """sign(x) · ½·log1p(2a / (1 - a)), a = |x| (fdlibm's; keeps tiny results)."""
    a = torch.abs(x)
    return torch.copysign(0.5 * torch.log1p(2.0 * a / (1.0 - a)), x)


# Ops whose rule is a formula of other torch ops (the IN_FLOAT64 ones run in float64).
FORMULAS = {"expm1": _expm1, "acosh": _acosh, "atanh": _atanh}

# erf(x)/x - 1 for |x| < 1.1 as a polynomial in z = 2x²/1.1² - 1 (z in [-1, 1]), lowest power first:
# numpy's Chebyshev least-squares fit of degree 6 at 40,001 Chebyshev points of s = x² (relative
# error of erf(x)/x 1.3e-9), turned into powers of z. erf(x) = x + x·q keeps q's rounding to ~0.1 of x.
_ERF_INNER = (-0.06318909496749689, -0.16031597790820135, 0.02703989149622595, -0.003738266676288093,
              0.0004284572983910229, -4.212141536034526e-05, 3.5430276409167917e-06)
_ERF_INNER_SPLIT = 1.1
# erfc(a) on [1.1, 3.97] as a polynomial in z = (2a - 1.1 - 3.97)/(3.97 - 1.1), lowest power first: the
# same kind of fit, degree 12, weighted 1e4 at a = 3.97 so that P(1) = 2.0e-8 (erfc(3.97) = 2.05e-8)
# rounds 1 - P to 1: float32 erf is 1 from 3.92 on, and a is clamped at 3.97 (inf gives 1).
_ERFC_OUTER = (0.0003370231935199697, -0.0026203013503588203, 0.009535110424478126, -0.021336262178666885,
               0.03221595317256526, -0.0336124752055993, 0.023328639295480583, -0.0080467716010151,
               -0.003678637698936363, 0.006652087299709676, -0.002518110624851873, -0.0009337255803631872,
               0.0006774905760362549)
_ERFC_OUTER_RANGE = (1.1, 3.97)


def _horner(coefficients, x, like):
    acc = torch.full_like(like, coefficients[-1])
    for c in coefficients[-2::-1]:
        acc = acc * x + c
    return acc


def _even_odd(coefficients, z, like):
    """The polynomial at z as E(z²) + z·O(z²): two independent Horner chains, each half as long
    as one (the kernel waits on one chain's multiply-add latency, not on its throughput)."""
    z2 = z * z
    return _horner(coefficients[0::2], z2, like) + z * _horner(coefficients[1::2], z2, like)


def _erf_float32(x):
    """erf in float32 within the IR's transcendental bound, in vectorized float32 kernels.

    |x| < 1.1: x + x·q(z), q a fit of erf(x)/x - 1 in z = 2x²/1.1² - 1 (keeps -0.0 and
    subnormals: x·q rounds below x's ULP). Otherwise sign(x)·(1 - P(z)), P a fit of erfc(a) in
    z, an affine map of a = min(|x|, 3.97) onto [-1, 1]: erfc(a) <= 0.12 there, so P's rounding
    stays small beside one ULP of the result; past 3.92, erf rounds to ±1 (and inf gives ±1,
    NaN stays NaN through the clamp). Only multiplies and adds, no exp and no division, each
    polynomial as its even and odd halves in z² (two shorter chains): both branches run for
    every element, and float64 erf, SLEEF's float32 erfc and an exp-and-division formula were
    each slower than needed in a served MLP's GELU. Polynomials in a variable on [-1, 1] keep
    float32 Horner from cancelling. The error over every float32 in [0, 4] through the compiled
    kernel, and the costs, are in docs/backends/inductor.md (studies/erf_float32)."""
    inner = x + x * _even_odd(_ERF_INNER, x * x * (2 / _ERF_INNER_SPLIT**2) - 1.0, x)
    lo, hi = _ERFC_OUTER_RANGE
    a = torch.clamp(torch.abs(x), max=hi)
    tail = _even_odd(_ERFC_OUTER, a * (2 / (hi - lo)) - (hi + lo) / (hi - lo), x)
    return torch.where(torch.abs(x) < _ERF_INNER_SPLIT, inner, torch.copysign(1.0 - tail, x))


# op -> its rule for float32 where the one for other dtypes (UNARY's, or IN_FLOAT64's) is slower
FLOAT32_FORMULAS = {"erf": _erf_float32}


# op -> why its float32 kernel is not used (measured, docs/backends/inductor.md)
IN_FLOAT64 = {
    "erf": "Inductor's vectorized float32 erf is a polynomial with ~1e-7 absolute error: erf(1e-10) = 0, "
           "erf(1e-5) off by 2e5 ULP; its float64 kernel is correctly rounded after narrowing (float16 and "
           "bfloat16; float32 has a formula of its own, FLOAT32_FORMULAS)",
    "expm1": "the formulas below cancel in float32 (and float16/bfloat16 computed there)",
    "acosh": "the formulas below cancel in float32",
    "atanh": "the formulas below cancel in float32",
}


# complex op -> why its complex64 kernel is not used: it runs in complex128 and rounds each part once
IN_COMPLEX128 = {
    "exp": "torch's complex64 exp is off by 1.33 ULP of |exp(z)| (full_range)",
    "log": "torch's complex64 log loses the real part log|z| near |z| = 1 (log(1.0000001) 1 ULP) and "
           "for a subnormal real part beside ±i (gives 0 for 1e-90)",
    "sqrt": "computed as exp and log are, so that the three agree",
}


def _table_rule(name, fn):
    if name in IN_COMPLEX128:
        plain = _table_rule_real(name, fn)

        def rule(ctx, x):
            if x.dtype == torch.complex64:
                return fn(x.to(torch.complex128)).to(torch.complex64)
            return plain(ctx, x)

        return rule
    return _table_rule_real(name, fn)


def _table_rule_real(name, fn):
    if name in IN_FLOAT64:
        narrow = FLOAT32_FORMULAS.get(name)

        def wide(ctx, x):
            if narrow is not None and x.dtype == torch.float32:
                return narrow(x)
            return fn(x.double()).to(x.dtype) if x.dtype != torch.float64 else fn(x)

        return wide

    def rule(ctx, *operands):
        return fn(*operands)

    return rule


def _all_bits(dtype: DType) -> int:
    """The IR's integer ``x / 0``: every bit set (-1, or the unsigned maximum)."""
    return dtype.iinfo.max if dtype.is_unsigned else -1


def _minus_one(ctx: InductorNodeContext, y):
    """Where ``y`` is -1 (never, for unsigned dtypes: torch would read -1 as 255)."""
    return (y == -1) if ctx.dtype.is_signed else torch.zeros_like(y, dtype=torch.bool)


def _int_divisor(ctx: InductorNodeContext, y):
    """``y`` with 0 and -1 replaced by 1: the divisions C++ may trap on never run."""
    return torch.where((y == 0) | _minus_one(ctx, y), torch.ones_like(y), y)


def div(ctx: InductorNodeContext, x, y):
    if x.dtype == torch.complex64:  # torch's complex64 division gives NaN for some finite/inf quotients
        return torch.div(x.to(torch.complex128), y.to(torch.complex128)).to(torch.complex64)
    if ctx.dtype.is_float or ctx.dtype.is_complex:
        return torch.div(x, y)
    q = torch.div(x, _int_divisor(ctx, y), rounding_mode="trunc")
    q = torch.where(_minus_one(ctx, y), torch.neg(x), q)  # INT_MIN / -1 wraps to INT_MIN
    return torch.where(y == 0, torch.full_like(x, _all_bits(ctx.dtype)), q)


def rem(ctx: InductorNodeContext, x, y):
    if ctx.dtype.is_float:  # C fmod: the dividend's sign (not claimed: deviations.UNSUPPORTED)
        return torch.fmod(x, y)
    return torch.where(y == 0, x, torch.fmod(x, _int_divisor(ctx, y)))  # x % -1 is 0, as x % 1


def sign(ctx: InductorNodeContext, x):
    if not ctx.dtype.is_float:
        return torch.sign(x)
    return torch.where((x == 0) | torch.isnan(x), x, torch.sign(x))  # torch: sign(-0.0) = +0.0


def logistic(ctx: InductorNodeContext, x):
    narrow = x.dtype in (torch.float16, torch.bfloat16)  # three roundings in f16 reach 1.14 ULP: round once
    w = x.float() if narrow else x
    e = torch.exp(-torch.abs(w))
    y = torch.where(w >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
    return y.to(x.dtype) if narrow else y


def _shift_valid(ctx: InductorNodeContext, y):
    return (y >= 0) & (y < ctx.dtype.bits)


def shift_right_logical(ctx: InductorNodeContext, x, y):
    if ctx.dtype.is_unsigned:  # non-negative (u32 too, in its int64 carrier): >> is logical
        return torch.bitwise_right_shift(x, y)
    # Signed: shift arithmetically, then clear the bits the sign filled, (2**(bits - a) - 1)
    a = torch.where(_shift_valid(ctx, y), y, torch.zeros_like(y))
    one = torch.ones_like(x)
    keep = torch.where(a == 0, torch.full_like(x, -1),
                       torch.bitwise_left_shift(one, ctx.dtype.bits - a) - one)
    shifted = torch.bitwise_and(torch.bitwise_right_shift(x, a), keep)
    return torch.where(_shift_valid(ctx, y), shifted, torch.zeros_like(x))


def neg(ctx: InductorNodeContext, x):
    if x.is_complex():  # Inductor's complex neg gives -inf + 0i for inf + 0i: negate the parts
        return torch.view_as_complex(torch.neg(torch.view_as_real(x)))
    return torch.neg(x)


def select(ctx: InductorNodeContext, pred, on_true, on_false):
    return torch.where(pred, on_true, on_false)


def clamp(ctx: InductorNodeContext, lo, x, hi):
    return torch.minimum(torch.maximum(x, lo), hi)  # NaN in any operand propagates


def convert(ctx: InductorNodeContext, x):
    src, dst = ctx.dtype, ctx.out.dtype
    if dst.is_bool:
        return x != 0  # NaN → true
    if dst is DType.uint32 and src.is_float:
        return x.to(torch.int64)  # wrapped into 0 … 2**32 - 1 by lower_node
    return x.to(carried(dst))


def bitcast_convert(ctx: InductorNodeContext, x):
    src, dst = ctx.dtype, ctx.out.dtype
    if src is DType.uint32:
        x = x.to(torch.int32)  # the low 32 bits: the value's bits
    if src.is_float and dst.is_integer:
        x = x.view(FLOAT_BITS[src])
    if dst is DType.uint32:
        return x.view(torch.int32).to(torch.int64) & U32_MASK
    return x.view(carried(dst))


RULES = {
    **{name: _table_rule(name, fn) for name, fn in UNARY.items()},
    **{name: _table_rule(name, fn) for name, fn in BINARY.items()},
    **{name: _table_rule(name, fn) for name, fn in FORMULAS.items()},
    "neg": neg, "div": div, "rem": rem, "sign": sign, "logistic": logistic,
    "shift_right_logical": shift_right_logical,
    "select": select, "clamp": clamp, "convert": convert, "bitcast_convert": bitcast_convert,
}
