"""Elementwise rules: unary, binary, select/clamp, convert and bitcast.

Where an ONNX op has the IR's semantics it comes from a name → op type table; the rest
are short rules written for the IR's semantics, not ONNX's defaults:

- ``sign(-0.0)`` is -0.0 (ONNX Sign gives +0.0); ``trunc`` is Ceil below 0, else Floor.
- ``expm1``/``log1p`` use Kahan's formulas (``(u - 1) * x / log(u)``), accurate near 0.
- Integer ``div``/``rem`` guard the divisor: ORT divides natively, and x / 0 or
  INT_MIN / -1 would trap. ``rem`` is ``x - (x / y) * y`` (exact, wraps) rather than
  ORT's integer fmod, which goes through double.
- Shifts: ONNX BitShift is unsigned-only and undefined past the width, so operands are
  reinterpreted as unsigned (Cast wraps), amounts are checked against the IR dtype's
  width, and the arithmetic right shift is ``~(~x >> y)`` for negative x.
- ``atan2`` is ``atan(y / x)`` with quadrant and signed-zero/infinity fix-ups.
- ``convert`` to float16/bfloat16 from float64 and wide ints goes through round-to-odd
  (``BitCast``), so the result is rounded once as the IR says (ORT casts via float32).
"""

from __future__ import annotations

import math

from onnx import TensorProto

from ...ir.dtypes import DType
from ...ir.precision import Precision
from .context import OnnxNodeContext
from .emitter import ONNX_DTYPES

# IR op -> ONNX op with exactly the IR's semantics on every dtype the op takes.
UNARY = {
    "neg": "Neg", "abs": "Abs", "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "reciprocal": "Reciprocal",
    "asin": "Asin", "acos": "Acos", "atan": "Atan",
    "sinh": "Sinh", "cosh": "Cosh", "asinh": "Asinh", "acosh": "Acosh", "atanh": "Atanh",
    "erf": "Erf", "floor": "Floor", "ceil": "Ceil", "round": "Round",  # half to even
    "is_nan": "IsNaN", "is_inf": "IsInf", "logical_not": "Not",
}

# ONNX Max/Min propagate NaN (checked by the conformance tests); ints wrap in Add/Sub/Mul.
BINARY = {
    "add": "Add", "sub": "Sub", "mul": "Mul", "pow": "Pow", "max": "Max", "min": "Min",
    "eq": "Equal", "lt": "Less", "le": "LessOrEqual", "gt": "Greater", "ge": "GreaterOrEqual",
    "logical_and": "And", "logical_or": "Or", "logical_xor": "Xor",
}

# bool has no Bitwise* kernels; the logical ops are the same thing on one bit.
BITWISE = {"bitwise_and": ("BitwiseAnd", "And"), "bitwise_or": ("BitwiseOr", "Or"),
           "bitwise_xor": ("BitwiseXor", "Xor"), "bitwise_not": ("BitwiseNot", "Not")}


def _direct(op_type: str):
    def rule(ctx: OnnxNodeContext, *xs):
        return ctx.op(op_type, *xs)

    rule.__name__ = op_type
    return rule


def _bitwise(int_op: str, bool_op: str):
    def rule(ctx: OnnxNodeContext, *xs):
        return ctx.op(bool_op if ctx.dtype.is_bool else int_op, *xs)

    return rule


# -- unary ------------------------------------------------------------------------------


def sign(ctx, x):
    keep = ctx.op("Equal", x, ctx.scalar(0))  # ±0 keeps its sign (ONNX Sign gives +0.0)
    if ctx.dtype.is_float:
        keep = ctx.op("Or", keep, ctx.op("IsNaN", x))  # ORT's float16 Sign(NaN) is 0
    return ctx.where(keep, x, ctx.op("Sign", x), ctx.dtype)


def trunc(ctx, x):
    return ctx.where(ctx.op("Less", x, ctx.scalar(0)), ctx.op("Ceil", x), ctx.op("Floor", x), ctx.dtype)


