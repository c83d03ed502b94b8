"""Elementwise aten ops: unary math, arithmetic, comparisons, logic, select, activations.

Promotion follows torch (``ctx.promote`` / the node's result dtype) and every operand
is converted and broadcast explicitly. Python's floor ``//`` and ``%`` are built from
the IR's truncating ``div``/``rem`` (torch's own formulas, so edge cases agree).
"""

from __future__ import annotations

from ...ir.dtypes import DType
from ..context import TranslationContext, unsupported

# aten unary op -> IR op; the operand is converted to the (float) result dtype first.
_FLOAT_UNARY = {
    "exp": "exp", "exp2": "exp2", "expm1": "expm1", "log": "log", "log2": "log2", "log1p": "log1p",
    "sqrt": "sqrt", "rsqrt": "rsqrt", "reciprocal": "reciprocal", "sin": "sin", "cos": "cos",
    "tan": "tan", "asin": "asin", "acos": "acos", "atan": "atan", "sinh": "sinh", "cosh": "cosh",
    "tanh": "tanh", "asinh": "asinh", "acosh": "acosh", "atanh": "atanh", "erf": "erf",
    "sigmoid": "logistic",
}
# aten unary op -> IR op that keeps the dtype (rounding ops are the identity on integers).
_SAME_UNARY = {"abs": "abs", "neg": "neg", "sign": "sign", "floor": "floor", "ceil": "ceil",
               "round": "round", "trunc": "trunc", "bitwise_not": "bitwise_not"}
_ROUNDING = {"floor", "ceil", "round", "trunc"}
# aten activation -> (IR composite, aten positional/keyword args -> IR attributes)
_ACTIVATIONS = {
    "relu.default": ("relu", ()),
    "gelu.default": ("gelu", ("approximate",)),
    "silu.default": ("silu", ()),
    "mish.default": ("mish", ()),
    "hardsigmoid.default": ("hardsigmoid", ()),
    "hardswish.default": ("hardswish", ()),
    "leaky_relu.default": ("leaky_relu", ("negative_slope",)),
    "hardtanh.default": ("hardtanh", ("min_val", "max_val")),
    "softplus.default": ("softplus", ("beta", "threshold")),
}
_COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")


def _float_unary(op: str):
    def translate(ctx: TranslationContext, x):
        return ctx.b.op(op, ctx.convert(x, ctx.out.dtype))

    return translate


def _special(op: str):
    """lgamma, digamma (ir/ops/special.py): float16/bfloat16/float32 results, computed in float64;
    a float64 result is refused with the way out."""
    def translate(ctx: TranslationContext, x):
        if ctx.out.dtype is DType.float64:
            unsupported(f"{op} of float64: parity computes {op} of float16, bfloat16 and float32 in float64 and "
                        "rounds once, and no wider dtype is left for float64 (a few-ULP float64 result needs "
                        f"interval-by-interval approximations no backend's ops give); compute {op} in float32, or "
                        "let this op run in eager torch (strict=False)")
        return ctx.b.op(op, ctx.convert(x, ctx.out.dtype))

    return translate


def _same_unary(name: str, op: str):
    def translate(ctx: TranslationContext, x):
        if name in _ROUNDING and not x.type.dtype.is_float:
            return x
        if op == "abs" and x.type.dtype.is_complex:
            return ctx.b.complex_abs(x)  # |z|: a real result
        if op == "bitwise_not" and x.type.dtype.is_bool:
            return ctx.b.logical_not(x)
        return ctx.b.op(op, x)

    return translate


def log10(ctx: TranslationContext, x):
    x = ctx.convert(x, ctx.out.dtype)
    return ctx.b.div(ctx.b.log(x), ctx.full(2.302585092994046, ctx.out.dtype, x.type.shape))


def _activation(op: str, attr_names):
    def translate(ctx: TranslationContext, x, *args, **kwargs):
        attrs = dict(zip(attr_names, args))
        attrs.update({k: v for k, v in kwargs.items() if k in attr_names})
        if op == "leaky_relu" or op == "hardtanh" or op == "softplus":
            attrs = {k: float(v) for k, v in attrs.items()}
        if op == "relu" and not x.type.dtype.is_float:
            return ctx.b.max(x, ctx.full(0, x.type.dtype, x.type.shape))
        return ctx.b.op(op, x, **attrs)

    return translate


def elu(ctx: TranslationContext, x, alpha=1.0, scale=1.0, input_scale=1.0):
    if scale != 1.0 or input_scale != 1.0:
        unsupported("elu with scale/input_scale (selu) is not translated yet")
    return ctx.b.elu(x, alpha=float(alpha))


# -- arithmetic ------------------------------------------------------------------------


def _arith(op: str):
    def translate(ctx: TranslationContext, x, y, *, alpha=None):
        dtype, shape = ctx.out.dtype, ctx.out.shape
        x, y = ctx.elementwise([x, y], dtype, shape)
        if alpha is not None and alpha != 1:
            y = ctx.b.mul(y, ctx.full(alpha, dtype, shape))
        if dtype.is_bool:
            bool_op = {"add": "logical_or", "mul": "logical_and", "max": "logical_or", "min": "logical_and"}
            if op not in bool_op:
                unsupported(f"{op} of bool tensors")
            return ctx.b.op(bool_op[op], x, y)
        return ctx.b.op(op, x, y)

    return translate


