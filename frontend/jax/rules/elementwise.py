"""Elementwise lax primitives: unary and binary math, comparisons, logic, selection, converts.

jaxprs pass rank-0 literals to elementwise ops (``mul x 2.0:f32[]``); the IR has no implicit
broadcasting, so every operand is broadcast to the result's shape first.
"""

from __future__ import annotations

from ....ir.dtypes import DType
from ....ir.graph import Value
from ....ir.ops import OP_TABLE
from ..context import JaxContext, refuse

# lax name -> IR op, for ops whose operands and result share the result's shape
UNARY = {name: name for name in (
    "neg", "exp", "exp2", "log", "log1p", "expm1", "tanh", "logistic", "sin", "cos", "tan", "asin", "acos",
    "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "sqrt", "rsqrt", "sign", "floor", "ceil", "erf",
    "is_finite")}
BINARY = {name: name for name in ("add", "sub", "mul", "div", "rem", "max", "min", "atan2", "eq", "ne", "lt",
                                  "le", "gt", "ge", "shift_left")}
BINARY |= {"add_any": "add", "shift_right_logical": "shift_right_logical"}
# bool operands take the logical op, integers the bitwise one
LOGICAL = {"and": ("logical_and", "bitwise_and"), "or": ("logical_or", "bitwise_or"),
           "xor": ("logical_xor", "bitwise_xor"), "not": ("logical_not", "bitwise_not")}


def _unary(ir_op: str):
    def rule(ctx: JaxContext, x: Value):
        refuse_unaccepted_dtype(ir_op, x)
        return ctx.b.op(ir_op, x)

    rule.__name__ = f"translate_{ir_op}"
    return rule


def _binary(ir_op: str):
    def rule(ctx: JaxContext, x: Value, y: Value):
        refuse_unaccepted_dtype(ir_op, x)
        shape = ctx.out.shape
        return ctx.b.op(ir_op, ctx.broadcast(x, shape), ctx.broadcast(y, shape))

    rule.__name__ = f"translate_{ir_op}"
    return rule


def refuse_unaccepted_dtype(ir_op: str, x: Value) -> None:
    """Refuse (the user's line, the dtype) an operand dtype the IR op has no form for: complex
    ``sin``, ``tanh``, ``sign``, ``max``... which JAX computes and the IR does not define."""
    accepted = OP_TABLE[ir_op].dtypes
    if x.type.dtype not in accepted:
        refuse(f"the IR's {ir_op} takes no {x.type.dtype.short} operands (it takes "
               f"{', '.join(d.short for d in DType if d in accepted)}); compute it on real parts, or outside "
               "parity.jax.jit")


def abs_(ctx: JaxContext, x: Value):
    """``abs`` of a complex number is its modulus (c64 → f32), the IR's ``complex_abs``."""
    return ctx.b.op("complex_abs" if x.type.dtype.is_complex else "abs", x)


def _logical(name: str):
    logical, bitwise = LOGICAL[name]

    def rule(ctx: JaxContext, *operands: Value):
        op = logical if ctx.out.dtype.is_bool else bitwise
        return ctx.b.op(op, *(ctx.broadcast(x, ctx.out.shape) for x in operands))

    rule.__name__ = f"translate_{name}"
    return rule


def shift_right_arithmetic(ctx: JaxContext, x: Value, y: Value):
    """XLA's arithmetic shift copies the top bit on unsigned ints too (uint8 200 >> 1 is 228); the IR's
    shifts an unsigned int logically, so an unsigned operand shifts as the signed int of its bits (found by
    the frontend's conformance cases: conformance/jax_frontend)."""
    shape = ctx.out.shape
    x, y = ctx.broadcast(x, shape), ctx.broadcast(y, shape)
    dtype = x.type.dtype
    if not dtype.is_unsigned:
        return ctx.b.shift_right_arithmetic(x, y)
    signed = _SIGNED_OF[dtype]
    y = ctx.b.min(y, ctx.full(dtype.bits, dtype, shape))  # past the width either way; stays positive once signed
    shifted = ctx.b.shift_right_arithmetic(ctx.b.bitcast_convert(x, dtype=signed), ctx.b.bitcast_convert(y, dtype=signed))
    return ctx.b.bitcast_convert(shifted, dtype=dtype)


_SIGNED_OF = {DType.uint8: DType.int8, DType.uint32: DType.int32}


def round_(ctx: JaxContext, x: Value):
    # lax.RoundingMethod (compat.py passes its name): half away from zero, or half to even (the IR's round)
    if ctx.params["rounding_method"] == "AWAY_FROM_ZERO":
        away = ctx.b.trunc(ctx.b.add(x, ctx.b.mul(ctx.b.sign(x), ctx.full(0.5, x.type.dtype, x.type.shape))))
        exact_half = ctx.b.eq(ctx.b.abs(ctx.b.sub(x, ctx.b.trunc(x))), ctx.full(0.5, x.type.dtype, x.type.shape))
        return ctx.b.select(exact_half, away, ctx.b.round(x))
    return ctx.b.round(x)