def exp2(ctx, x):
    return ctx.op("Pow", ctx.scalar(2), x)


def expm1(ctx, x):
    # Kahan: u = e**x; u == 1 -> x; else (u - 1) * x / log(u) (the rounding errors of u
    # cancel). u == 0 gives -1; where u - 1 rounds to u (huge or inf) the answer is u.
    u = ctx.op("Exp", x)
    um1 = ctx.op("Sub", u, ctx.scalar(1))
    ratio = ctx.op("Div", ctx.op("Mul", um1, x), ctx.op("Log", u))
    out = ctx.where(ctx.op("Equal", um1, ctx.scalar(-1)), um1, ratio, ctx.dtype)
    out = ctx.where(ctx.op("Equal", um1, u), u, out, ctx.dtype)
    return ctx.where(ctx.op("Equal", u, ctx.scalar(1)), x, out, ctx.dtype)


def log1p(ctx, x):
    # Kahan: u = 1 + x; u == 1 -> x; else log(u) * x / (u - 1). Where 1 + x rounds to x
    # (huge or infinite x) the answer is log(x), and the product would overflow.
    u = ctx.op("Add", x, ctx.scalar(1))
    ratio = ctx.op("Div", ctx.op("Mul", ctx.op("Log", u), x), ctx.op("Sub", u, ctx.scalar(1)))
    out = ctx.where(ctx.op("Equal", u, x), ctx.op("Log", u), ratio, ctx.dtype)
    out = ctx.where(ctx.op("Equal", u, ctx.scalar(0)), ctx.op("Log", u), out, ctx.dtype)
    return ctx.where(ctx.op("Equal", u, ctx.scalar(1)), x, out, ctx.dtype)


# pi/2 in three 33-bit pieces and the tail (fdlibm's __ieee754_rem_pio2): n * piece is
# exact for |n| < 2**20, so x - n * pi/2 keeps ~150 bits of pi/2.
_PIO2 = (1.57079632673412561417e+00, 6.07710050630396597660e-11, 2.02226624871116645580e-21,
         8.47842766036889956997e-32)
_REDUCIBLE = 2.0**20 * math.pi / 2  # beyond, the native kernels run (a recorded deviation)


def _reduce_pio2(ctx, x):
    """(r, q): x = r + q * pi/2 with |r| <= pi/4 and q = n mod 4 (float64, |x| < 2**20 * pi/2)."""
    n = ctx.op("Round", ctx.op("Mul", x, ctx.scalar(2 / math.pi)))
    r = x
    for piece in _PIO2:
        r = ctx.op("Sub", r, ctx.op("Mul", n, ctx.scalar(piece)))
    q = ctx.op("Sub", n, ctx.op("Mul", ctx.op("Floor", ctx.op("Mul", n, ctx.scalar(0.25))), ctx.scalar(4)))
    return r, q


def _quadrants(ctx, x, native, pick):
    """A float64 trig function by range reduction: ORT's float64 Sin/Cos reduce the argument
    with one rounded pi and are off by up to 1e9 ULP near multiples of pi/2. ``pick(q, s, c)``
    chooses the result from sin(r), cos(r) by quadrant. Float32 runs ORT's kernels (≤ 1.3 ULP)."""
    if ctx.dtype is not DType.float64:
        return ctx.op(native, x)
    r, q = _reduce_pio2(ctx, x)
    out = pick(q, ctx.op("Sin", r), ctx.op("Cos", r))
    small = ctx.op("Less", ctx.op("Abs", x), ctx.scalar(_REDUCIBLE))  # false for NaN/inf: native gives NaN
    fallback = pick(ctx.scalar(0.0), ctx.op("Sin", x), ctx.op("Cos", x))  # ORT's own reduction
    return ctx.where(small, out, fallback, ctx.dtype)