def rsub(ctx: TranslationContext, x, y, alpha=1):
    return _arith("sub")(ctx, y, x, alpha=None) if alpha == 1 else unsupported("rsub with alpha")


def div(ctx: TranslationContext, x, y, *, rounding_mode=None):
    """true division (ints → float), or torch's trunc / floor division."""
    dtype, shape = ctx.out.dtype, ctx.out.shape
    x, y = ctx.elementwise([x, y], dtype, shape)
    if rounding_mode is None:
        return ctx.b.div(x, y)
    if rounding_mode == "trunc":
        return ctx.b.div(x, y) if dtype.is_integer else ctx.b.trunc(ctx.b.div(x, y))
    return floor_divide_values(ctx, x, y)


def floor_divide_values(ctx: TranslationContext, x, y):
    """Python's ``//`` from truncating div/rem (torch's ``div_floor`` formulas)."""
    b, t = ctx.b, x.type
    zero = ctx.full(0, t.dtype, t.shape)
    if t.dtype.is_integer:
        q, r = b.div(x, y), b.rem(x, y)
        if t.dtype.is_unsigned:
            return q
        adjust = b.logical_and(b.ne(r, zero), b.ne(b.lt(r, zero), b.lt(y, zero)))
        return b.sub(q, b.convert(adjust, dtype=t.dtype))
    # floats: torch's div_floor_floating (exact where floor(x / y) is off by one)
    mod = b.rem(x, y)
    quotient = b.div(b.sub(x, mod), y)
    fix = b.logical_and(b.ne(mod, zero), b.ne(b.lt(y, zero), b.lt(mod, zero)))
    quotient = b.select(fix, b.sub(quotient, ctx.full(1, t.dtype, t.shape)), quotient)
    floored = b.floor(quotient)
    up = b.gt(b.sub(quotient, floored), ctx.full(0.5, t.dtype, t.shape))
    floored = b.select(up, b.add(floored, ctx.full(1, t.dtype, t.shape)), floored)
    # a zero quotient is a zero with the sign of x / y; division by zero gives x / y itself
    true_div = b.div(x, y)
    floored = b.select(b.eq(quotient, zero), b.mul(zero, true_div), floored)
    return b.select(b.eq(y, zero), true_div, floored)


def floor_divide(ctx: TranslationContext, x, y):
    dtype, shape = ctx.out.dtype, ctx.out.shape
    x, y = ctx.elementwise([x, y], dtype, shape)
    return floor_divide_values(ctx, x, y)


def remainder(ctx: TranslationContext, x, y):
    """Python's ``%``: the result has the sign of the divisor."""
    dtype, shape = ctx.out.dtype, ctx.out.shape
    x, y = ctx.elementwise([x, y], dtype, shape)
    b, zero = ctx.b, ctx.full(0, dtype, shape)
    r = b.rem(x, y)
    if dtype.is_unsigned:
        return r
    fix = b.logical_and(b.ne(r, zero), b.ne(b.lt(r, zero), b.lt(y, zero)))
    return b.select(fix, b.add(r, y), r)


def fmod(ctx: TranslationContext, x, y):
    dtype, shape = ctx.out.dtype, ctx.out.shape
    x, y = ctx.elementwise([x, y], dtype, shape)
    return ctx.b.rem(x, y)


def pow_(ctx: TranslationContext, x, y):
    dtype, shape = ctx.out.dtype, ctx.out.shape
    if not dtype.is_float:
        if isinstance(y, int) and 0 <= y <= 64:
            return _int_pow(ctx, ctx.broadcast(ctx.value(x, dtype), shape), y)
        unsupported("pow of integer tensors with a tensor or negative exponent")
    x, y = ctx.elementwise([x, y], dtype, shape)
    return ctx.b.pow(x, y)


def _int_pow(ctx: TranslationContext, x, n: int):
    result, base = ctx.full(1, x.type.dtype, x.type.shape), x
    while n:
        if n & 1:
            result = ctx.b.mul(result, base)
        n >>= 1
        if n:
            base = ctx.b.mul(base, base)
    return result


def _float_binary(op: str):
    def translate(ctx: TranslationContext, x, y):
        x, y = ctx.elementwise([x, y], ctx.out.dtype, ctx.out.shape)
        return ctx.b.op(op, x, y)

    return translate


def atan2_out(ctx: TranslationContext, x, y, *, out=None):
    """The out= form: the IR has no mutation, the result is the value torch writes to ``out``."""
    return _float_binary("atan2")(ctx, x, y)


def _comparison(op: str):
    def translate(ctx: TranslationContext, x, y):
        _, dtype = ctx.promote(x, y)
        x, y = ctx.elementwise([x, y], dtype, ctx.out.shape)
        return ctx.b.op(op, x, y)

    return translate


