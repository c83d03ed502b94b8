"""Triton helper functions the generated kernels call as ``M.<name>(...)``.

Two kinds live here:

* **Math built from primitives** (``*64``): functions Triton has no primitive for
  (expm1, log1p, tanh, atan, ...). Triton's interpreter has no libdevice, so in interpreter
  mode the generated code computes these in float64 from ``tl.exp``/``tl.log``/``tl.sqrt``
  (NumPy underneath) and rounds once to the result dtype. Each formula is a classic one
  (Kahan's expm1/log1p, Cephes' atan); the measured worst case in float64 is recorded in
  tests/backends/triton/test_math.py. On CUDA the generated code calls libdevice instead.
* **Combine functions** for ``tl.reduce`` that follow the IR's semantics rather than
  Triton's defaults (max/min propagate NaN; argmax takes the first NaN and the lowest
  index on ties).

Everything takes and returns tensors; float64 helpers expect float64 operands.
"""

from __future__ import annotations

import triton
import triton.language as tl

PI = 3.141592653589793
PI_2 = 1.5707963267948966
PI_4 = 0.7853981633974483
LN2 = 0.6931471805599453
# Cephes atan: tan(3*pi/8) and the bits of pi/2 that 1.5707963267948966 leaves out.
T3P8 = 2.414213562373095
MOREBITS = 6.123233995736766e-17


@triton.jit
def copysign64(mag, sign):
    """|mag| with the sign bit of ``sign`` (both float64); keeps -0.0 and NaN signs."""
    m = mag.to(tl.int64, bitcast=True) & 0x7FFFFFFFFFFFFFFF
    s = sign.to(tl.int64, bitcast=True) & (-0x7FFFFFFFFFFFFFFF - 1)
    return (m | s).to(tl.float64, bitcast=True)


@triton.jit
def signbit64(x):
    return x.to(tl.int64, bitcast=True) < 0


@triton.jit
def expm1_64(x):
    # Kahan: (u - 1) * x / log(u) cancels the rounding error of u = exp(x).
    u = tl.exp(x)
    um1 = u - 1.0
    r = um1 * (x / tl.log(u))
    r = tl.where(um1 == -1.0, -1.0, r)
    r = tl.where(u == float("inf"), float("inf"), r)
    return tl.where(u == 1.0, x, r)


@triton.jit
def log1p64(x):
    # Kahan: log(u) * x / (u - 1) with u = 1 + x rounded.
    u = 1.0 + x
    r = tl.log(u) * (x / (u - 1.0))
    r = tl.where(x == float("inf"), x, r)
    return tl.where(u == 1.0, x, r)


@triton.jit
def sinh64(x):
    ax = tl.abs(x)  # sinh is odd: work on |x| (no cancellation), restore the sign last
    e = expm1_64(ax)
    small = 0.5 * (e + e / (e + 1.0))
    big = tl.exp(ax)
    mid = 0.5 * big - 0.5 / big
    h = tl.exp(0.5 * ax)
    huge = (0.5 * h) * h  # exp(ax) alone overflows before sinh does
    r = tl.where(ax < 1.0, small, tl.where(ax < 700.0, mid, huge))
    return copysign64(r, x)


@triton.jit
def cosh64(x):
    ax = tl.abs(x)
    e = tl.exp(ax)
    h = tl.exp(0.5 * ax)
    return tl.where(ax < 700.0, 0.5 * e + 0.5 / e, (0.5 * h) * h)


@triton.jit
def tanh64(x):
    # Cephes tanh: a rational approximation below 0.625, 1 - 2 / (e**2|x| + 1) above.
    ax = tl.abs(x)
    s = x * x
    p = (-9.64399179425052238628e-1 * s - 9.92877231001918586564e1) * s - 1.61468768441708447952e3
    q = ((s + 1.12811678491632931402e2) * s + 2.23548839060100448583e3) * s + 4.84406305325125486048e3
    small = x + x * s * (p / q)
    big = copysign64(1.0 - 2.0 / (tl.exp(2.0 * ax) + 1.0), x)
    return tl.where(ax < 0.625, small, big)


@triton.jit
def asinh64(x):
    ax = tl.abs(x)
    t = log1p64(ax + ax * ax / (1.0 + tl.sqrt(1.0 + ax * ax)))
    big = tl.log(ax) + LN2
    return copysign64(tl.where(ax > 268435456.0, big, t), x)


