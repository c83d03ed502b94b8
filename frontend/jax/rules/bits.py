"""Bit-level primitives built exactly from the IR's converts, shifts, masks and adds:
``reduce_precision`` (to the format of f16, bf16, f32 or f64), ``population_count``, ``clz``,
``nextafter`` (``jax.random.truncated_normal`` steps its bounds inward with it).

``reduce_precision(x, e, m)`` rounds x's significand to m bits (to nearest, ties to even) and
its exponent to e bits: a result past the format's largest finite is ±inf, and, unlike a
convert, one below its smallest *normal* number is ±0 (XLA models no subnormals there:
measured on 2·10⁶ random float32 bit patterns, the f16 round trip differs from it only there).
So the rule is the round trip through that format's dtype, with the operands whose significand
rounded at their own exponent stays below the smallest normal (|x| < smallest normal ·
(1 - 2^-(m+2))) flushed to zero of x's sign. Where the exponent keeps its width (f32 to bf16's
format) XLA flushes nothing: its rounding of a subnormal's significand bits is the convert's.

Example::

    >>> import jax.numpy as jnp
    >>> from jax import lax
    >>> from parity.frontend.jax import capture
    >>> capture(lambda x: lax.population_count(x), jnp.ones(3, jnp.uint8)).op_counts()["shift_right_logical"]
    3
"""

from __future__ import annotations

import numpy as np

from ....ir.dtypes import DType
from ....ir.graph import Value
from ..context import JaxContext, refuse

# (exponent_bits, mantissa_bits) of the float dtypes reduce_precision can round to by a round trip
FORMATS = {(5, 10): DType.float16, (8, 7): DType.bfloat16, (8, 23): DType.float32, (11, 52): DType.float64}
_OWN = {d: f for f, d in FORMATS.items()}


def reduce_precision(ctx: JaxContext, x: Value):
    e, m = int(ctx.params["exponent_bits"]), int(ctx.params["mantissa_bits"])
    dtype = x.type.dtype
    own_e, own_m = _OWN[dtype]
    if e >= own_e and m >= own_m:
        return x  # the operand's own format, or a wider one: nothing to round
    target = FORMATS.get((e, m))
    if target is None or e > own_e:
        refuse(f"reduce_precision of {dtype.short} to exponent_bits={e}, mantissa_bits={m} (parity translates "
               f"the formats of f16, bf16, f32 and f64, none with a wider exponent than the operand's): round "
               "with a convert to a dtype of that format and back")
    b, shape = ctx.b, tuple(x.type.shape)
    rounded = ctx.convert(ctx.convert(x, target), dtype)
    if e == own_e:  # no exponent to narrow: XLA rounds a subnormal's significand bits as the convert does
        return rounded
    threshold = float(target.finfo.smallest_normal) * (1 - 2.0 ** -(m + 2))
    below = b.lt(b.abs(x), ctx.full(threshold, dtype, shape))
    return b.select(below, b.mul(x, ctx.full(0.0, dtype, shape)), rounded)


def _int(ctx: JaxContext, value: int, like: Value) -> Value:
    return ctx.full(value, like.type.dtype, tuple(like.type.shape))


def _popcount(ctx: JaxContext, v: Value) -> Value:
    """Bits set, by sums of ever wider fields (logical shifts: a negative int is its bit pattern)."""
    b, width = ctx.b, v.type.dtype.bits

    def mask(pattern: int) -> Value:
        bits = int.from_bytes(bytes([pattern]) * (width // 8), "little")
        return _int(ctx, bits - (1 << width) if bits >= 1 << (width - 1) and not v.type.dtype.is_unsigned else bits, v)

    def shifted(n: int) -> Value:
        return b.shift_right_logical(v, _int(ctx, n, v))

    v = b.sub(v, b.bitwise_and(shifted(1), mask(0x55)))
    v = b.add(b.bitwise_and(v, mask(0x33)), b.bitwise_and(shifted(2), mask(0x33)))
    v = b.bitwise_and(b.add(v, shifted(4)), mask(0x0F))  # each byte holds its count
    for n in (8, 16, 32):
        if n < width:
            v = b.add(v, shifted(n))
    return b.bitwise_and(v, _int(ctx, 2 * width - 1, v))  # the low byte's sum; count <= width < 2·width


def population_count(ctx: JaxContext, x: Value):
    return _popcount(ctx, x)


def clz(ctx: JaxContext, x: Value):
    """width - popcount of x with every bit below its highest set bit set too."""
    b, v, n = ctx.b, x, 1
    while n < x.type.dtype.bits:
        v = b.bitwise_or(v, b.shift_right_logical(v, _int(ctx, n, v)))
        n *= 2
    return b.sub(_int(ctx, x.type.dtype.bits, x), _popcount(ctx, v))


_SIGNED_OF_WIDTH = {16: DType.int16, 32: DType.int32, 64: DType.int64}


def nextafter(ctx: JaxContext, x: Value, y: Value):
    """The float next to x towards y, on x's bits as a signed int of its width: the magnitude
    bits step up (away from zero) or down (towards it), the sign kept. x == y gives y (so
    nextafter(0.0, -0.0) is -0.0), a NaN operand NaN, ±0 the smallest subnormal of y's sign; a
    step down to zero magnitude keeps x's sign (-0.0 from the negative side), as NumPy's and
    XLA's float16 do (XLA:CPU's float32 reads a subnormal x as 0: conformance's convention)."""
    b, dtype, shape = ctx.b, x.type.dtype, tuple(ctx.out.shape)
    x, y = ctx.broadcast(x, shape), ctx.broadcast(y, shape)
    signed = _SIGNED_OF_WIDTH[dtype.bits]
    info = np.iinfo(signed.numpy)

    def full(value: int) -> Value:
        return ctx.full(value, signed, shape)

    bits, towards = b.bitcast_convert(x, dtype=signed), b.bitcast_convert(y, dtype=signed)
    sign, magnitude = b.bitwise_and(bits, full(info.min)), b.bitwise_and(bits, full(info.max))
    away = b.logical_xor(b.gt(y, x), b.lt(x, ctx.full(0, dtype, shape)))  # |result| > |x|
    stepped = b.select(away, b.add(magnitude, full(1)), b.sub(magnitude, full(1)))
    moved = b.bitwise_or(sign, stepped)
    from_zero = b.bitwise_or(b.bitwise_and(towards, full(info.min)), full(1))
    result = b.bitcast_convert(b.select(b.eq(magnitude, full(0)), from_zero, moved), dtype=dtype)
    unordered = b.logical_or(b.ne(x, x), b.ne(y, y))
    return b.select(b.logical_or(unordered, b.eq(x, y)), _equal_or_nan(ctx, x, y), result)


def _equal_or_nan(ctx: JaxContext, x: Value, y: Value) -> Value:
    """y where x == y; NaN where either is NaN (x + y is NaN then, and y where they are equal is y)."""
    b = ctx.b
    return b.select(b.eq(x, y), y, b.add(x, y))


TABLE = {"reduce_precision": reduce_precision, "population_count": population_count, "clz": clz,
         "nextafter": nextafter}
