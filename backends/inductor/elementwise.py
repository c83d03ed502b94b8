"""Elementwise rules: one table row per op, most of them a torch function applied as is.

:data:`UNARY` and :data:`BINARY` map an op to the torch function whose semantics are the
IR's (docs/ir.md); :func:`_table_rule` makes each a rule. Where torch's differ, the
op has a rule of its own below, and its comment says what differs:

- integer ``div``/``rem``: torch truncates as C does, but ``x / 0`` and ``INT_MIN / -1``
  trap in the generated C++ (SIGFPE); the IR defines both;
- ``sign`` keeps -0.0 and NaN; ``logistic`` uses the IR's two-branch formula (torch's
  ``1 / (1 + exp(-x))`` loses the relative accuracy of tiny results);
- shifts past the bit width are defined in the IR (0, or the sign), undefined in C++;
- ``convert`` and ``bitcast_convert`` go through the ``u32``-in-int64 carrier.

Ops in :data:`IN_FLOAT64` run in float64 and round once for the narrower float dtypes:
Inductor's vectorized float32 kernel for them is outside the contract.
"""

from __future__ import annotations

import torch

from ...ir.dtypes import DType
from .context import FLOAT_BITS, U32_MASK, InductorNodeContext, carried

UNARY = {
    "neg": torch.neg, "abs": torch.abs,
    "exp": torch.exp, "exp2": torch.exp2, "expm1": torch.expm1,
    "log": torch.log, "log2": torch.log2, "log1p": torch.log1p,
    "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "reciprocal": torch.reciprocal,
    "sin": torch.sin, "cos": torch.cos, "tan": torch.tan,
    "asin": torch.asin, "acos": torch.acos, "atan": torch.atan,
    "sinh": torch.sinh, "cosh": torch.cosh, "tanh": torch.tanh,
    "asinh": torch.asinh, "acosh": torch.acosh, "atanh": torch.atanh, "erf": torch.erf,
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
}


# op -> why its float32 kernel is not used (measured, docs/backends/inductor.md)
IN_FLOAT64 = {
    "erf": "Inductor's vectorized float32 erf is a polynomial with ~1e-7 absolute error: erf(1e-10) = 0, "
           "erf(1e-5) off by 2e5 ULP; its float64 kernel is correctly rounded after narrowing",
}


def _table_rule(name, fn):
    if name in IN_FLOAT64:
        def wide(ctx, x):
            return fn(x.double()).to(x.dtype) if x.dtype != torch.float64 else fn(x)

        return wide

    def rule(ctx, *operands):
        return fn(*operands)

    return rule


def _all_bits(dtype: DType) -> int:
    """The IR's integer ``x / 0``: every bit set (-1, or the unsigned maximum)."""
    return dtype.iinfo.max if dtype.is_unsigned else -1


def _int_divisor(y):
    """``y`` with 0 and -1 replaced by 1: the divisions C++ may trap on never run."""
    return torch.where((y == 0) | (y == -1), torch.ones_like(y), y)


def div(ctx: InductorNodeContext, x, y):
    if ctx.dtype.is_float:
        return torch.div(x, y)
    q = torch.div(x, _int_divisor(y), rounding_mode="trunc")
    q = torch.where(y == -1, torch.neg(x), q)  # INT_MIN / -1 wraps to INT_MIN
    return torch.where(y == 0, torch.full_like(x, _all_bits(ctx.dtype)), q)


def rem(ctx: InductorNodeContext, x, y):
    if ctx.dtype.is_float:
        return torch.fmod(x, y)  # C fmod: the dividend's sign
    return torch.where(y == 0, x, torch.fmod(x, _int_divisor(y)))  # x % -1 is 0, as x % 1


def sign(ctx: InductorNodeContext, x):
    if not ctx.dtype.is_float:
        return torch.sign(x)
    return torch.where((x == 0) | torch.isnan(x), x, torch.sign(x))  # torch: sign(-0.0) = +0.0


def logistic(ctx: InductorNodeContext, x):
    e = torch.exp(-torch.abs(x))
    return torch.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _shift_valid(ctx: InductorNodeContext, y):
    return (y >= 0) & (y < ctx.dtype.bits)


def _amount(ctx: InductorNodeContext, y):
    return torch.where(_shift_valid(ctx, y), y, torch.zeros_like(y))


def shift_left(ctx: InductorNodeContext, x, y):
    return torch.where(_shift_valid(ctx, y), torch.bitwise_left_shift(x, _amount(ctx, y)), torch.zeros_like(x))


def shift_right_arithmetic(ctx: InductorNodeContext, x, y):
    fill = torch.where(x < 0, torch.full_like(x, -1), torch.zeros_like(x))
    return torch.where(_shift_valid(ctx, y), torch.bitwise_right_shift(x, _amount(ctx, y)), fill)


def shift_right_logical(ctx: InductorNodeContext, x, y):
    if ctx.dtype is DType.uint32 or ctx.dtype is DType.uint8:  # non-negative: >> is logical
        return torch.where(_shift_valid(ctx, y), torch.bitwise_right_shift(x, _amount(ctx, y)), torch.zeros_like(x))
    # Signed: shift arithmetically, then clear the bits the sign filled, (2**(bits - a) - 1)
    a = _amount(ctx, y)
    one = torch.ones_like(x)
    keep = torch.where(a == 0, torch.full_like(x, -1),
                       torch.bitwise_left_shift(one, ctx.dtype.bits - a) - one)
    shifted = torch.bitwise_and(torch.bitwise_right_shift(x, a), keep)
    return torch.where(_shift_valid(ctx, y), shifted, torch.zeros_like(x))


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
    "div": div, "rem": rem, "sign": sign, "logistic": logistic,
    "shift_left": shift_left, "shift_right_arithmetic": shift_right_arithmetic,
    "shift_right_logical": shift_right_logical,
    "select": select, "clamp": clamp, "convert": convert, "bitcast_convert": bitcast_convert,
}