@triton.jit
def acosh64(x):
    t = x - 1.0
    r = log1p64(t + tl.sqrt(2.0 * t + t * t))
    r = tl.where(x > 268435456.0, tl.log(x) + LN2, r)
    return tl.where(x < 1.0, float("nan"), r)


@triton.jit
def atanh64(x):
    ax = tl.abs(x)
    small = 0.5 * log1p64(2.0 * ax + 2.0 * ax * ax / (1.0 - ax))
    big = 0.5 * log1p64(2.0 * ax / (1.0 - ax))
    return copysign64(tl.where(ax < 0.5, small, big), x)


@triton.jit
def atan64(x):
    # Cephes atan (double precision): reduce to |x| <= 0.66, then a rational approximation.
    ax = tl.abs(x)
    hi = ax > T3P8
    mid = (ax > 0.66) & ~hi
    t = tl.where(hi, -1.0 / ax, tl.where(mid, (ax - 1.0) / (ax + 1.0), ax))
    # (arithmetic, not tl.where: tl.where of two Python floats makes a float32 constant)
    hif = hi.to(tl.float64)
    midf = mid.to(tl.float64)
    base = hif * PI_2 + midf * PI_4
    extra = hif * MOREBITS + midf * (0.5 * MOREBITS)
    z = t * t
    p = (((-8.750608600031904122785e-1 * z - 1.615753718733365076637e1) * z - 7.500855792314704667340e1) * z
         - 1.228866684490136173410e2) * z - 6.485021904942025371773e1
    q = ((((z + 2.485846490142306297962e1) * z + 1.650270098316988542046e2) * z + 4.328810604912902668951e2) * z
         + 4.853903996359136964868e2) * z + 1.945506571482613964425e2
    r = base + (t * (z * p / q) + t + extra)
    return copysign64(r, x)


@triton.jit
def atan2_64(y, x):
    """C atan2(y, x): the angle of the point (x, y), with every signed-zero/inf case."""
    ay = tl.abs(y)
    ax = tl.abs(x)
    both_inf = (ay == float("inf")) & (ax == float("inf"))
    both_zero = (ay == 0.0) & (ax == 0.0)
    ratio = tl.where(both_inf, 1.0, tl.where(both_zero, 0.0, ay / ax))
    a = atan64(ratio)
    a = tl.where(signbit64(x), PI - a, a)
    return copysign64(a, y)


@triton.jit
def asin64(x):
    return atan2_64(x, tl.sqrt((1.0 - x) * (1.0 + x)))


@triton.jit
def acos64(x):
    return atan2_64(tl.sqrt((1.0 - x) * (1.0 + x)), x)


@triton.jit
def tan64(x):
    return tl.sin(x) / tl.cos(x)


@triton.jit
def logistic64(x):
    e = tl.exp(-tl.abs(x))
    return tl.where(x >= 0.0, 1.0 / (1.0 + e), e / (1.0 + e))


@triton.jit
def pow64(x, y):
    """C pow(x, y) in float64 as exp(y * log|x|) with C's special cases.

    Accurate for float32 and narrower operands (computed in float64); for float64
    operands the error grows with |y * log x| (a recorded deviation).
    """
    ax = tl.abs(x)
    y_int = tl.floor(y) == y
    y_odd = y_int & (tl.abs(y) < 9007199254740992.0) & ((y - 2.0 * tl.floor(0.5 * y)) == 1.0)
    mag = tl.exp(y * tl.log(ax))
    # negative x: integer y gives a sign, fractional y gives NaN
    r = tl.where(x < 0.0, tl.where(y_int, tl.where(y_odd, -mag, mag), float("nan")), mag)
    # x = ±0 and ±inf: the sign survives only for odd integer y
    zero_or_inf = (ax == 0.0) | (ax == float("inf"))
    r = tl.where(zero_or_inf, tl.where(y_odd, copysign64(mag, x), mag), r)
    # |x| == 1 with y = ±inf, x == 1, y == 0: exactly 1 (even for NaN partners)
    r = tl.where((ax == 1.0) & (tl.abs(y) == float("inf")), 1.0, r)
    r = tl.where((x == 1.0) | (y == 0.0), 1.0, r)
    return r