def _by_quadrant(ctx, q, values):
    """values[q] for q in 0..3 (float64 q)."""
    out = values[3]
    for k in (2, 1, 0):
        out = ctx.where(ctx.op("Equal", q, ctx.scalar(k)), values[k], out, ctx.dtype)
    return out


def sin(ctx, x):
    return _quadrants(ctx, x, "Sin", lambda q, s, c: _by_quadrant(ctx, q, (s, c, ctx.op("Neg", s), ctx.op("Neg", c))))


def cos(ctx, x):
    return _quadrants(ctx, x, "Cos", lambda q, s, c: _by_quadrant(ctx, q, (c, ctx.op("Neg", s), ctx.op("Neg", c), s)))


def tan(ctx, x):
    # float64 has no Tan kernel: sin(r) / cos(r), or -cos(r) / sin(r) in odd quadrants.
    def pick(q, s, c):
        odd = ctx.op("Equal", ctx.op("Mod", q, ctx.scalar(2.0), fmod=1), ctx.scalar(1.0))
        return ctx.where(odd, ctx.op("Neg", ctx.op("Div", c, s)), ctx.op("Div", s, c), ctx.dtype)

    return _quadrants(ctx, x, "Tan", pick)


def tanh(ctx, x):
    # ORT's float64 Tanh is 6 ULP off near 1; for |x| >= 0.5, 1 - 2 / (e**2|x| + 1) keeps
    # the result within ~2 ULP (it is >= 0.46, so the subtraction does not cancel).
    # float32 widened to float64 (legalize.py) needs none of it: 6 float64 ULP vanish in the
    # rounding to float32, and the fix-up was 15 of a GPT-2 decode step's ~170 nodes per GELU.
    if ctx.dtype is not DType.float64 or ctx.ir_dtype is not DType.float64:
        return ctx.op("Tanh", x)
    a = ctx.op("Abs", x)
    far = ctx.op("Sub", ctx.scalar(1), ctx.op("Div", ctx.scalar(2),
                                              ctx.op("Add", ctx.op("Exp", ctx.op("Add", a, a)), ctx.scalar(1))))
    far = ctx.where(ctx.op("Less", x, ctx.scalar(0)), ctx.op("Neg", far), far, ctx.dtype)
    return ctx.where(ctx.op("GreaterOrEqual", a, ctx.scalar(0.5)), far, ctx.op("Tanh", x), ctx.dtype)


def logistic(ctx, x):
    # Not ORT's Sigmoid: it is off by > 0.1% below -9.7 (float32) / -29.9 (float64) and 0
    # from -16.3 / -36.7 (float32: 10 ULP at -2, 4000 at -8; within 4 ULP only above -1).
    # e / (1 + e) with e = e**min(x, 40) never cancels (e > 0) and keeps tiny and subnormal
    # results relatively accurate; the clamp stops e overflowing (inf / inf), and at 40
    # 1 + e rounds to e in float32 and float64, so the result is exactly 1.0 as it should be.
    # Four ops and no Where: the two-branch form took 11 with the bit-exact Where (ORT's
    # Where alone costs 6-9 Adds), and sigmoid(1.5x+2)*x - sqrt|x| ran 2.3-3.5x the time of
    # torch.onnx's export in ORT; now 1.2-1.9x (f32 4M/16M, 1 thread, loaded machine). Same
    # worst case over dense sweeps: 2.25 ULP float32, 2 float64, 0.5 float16/bfloat16
    # (docs/measurements/onnx_logistic.md). NaN passes Min and Exp.
    if ctx.em.precision is Precision.FAST:
        # ORT's one-pass Sigmoid: its absolute error stays within the fast tier's bound
        # (conformance.bounds.FAST_BOUNDS, measured in docs/conformance.md); NaN, ±inf pass.
        return ctx.op("Sigmoid", x)
    e = ctx.op("Exp", ctx.op("Min", x, ctx.scalar(40.0)))
    return ctx.op("Div", e, ctx.op("Add", e, ctx.scalar(1)))