def pow_(ctx: JaxContext, x: Value, y: Value):
    """x ** y; an integer exponent (optax's ``decay ** count``) converted to x's float dtype, exactly
    for every |y| < 2**24."""
    shape = ctx.out.shape
    return ctx.b.pow(ctx.broadcast(x, shape), ctx.broadcast(ctx.convert(y, x.type.dtype), shape))


def select_n(ctx: JaxContext, which: Value, *cases: Value):
    """``select_n(p, false_case, true_case)``: the IR's select takes (pred, on_true, on_false)."""
    if len(cases) != 2:
        refuse(f"select_n with {len(cases)} cases (parity translates the two-case form, a bool or 0/1 predicate)")
    shape = ctx.out.shape
    pred = which if which.type.dtype.is_bool else ctx.b.ne(which, ctx.full(0, which.type.dtype, which.type.shape))
    on_false, on_true = (ctx.broadcast(c, shape) for c in cases)
    return ctx.b.select(ctx.broadcast(pred, shape), on_true, on_false)


def clamp(ctx: JaxContext, lo: Value, x: Value, hi: Value):
    shape = ctx.out.shape
    return ctx.b.clamp(ctx.broadcast(lo, shape), x, ctx.broadcast(hi, shape))


def convert_element_type(ctx: JaxContext, x: Value):
    """A complex number to a real dtype keeps its real part, as JAX does (the IR's convert
    refuses to drop an imaginary part silently)."""
    if x.type.dtype.is_complex and not ctx.out.dtype.is_complex:
        x = ctx.b.op("real", x)
    return ctx.convert(x, ctx.out.dtype)


def identity(ctx: JaxContext, x: Value):
    """stop_gradient, copy, optimization_barrier's single operand: the value itself."""
    return x


def identities(ctx: JaxContext, *xs: Value):
    return list(xs)


def square(ctx: JaxContext, x: Value):
    return ctx.b.mul(x, x)


def integer_pow(ctx: JaxContext, x: Value):
    """x ** y for a static int y by squaring, the multiplications XLA emits for jax.jit."""
    y = int(ctx.params["y"])
    if y == 0:
        return ctx.full(1, x.type.dtype, x.type.shape)
    result, base, n = None, x, abs(y)
    while n:
        if n & 1:
            result = base if result is None else ctx.b.mul(result, base)
        n >>= 1
        if n:
            base = ctx.b.mul(base, base)
    if y < 0:
        result = ctx.b.div(ctx.full(1, x.type.dtype, x.type.shape), result)
    return result


# XLA's single-precision erf_inv (Giles, "Approximating the erfinv function", 2010): a degree-8
# polynomial in w = -log1p(-x*x) - 2.5 (w < 5) or sqrt(-log1p(-x*x)) - 3, times x; highest degree first
_ERF_INV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                    -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERF_INV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                 -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def erf_inv(ctx: JaxContext, x: Value):
    """The inverse error function as jax.jit computes it on CPU for float32 (jax.random.normal draws
    through it): XLA's polynomial, evaluated in float32, and ±inf at ±1."""
    dtype, shape = x.type.dtype, tuple(x.type.shape)
    if dtype is not DType.float32:
        refuse(f"erf_inv of {dtype.short} (parity translates XLA's float32 polynomial): compute it in float32")
    b = ctx.b

    def const(v):
        return ctx.full(v, dtype, shape)

    w = b.neg(b.log1p(b.neg(b.mul(x, x))))
    central = b.lt(w, const(5.0))
    w = b.select(central, b.sub(w, const(2.5)), b.sub(b.sqrt(w), const(3.0)))
    p = None
    for lo, hi in zip(_ERF_INV_CENTRAL, _ERF_INV_TAIL):
        c = b.select(central, const(lo), const(hi))
        p = c if p is None else b.add(c, b.mul(p, w))
    at_one = b.eq(b.abs(x), const(1.0))
    return b.select(at_one, b.mul(x, const(float("inf"))), b.mul(p, x))


def bitcast_convert_type(ctx: JaxContext, x: Value):
    if ctx.out.dtype.bits != x.type.dtype.bits:
        refuse(f"a bitcast from {x.type.dtype.short} to {ctx.out.dtype.short}, which changes the shape (parity "
               "translates bitcasts between dtypes of one width)")
    return ctx.b.bitcast_convert(x, dtype=ctx.out.dtype)


TABLE = {name: _unary(op) for name, op in UNARY.items()}
TABLE |= {name: _binary(op) for name, op in BINARY.items()}
TABLE |= {name: _logical(name) for name in LOGICAL}
TABLE |= {
    "abs": abs_,
    "round": round_,
    "shift_right_arithmetic": shift_right_arithmetic,
    "pow": pow_,
    "select_n": select_n,
    "clamp": clamp,
    "convert_element_type": convert_element_type,
    "stop_gradient": identity,
    "copy": identity,
    "copy_p": identity,
    "optimization_barrier": identities,
    "square": square,
    "integer_pow": integer_pow,
    "erf_inv": erf_inv,
    "bitcast_convert_type": bitcast_convert_type,
}
