"""torch's ``prims`` ops that reach an aten graph, translated to the IR.

- **``prims.fma``** (a·b + c rounded once). Dynamo emits it for ``x.addcdiv_(t1, t2,
  value=v)`` (``fma(t1 / t2, v, x)``), ``x.addcmul_(t1, t2, value=v)`` (``fma(t1 * t2, v,
  x)``) and ``x.add_(y, alpha=tensor)``: every Adam and AdamW step has them. The IR has no
  fused op, so the translation computes in float64 and rounds once: for float32, bfloat16
  and float16 operands the product is exact in float64 (24 + 24 significant bits < 53),
  the sum is rounded *to odd* (a TwoSum gives its exact error; a nonzero error makes the
  last bit 1), and the conversion to the result dtype then rounds exactly as one fused
  multiply-add would (round-to-odd with more than one spare bit makes the second rounding
  correct). Every backend gives the same bits. torch's own eager kernel for the op is
  ``(a * b) + c`` in the operands' dtype (two roundings), and Inductor's compiled code a
  hardware FMA: parity matches the latter, which is what the op's name promises; the two
  differ by at most the product's rounding (half an ULP of a·b; docs/frontend.md).
  float64 operands have no wider IR type: the product and the sum round once each, as
  torch's eager kernel does.
- **``prims.convert_element_type``**: the IR's ``convert`` (torch's decompositions emit it
  for a dtype change).

Example::

    >>> sorted(TABLE)
    ['prims.convert_element_type.default', 'prims.fma.default']
"""

from __future__ import annotations

from ...ir.dtypes import DType
from ..context import TranslationContext, unsupported


def fma(ctx: TranslationContext, a, b, c):
    """a·b + c with one rounding to the result dtype (float64 operands: two, see above)."""
    dtype, shape = ctx.out.dtype, ctx.out.shape
    if not dtype.is_float:
        unsupported(f"fma of {dtype.short} tensors (parity translates floating fma only)")
    if dtype is DType.float64:
        a, b, c = ctx.elementwise([a, b, c], dtype, shape)
        return ctx.b.add(ctx.b.mul(a, b), c)
    a, b, c = ctx.elementwise([a, b, c], DType.float64, shape)
    return ctx.convert(_sum_rounded_to_odd(ctx, ctx.b.mul(a, b), c), dtype)


def _sum_rounded_to_odd(ctx: TranslationContext, p, c):
    """p + c in float64, rounded to odd: the nearest float64 with an odd last bit when the sum
    is inexact (so a later rounding to a narrower type sees the sticky bit), the exact sum
    when it is exact. Infinities and NaN pass through as the plain sum."""
    b = ctx.b
    s = b.add(p, c)
    # Knuth's TwoSum: s + err == p + c exactly (no branch on magnitudes)
    p_part = b.sub(s, c)
    c_part = b.sub(s, p_part)
    err = b.add(b.sub(p, p_part), b.sub(c, c_part))
    shape = s.type.shape
    bits = b.bitcast_convert(s, dtype=DType.int64)
    one, zero = ctx.full(1, DType.int64, shape), ctx.full(0.0, DType.float64, shape)
    even = b.eq(b.bitwise_and(bits, one), ctx.full(0, DType.int64, shape))
    inexact = b.logical_and(b.ne(err, zero), b.is_finite(s))
    # one step away from zero when err has s's sign, toward zero otherwise (s != 0 here: an
    # inexact sum is never zero)
    away = b.eq(b.lt(err, zero), b.lt(s, zero))
    nudged = b.select(away, b.add(bits, one), b.sub(bits, one))
    odd = b.bitcast_convert(nudged, dtype=DType.float64)
    return b.select(b.logical_and(inexact, even), odd, s)


def convert_element_type(ctx: TranslationContext, x, dtype):
    return ctx.convert(ctx.value(x, ctx.out.dtype), ctx.out.dtype)


TABLE = {
    "prims.fma.default": fma,
    "prims.convert_element_type.default": convert_element_type,
}