def log2(ctx, x):
    return ctx.op("Div", ctx.op("Log", x), ctx.scalar(math.log(2)))


def rsqrt(ctx, x):
    return ctx.op("Reciprocal", ctx.op("Sqrt", x))


def is_finite(ctx, x):
    return ctx.op("Not", ctx.op("Or", ctx.op("IsNaN", x), ctx.op("IsInf", x)))


# -- binary -----------------------------------------------------------------------------


def ne(ctx, x, y):
    return ctx.op("Not", ctx.op("Equal", x, y))


def _int_guards(ctx, y):
    """(y == 0, y == -1 or None for unsigned, divisor with 0 and -1 replaced by 1)."""
    one = ctx.scalar(1)
    zero = ctx.op("Equal", y, ctx.scalar(0))
    safe = ctx.op("Where", zero, one, y)
    minus_one = None
    if ctx.dtype.is_signed:
        minus_one = ctx.op("Equal", y, ctx.scalar(-1))
        safe = ctx.op("Where", minus_one, one, safe)
    return zero, minus_one, safe


def div(ctx, x, y):
    if ctx.dtype.is_float:
        return ctx.op("Div", x, y)
    zero, minus_one, safe = _int_guards(ctx, y)
    q = ctx.op("Div", x, safe)  # C division: truncates toward zero
    if minus_one is not None:
        q = ctx.op("Where", minus_one, ctx.op("Neg", x), q)  # Neg wraps: INT_MIN / -1 = INT_MIN
    all_ones = ctx.scalar(-1 if ctx.dtype.is_signed else ctx.dtype.iinfo.max)
    return ctx.op("Where", zero, all_ones, q)  # implementation-defined; the reference's choice


def rem(ctx, x, y):
    if ctx.dtype.is_float:
        return ctx.op("Mod", x, y, fmod=1)
    zero, minus_one, safe = _int_guards(ctx, y)
    r = ctx.op("Sub", x, ctx.op("Mul", ctx.op("Div", x, safe), safe))
    if minus_one is not None:
        r = ctx.op("Where", minus_one, ctx.scalar(0), r)
    return ctx.op("Where", zero, x, r)


def _signbit(ctx, v):
    """v < 0, or v is -0.0 (1 / -0.0 = -inf)."""
    return ctx.op("Or", ctx.op("Less", v, ctx.scalar(0)),
                  ctx.op("Less", ctx.op("Reciprocal", v), ctx.scalar(0)))


def atan2(ctx, y, x):
    # atan(y / x) is within the transcendental bound (atan's condition number is <= 1), then
    # shifted by ±pi when x is negative (or -0.0); the two 0/0 and inf/inf cases, where y / x
    # is NaN, are set explicitly. NaN operands stay NaN through every branch.
    pi = ctx.scalar(math.pi)
    y_neg, x_neg = _signbit(ctx, y), _signbit(ctx, x)
    base = ctx.op("Atan", ctx.op("Div", y, x))
    shift = ctx.where(y_neg, ctx.op("Neg", pi), pi, ctx.dtype)
    out = ctx.where(x_neg, ctx.op("Add", base, shift), base, ctx.dtype)
    zero = ctx.scalar(0)
    both_zero = ctx.op("And", ctx.op("Equal", x, zero), ctx.op("Equal", y, zero))
    both_inf = ctx.op("And", ctx.op("IsInf", x), ctx.op("IsInf", y))
    on_axes = ctx.where(x_neg, pi, zero, ctx.dtype)  # atan2(±0, -0) = ±pi, atan2(±0, +0) = ±0
    diagonal = ctx.where(x_neg, ctx.scalar(3 * math.pi / 4), ctx.scalar(math.pi / 4), ctx.dtype)
    corner = ctx.where(both_zero, on_axes, diagonal, ctx.dtype)
    corner = ctx.where(y_neg, ctx.op("Neg", corner), corner, ctx.dtype)  # carries y's sign (also for ±0)
    return ctx.where(ctx.op("Or", both_zero, both_inf), corner, out, ctx.dtype)


