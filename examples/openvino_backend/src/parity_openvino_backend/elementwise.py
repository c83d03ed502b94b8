"""Elementwise rules: math, comparisons, logic, select, clamp, convert.

Where OpenVINO's op differs from the IR's semantics the rule says so in one line: NaN through
maximum/minimum, -0.0 through sign, C division for integers, shifts past the bit width.
"""

from __future__ import annotations

import math

import openvino as ov
import openvino.opset15 as ops

from .compare import greater, greater_equal, is_finite
from .ov_types import const, is_float, ov_type
from .wide import compare_int32


def _unary(fn):
    return lambda attrs, outs, x: fn(x)


def _binary(fn):
    return lambda attrs, outs, x, y: fn(x, y)


def _either_nan(x, y):
    return ops.logical_or(ops.is_nan(x), ops.is_nan(y))


def _maximum(x, y):
    """IR max propagates NaN; OpenVINO's Maximum returns the other operand."""
    if not is_float(x):
        return ops.maximum(x, y)
    return ops.select(_either_nan(x, y), ops.add(x, y), ops.maximum(x, y))


def _minimum(x, y):
    if not is_float(x):
        return ops.minimum(x, y)
    return ops.select(_either_nan(x, y), ops.add(x, y), ops.minimum(x, y))


def _sign(x):
    """sign(±0) is ±0 and sign(NaN) NaN, as the operand: only nonzero numbers take ±1."""
    if not is_float(x):
        return ops.sign(x)
    keep = ops.logical_or(ops.equal(x, const(0, x)), ops.is_nan(x))
    return ops.select(keep, x, ops.sign(x))


def _safe_divisor(y):
    """An integer divisor with 0 replaced by 1 (x / 0 is implementation-defined in the IR; this
    keeps the runtime away from a trap)."""
    zero = ops.equal(y, const(0, y))
    return zero, ops.select(zero, const(1, y), y)


def _scaled_divisor(y):
    """(y·s, s) with s a power of two that keeps 1/(y·s) normal: OpenVINO rewrites x / y as
    x · y⁻¹ (its ConvertDivide pass), and y⁻¹ of a subnormal y is inf there."""
    magnitude = ops.abs(y)
    s = ops.select(ops.less(magnitude, const(2.0**-64, y)), const(2.0**64, y),
                   ops.select(greater(magnitude, const(2.0**64, y)), const(2.0**-64, y), const(1, y)))
    return ops.multiply(y, s), s


def _float_div(x, y):
    scaled, s = _scaled_divisor(y)
    return ops.multiply(ops.divide(x, scaled), s)


def _div(x, y):
    if is_float(x):
        return _float_div(x, y)
    zero, safe = _safe_divisor(y)
    quotient = ops.divide(x, safe)
    quotient.set_attribute("m_pythondiv", False)  # C division: toward zero, not floor
    return ops.select(zero, const(0, x), quotient)


def _rem(x, y):
    """C remainder (the sign of x); x rem 0 is x for integers."""
    if is_float(x):
        return ops.mod(x, y)
    zero, safe = _safe_divisor(y)
    return ops.select(zero, x, ops.mod(x, safe))


def _exp(x):
    """OpenVINO's Exp gives inf for NaN, and flushes subnormal results to 0 (below x = -87.3):
    there it is exp(x/2)², whose one extra rounding is below a subnormal's ULP."""
    half = ops.exp(ops.multiply(x, const(0.5, x)))
    tiny = ops.select(ops.less(x, const(-87, x)), ops.multiply(half, half), ops.exp(x))
    return ops.select(ops.is_nan(x), x, tiny)


# erf(x) = 2/sqrt(pi) · sum_n (-1)^n x^(2n+1) / (n! (2n+1)): OpenVINO's Erf is off by up to 1.6e7 ULP
# below |x| = 1 (it returns 0 for |x| < 1e-7); the series to n = 11 is within float32's rounding there.
_ERF_TERMS = [(-1) ** n * 2 / math.sqrt(math.pi) / (math.factorial(n) * (2 * n + 1)) for n in range(12)]