@triton.jit
def round_half_even(x):
    """Round to nearest, ties to even, in x's own float type; exact for every input."""
    r = tl.floor(x)
    d = x - r  # exact: x and floor(x) are close
    odd = (r - 2.0 * tl.floor(0.5 * r)) != 0.0
    up = (d > 0.5) | ((d == 0.5) & odd)
    r = tl.where(up, r + 1.0, r)
    return tl.where(r == 0.0, x * 0.0, r)  # -0.4 rounds to -0.0


@triton.jit
def trunc(x):
    return tl.where(x < 0.0, tl.ceil(x), tl.floor(x))


@triton.jit
def sign(x):
    return tl.where(x > 0, 1, tl.where(x < 0, -1, 0)).to(x.dtype)


@triton.jit
def fsign(x):
    return tl.where(x > 0.0, 1.0, tl.where(x < 0.0, -1.0, x)).to(x.dtype)  # ±0 and NaN stay


# -- combine functions for tl.reduce ----------------------------------------------------

@triton.jit
def max_nan(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def min_nan(a, b):
    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def mul(a, b):
    return a * b


@triton.jit
def argmax_combine(v1, i1, v2, i2):
    n1 = v1 != v1
    n2 = v2 != v2
    first = i1 < i2
    pick1 = ((v1 > v2) & ~n2) | ((v1 == v2) & first) | (n1 & ~n2) | (n1 & n2 & first)
    return tl.where(pick1, v1, v2), tl.where(pick1, i1, i2)


@triton.jit
def argmin_combine(v1, i1, v2, i2):
    n1 = v1 != v1
    n2 = v2 != v2
    first = i1 < i2
    pick1 = ((v1 < v2) & ~n2) | ((v1 == v2) & first) | (n1 & ~n2) | (n1 & n2 & first)
    return tl.where(pick1, v1, v2), tl.where(pick1, i1, i2)


# -- conversions that must round once (round-to-odd first, as ir/ops/conversion.py does) ---

@triton.jit
def f64_to_f32_odd(x):
    """float64 → float32 rounded to odd; rounding that to float16/bfloat16 is then correct."""
    r = x.to(tl.float32)
    back = r.to(tl.float64)
    inexact = (back != x) & (x == x)
    over = tl.abs(back) > tl.abs(x)
    bits = r.to(tl.int32, bitcast=True)
    bits = tl.where(inexact & over, bits - 1, bits)
    bits = tl.where(inexact, bits | 1, bits)
    return bits.to(tl.float32, bitcast=True)


@triton.jit
def i64_to_f32_odd(x):
    """int64 → float32 rounded to odd (for a correctly rounded int → bfloat16)."""
    r = x.to(tl.float32)
    top = r >= 9.223372036854775808e18  # 2**63: above every int64, not convertible back
    ri = tl.where(top, 0.0, r).to(tl.int64)
    d = x - ri
    inexact = top | (d != 0)
    over = top | ((r > 0.0) & (d < 0)) | ((r < 0.0) & (d > 0))
    bits = r.to(tl.int32, bitcast=True)
    bits = tl.where(inexact & over, bits - 1, bits)
    bits = tl.where(inexact, bits | 1, bits)
    return bits.to(tl.float32, bitcast=True)


# -- bfloat16 through integer bits (the interpreter's own bfloat16 casts mishandle subnormals) --

@triton.jit
def bf16_bits_to_f32(bits):
    """int16 bits of a bfloat16 → the float32 with the same value (exact)."""
    return ((bits.to(tl.int32) & 0xFFFF) << 16).to(tl.float32, bitcast=True)


@triton.jit
def bf16_to_f32(x):
    return bf16_bits_to_f32(x.to(tl.int16, bitcast=True))


@triton.jit
def f32_to_bf16(x):
    """A float32 holding a bfloat16 value → that bfloat16 (exact: the low bits are zero)."""
    return (x.to(tl.int32, bitcast=True) >> 16).to(tl.int16).to(tl.bfloat16, bitcast=True)


@triton.jit
def round_bf16(x):
    """float32 → float32 rounded to bfloat16 precision, to nearest even; NaN stays (quiet) NaN."""
    b = x.to(tl.uint32, bitcast=True)
    r = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000
    r = tl.where(x != x, (b & 0xFFFF0000) | 0x00400000, r)
    return r.to(tl.float32, bitcast=True)