# -- shifts -------------------------------------------------------------------------------

# Same-width unsigned ONNX type per bit width, and the type shifts run in (BitShift has
# kernels for these; shifting 8/16-bit values zero-extended to 32 bits is exact).
_UNSIGNED = {8: TensorProto.UINT8, 16: TensorProto.UINT16, 32: TensorProto.UINT32, 64: TensorProto.UINT64}


def _work_type(dtype: DType) -> int:
    return TensorProto.UINT32 if dtype.bits <= 32 else TensorProto.UINT64


def _to_work(ctx, x):
    """x's two's complement bits, zero-extended to the working unsigned type (Cast wraps)."""
    same, work = _UNSIGNED[ctx.dtype.bits], _work_type(ctx.dtype)
    if ONNX_DTYPES[ctx.dtype] != same:
        x = ctx.op("Cast", x, to=same)
    return x if same == work else ctx.op("Cast", x, to=work)


def _from_work(ctx, u):
    """Back to the IR dtype, keeping the low bits."""
    same, work = _UNSIGNED[ctx.dtype.bits], _work_type(ctx.dtype)
    if same != work:
        u = ctx.op("Cast", u, to=same)
    return u if ONNX_DTYPES[ctx.dtype] == same else ctx.cast(u, ctx.dtype)


def _shift(ctx, x, y, direction: str):
    """Logical shift of x's bits by y; 0 where y < 0 or y >= the IR dtype's width."""
    # Masks by multiplication: Where has no int16/uint64 kernels.
    work = _work_type(ctx.dtype)
    valid = ctx.op("And", ctx.op("GreaterOrEqual", y, ctx.scalar(0)), ctx.op("Less", y, ctx.scalar(ctx.dtype.bits)))
    keep = ctx.op("Cast", valid, to=work)
    amount = ctx.op("Mul", ctx.op("Cast", y, to=work), keep)
    shifted = ctx.op("BitShift", _to_work(ctx, x), amount, direction=direction)
    return _from_work(ctx, ctx.op("Mul", shifted, keep))


def shift_left(ctx, x, y):
    return _shift(ctx, x, y, "LEFT")


def shift_right_logical(ctx, x, y):
    return _shift(ctx, x, y, "RIGHT")


def shift_right_arithmetic(ctx, x, y):
    if not ctx.dtype.is_signed:
        return _shift(ctx, x, y, "RIGHT")
    # floor(x / 2**y): for negative x, ~((~x) >>> y); past the width that is ~0 = -1.
    # mask is -1 for negative x, else 0, so x ^ mask is ~x exactly where x < 0.
    mask = ctx.op("Neg", ctx.cast(ctx.op("Less", x, ctx.scalar(0)), ctx.dtype))
    shifted = _shift(ctx, ctx.op("BitwiseXor", x, mask), y, "RIGHT")
    return ctx.op("BitwiseXor", shifted, mask)


# -- selection ------------------------------------------------------------------------------


def select(ctx, pred, on_true, on_false):
    return ctx.where(pred, on_true, on_false, ctx.out.dtype)


def clamp(ctx, lo, x, hi):
    return ctx.op("Min", ctx.op("Max", x, lo), hi)  # NaN from any operand propagates


# -- conversion -----------------------------------------------------------------------------

_NARROW_FLOATS = (DType.float16, DType.bfloat16)