def _erf(x):
    square = ops.multiply(x, x)
    series = const(_ERF_TERMS[-1], x)
    for coefficient in reversed(_ERF_TERMS[:-1]):
        series = ops.add(ops.multiply(series, square), const(coefficient, x))
    near_zero = ops.less(ops.abs(x), const(1, x))
    return ops.select(near_zero, ops.multiply(series, x), ops.erf(x))


def _trunc(x):
    return ops.select(ops.less(x, const(0, x)), ops.ceiling(x), ops.floor(x))


def _shift(fn, fill_negative):
    """Shifts by an amount outside [0, bits) give 0 (an arithmetic right shift: -1 for x < 0)."""
    def rule(attrs, outs, x, y):
        bits = x.get_element_type().bitwidth
        inside = ops.logical_and(greater_equal(y, const(0, y)), ops.less(y, const(bits, y)))
        shifted = fn(x, ops.select(inside, y, const(0, y)))
        outside = const(0, x)
        if fill_negative:
            outside = ops.select(ops.less(x, const(0, x)), const(-1, x), const(0, x))
        return ops.select(inside, shifted, outside)

    return rule


def _compare(op, native):
    """int32 by 16-bit digits (the CPU plugin compares int32 in float32: eq[i32]:specials), others natively."""
    by_digits = compare_int32(op)

    def rule(attrs, outs, a, b):
        return by_digits(attrs, outs, a, b) if a.get_element_type() == ov.Type.i32 else native(a, b)

    return rule


def _convert(attrs, outs, x):
    target = outs[0].dtype
    if target.is_bool:
        return ops.not_equal(x, const(0, x))  # NaN != 0: true
    if target.is_integer and is_float(x):
        x = _trunc(x)  # toward zero (NaN and out of range are implementation-defined)
    return ops.convert(x, ov_type(target))


def _clamp(attrs, outs, low, x, high):
    return _minimum(_maximum(x, low), high)


RULES = {
    **{name: _unary(fn) for name, fn in {
        "neg": ops.negative, "abs": ops.abs, "sign": _sign, "exp": _exp, "log": ops.log, "sqrt": ops.sqrt,
        "rsqrt": lambda x: _float_div(const(1, x), ops.sqrt(x)), "reciprocal": lambda x: _float_div(const(1, x), x),
        "log2": lambda x: ops.multiply(ops.log(x), const(1 / math.log(2), x)),
        "exp2": lambda x: ops.power(const(2, x), x),
        "sin": ops.sin, "cos": ops.cos, "tan": ops.tan, "asin": ops.asin, "acos": ops.acos, "atan": ops.atan,
        "sinh": ops.sinh, "cosh": ops.cosh, "tanh": ops.tanh, "asinh": ops.asinh, "acosh": ops.acosh,
        "atanh": ops.atanh, "erf": _erf, "logistic": ops.sigmoid, "floor": ops.floor, "ceil": ops.ceiling,
        "round": lambda x: ops.round(x, "half_to_even"), "trunc": _trunc,
        "is_nan": ops.is_nan, "is_inf": ops.is_inf, "is_finite": is_finite,
        "logical_not": ops.logical_not, "bitwise_not": ops.bitwise_not,
    }.items()},
    **{name: _binary(fn) for name, fn in {
        "add": ops.add, "sub": ops.subtract, "mul": ops.multiply, "div": _div, "rem": _rem, "pow": ops.power,
        "max": _maximum, "min": _minimum, "logical_and": ops.logical_and,
        "logical_or": ops.logical_or, "logical_xor": ops.logical_xor, "bitwise_and": ops.bitwise_and,
        "bitwise_or": ops.bitwise_or, "bitwise_xor": ops.bitwise_xor,
    }.items()},
    **{op: _compare(op, fn) for op, fn in (("eq", ops.equal), ("ne", ops.not_equal), ("lt", ops.less),
                                           ("le", ops.less_equal), ("gt", greater), ("ge", greater_equal))},
    "shift_left": _shift(ops.bitwise_left_shift, fill_negative=False),
    "shift_right_arithmetic": _shift(ops.bitwise_right_shift, fill_negative=True),
    "select": lambda attrs, outs, c, x, y: ops.select(c, x, y),
    "clamp": _clamp,
    "convert": _convert,
}