def _logical(op: str):
    def translate(ctx: TranslationContext, x, y):
        x, y = ctx.elementwise([x, y], DType.bool, ctx.out.shape)
        return ctx.b.op(op, x, y)

    return translate


def logical_not(ctx: TranslationContext, x):
    return ctx.convert(ctx.b.logical_not(ctx.convert(x, DType.bool)), ctx.out.dtype)


def _bitwise(op: str):
    def translate(ctx: TranslationContext, x, y):
        dtype = ctx.out.dtype
        x, y = ctx.elementwise([x, y], dtype, ctx.out.shape)
        if dtype.is_bool:
            return ctx.b.op(op.replace("bitwise", "logical"), x, y)
        return ctx.b.op(op, x, y)

    return translate


def _shift(op: str):
    """``x << y``, ``x >> y``: torch's rule past the width (or for y < 0) is the IR's: 0 for a left
    shift, the sign (0 or -1) for a right shift, which is arithmetic (unsigned: logical)."""
    def translate(ctx: TranslationContext, x, y):
        x, y = ctx.elementwise([x, y], ctx.out.dtype, ctx.out.shape)
        return ctx.b.op(op, x, y)

    return translate


def where(ctx: TranslationContext, cond, x, y):
    dtype, shape = ctx.out.dtype, ctx.out.shape
    x, y = ctx.elementwise([x, y], dtype, shape)
    return ctx.b.select(ctx.broadcast(ctx.convert(cond, DType.bool), shape), x, y)


def clamp(ctx: TranslationContext, x, min=None, max=None):
    dtype, shape = ctx.out.dtype, ctx.out.shape
    x = ctx.broadcast(ctx.value(x, dtype), shape)
    if min is not None:
        x = ctx.b.max(x, ctx.broadcast(ctx.value(min, dtype), shape))
    if max is not None:
        x = ctx.b.min(x, ctx.broadcast(ctx.value(max, dtype), shape))
    return x


def _predicate(op: str, integer_result: bool):
    def translate(ctx: TranslationContext, x):
        if not x.type.dtype.is_float:
            return ctx.full(integer_result, DType.bool, x.type.shape)
        return ctx.b.op(op, x)

    return translate


def _masked_fill(ctx: TranslationContext, x, mask, value):
    shape = ctx.out.shape
    fill = ctx.broadcast(ctx.value(value, ctx.out.dtype), shape)
    return ctx.b.select(ctx.broadcast(mask, shape), fill, ctx.broadcast(x, shape))


def _table():
    table = {}
    for name, op in _FLOAT_UNARY.items():
        table[f"{name}.default"] = _float_unary(op)
    for op in ("lgamma", "digamma"):
        table[f"{op}.default"] = _special(op)
    for name, op in _SAME_UNARY.items():
        table[f"{name}.default"] = _same_unary(name, op)
    for key, (op, attrs) in _ACTIVATIONS.items():
        table[key] = _activation(op, attrs)
    for name, op in (("add", "add"), ("sub", "sub"), ("mul", "mul")):
        table[f"{name}.Tensor"] = table[f"{name}.Scalar"] = _arith(op)
    table["maximum.default"] = _arith("max")
    table["minimum.default"] = _arith("min")
    for name in _COMPARISONS:
        table[f"{name}.Tensor"] = table[f"{name}.Scalar"] = _comparison(name)
    for name in ("logical_and", "logical_or", "logical_xor"):
        table[f"{name}.default"] = _logical(name)
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        table[f"{name}.Tensor"] = table[f"{name}.Scalar"] = _bitwise(name)
    for op, names in (("shift_left", ("__lshift__", "bitwise_left_shift")),
                      ("shift_right_arithmetic", ("__rshift__", "bitwise_right_shift"))):
        for key in (f"{names[0]}.Tensor", f"{names[0]}.Scalar", f"{names[1]}.Tensor", f"{names[1]}.Tensor_Scalar",
                    f"{names[1]}.Scalar_Tensor"):
            table[key] = _shift(op)
    for key in ("div.Tensor", "div.Scalar", "div.Tensor_mode", "div.Scalar_mode"):
        table[key] = div
    for key in ("remainder.Tensor", "remainder.Scalar"):
        table[key] = remainder
    for key in ("fmod.Tensor", "fmod.Scalar"):
        table[key] = fmod
    for key in ("pow.Tensor_Scalar", "pow.Tensor_Tensor", "pow.Scalar"):
        table[key] = pow_
    table.update({
        "floor_divide.default": floor_divide,
        "rsub.Scalar": rsub,
        "log10.default": log10,
        "elu.default": elu,
        "atan2.default": _float_binary("atan2"),
        "atan2.out": atan2_out,
        "logical_not.default": logical_not,
        "where.self": where,
        "clamp.default": clamp,
        "clamp.Tensor": clamp,
        "isnan.default": _predicate("is_nan", False),
        "isinf.default": _predicate("is_inf", False),
        "isfinite.default": _predicate("is_finite", True),
        "masked_fill.Scalar": _masked_fill,
        "masked_fill.Tensor": _masked_fill,
    })
    return table


TABLE = _table()