def _to_odd_f32(ctx, x):
    """float64 → float32 rounded to odd, so a second rounding to f16/bf16 is correct."""
    near = ctx.cast(x, DType.float32)
    back = ctx.cast(near, DType.float64)
    inexact = ctx.op("And", ctx.op("Not", ctx.op("Equal", back, x)), ctx.op("Equal", x, x))
    overshot = ctx.op("And", inexact, ctx.op("Greater", ctx.op("Abs", back), ctx.op("Abs", x)))
    bits = ctx.op("BitCast", near, to=ONNX_DTYPES[DType.uint32])
    one = ctx.scalar(1, DType.uint32)
    bits = ctx.op("Where", overshot, ctx.op("Sub", bits, one), bits)  # one step toward zero
    bits = ctx.op("Where", inexact, ctx.op("BitwiseOr", bits, one), bits)
    return ctx.op("BitCast", bits, to=ONNX_DTYPES[DType.float32])


def _int64_to_odd_f64(ctx, x):
    """int64 → float64 rounded to odd: exact halves summed; TwoSum gives the error's sign."""
    f64 = DType.float64
    mask = ctx.scalar(0xFFFFFFFF, DType.int64)
    high = ctx.cast(ctx.op("BitwiseAnd", x, ctx.op("BitwiseNot", mask)), f64)
    low = ctx.cast(ctx.op("BitwiseAnd", x, mask), f64)
    total = ctx.op("Add", high, low)
    low_part = ctx.op("Sub", total, high)
    error = ctx.op("Add", ctx.op("Sub", high, ctx.op("Sub", total, low_part)), ctx.op("Sub", low, low_part))
    bits = ctx.op("BitCast", total, to=ONNX_DTYPES[DType.int64])
    zero, one = ctx.scalar(0, f64), ctx.scalar(1, DType.int64)
    inexact = ctx.op("Not", ctx.op("Equal", error, zero))
    overshot = ctx.op("And", inexact, ctx.op("Not", ctx.op("Equal", ctx.op("Sign", error), ctx.op("Sign", total))))
    bits = ctx.op("Where", overshot, ctx.op("Sub", bits, one), bits)
    bits = ctx.op("Where", inexact, ctx.op("BitwiseOr", bits, one), bits)
    return ctx.op("BitCast", bits, to=ONNX_DTYPES[f64])


def convert(ctx, x):
    src, dst = ctx.in_types[0].dtype, ctx.attrs["dtype"]
    if src is dst:
        return ctx.op("Identity", x)
    if dst.is_bool:
        return ctx.op("Not", ctx.op("Equal", x, ctx.scalar(0, src)))  # NaN != 0: true
    if dst in _NARROW_FLOATS and not src.is_bool:
        if src is DType.int64:
            x = _to_odd_f32(ctx, _int64_to_odd_f64(ctx, x))
        elif src in (DType.float64, DType.int32, DType.uint32):
            x = _to_odd_f32(ctx, ctx.cast(x, DType.float64))  # exact in float64
        else:
            x = ctx.cast(x, DType.float32)  # exact: f16/bf16/8-16-bit ints fit float32
    return ctx.cast(x, dst)  # int→int wraps; float→int truncates; wider floats are exact


def bitcast_convert(ctx, x):
    return ctx.op("BitCast", x, to=ONNX_DTYPES[ctx.attrs["dtype"]])


RULES = {
    **{name: _direct(op_type) for name, op_type in UNARY.items()},
    **{name: _direct(op_type) for name, op_type in BINARY.items()},
    **{name: _bitwise(*ops) for name, ops in BITWISE.items()},
    "sign": sign, "trunc": trunc, "exp2": exp2, "expm1": expm1, "log1p": log1p, "log2": log2,
    "rsqrt": rsqrt, "is_finite": is_finite, "logistic": logistic,
    "sin": sin, "cos": cos, "tan": tan, "tanh": tanh,
    "ne": ne, "div": div, "rem": rem, "atan2": atan2,
    "shift_left": shift_left, "shift_right_logical": shift_right_logical,
    "shift_right_arithmetic": shift_right_arithmetic,
    "select": select, "clamp": clamp, "convert": convert, "bitcast_convert": bitcast_convert,
}
