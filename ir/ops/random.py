"""Random composites: random_bits, uniform, normal, dropout — from an explicit key.

Everything is built from uint32 primitives (add wraps; rotations are shifts and an
or), so every backend that meets the primitive contract draws the same bits.

**Bits.** ``random_bits(key: u32[2]) {shape}`` is Threefry-2x32 with 20 rounds
(Salmon et al., Random123; the key schedule adds the parity word 0x1BD11BDA, the
rotations are (13, 15, 26, 6) and (17, 29, 16, 24)). Element i of the flattened
result encrypts the 64-bit counter i, split as (high word, low word) = (0, i), and
returns the xor of the two output words. That is JAX's layout with
``jax_threefry_partitionable`` (the default since JAX 0.5), so the bits equal
``jax.random.bits(jax.random.wrap_key_data(key, impl="threefry2x32"), shape)``.

**Uniform.** JAX's mantissa method: take ``nmant`` random bits m and return
``m * 2**-nmant`` in [0, 1) (exact in the dtype), then ``u * (high - low) + low`` in
the dtype (two roundings) clamped to [low, prev(high)] — the upper clamp is ours, so
the result never reaches ``high``. The bits per dtype are JAX's: float32 uses the top
23 bits of the 32-bit word, float16 bits 6..15 of its low 16 bits, bfloat16 bits 1..7
of its low 8 bits, and float64 combines both threefry words (``w0 * 2**20 +
(w1 >> 12)``, 52 bits). For ``low=0, high=1`` the values equal ``jax.random.uniform``
bit for bit.

**Normal.** Box–Muller on 2n uniforms of the compute dtype (float32 for
float16/bfloat16): with u from counters [0, n) and v from [n, 2n),
``sqrt(-2 log(1 - u)) * cos(2 pi v)`` (``1 - u`` is in (0, 1], so the log is finite).
It is not JAX's (erf-inverse) normal; it uses only transcendental primitives, so
backends agree to within their transcendental bound, not bit for bit.

**Dropout.** Element kept iff ``uniform(key){x.shape, f32} >= p`` (compared exactly,
as the 23-bit integer m against ceil(p * 2**23)); kept values are ``x / (1 - p)``
(x times the scale rounded to the dtype), dropped ones are exactly 0 — also for
non-finite x, where PyTorch's ``x * mask`` gives NaN.
"""

from __future__ import annotations

import math

import numpy as np

from ..dtypes import FLOAT_DTYPES, DType
from ..errors import TypeRuleError
from ..opdef import Accuracy, AttrKind, AttrSpec, Group
from ..types import TensorType
from . import compose
from .compose import expand, full, full_like, scalar
from .rules import check_dtype

_U32 = DType.uint32
_PARITY = 0x1BD11BDA  # Threefry key-schedule constant
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))  # Threefry-2x32, alternating per 4 rounds
# dtype -> (random bits drawn, mantissa bits kept), JAX's choice for each float dtype
_MANTISSA = {DType.float16: (16, 10), DType.bfloat16: (8, 7), DType.float32: (32, 23)}
_DROPOUT_BITS = 23  # dropout compares a float32 uniform's 23-bit mantissa


def threefry2x32(b, key, x0, x1):
    """Threefry-2x32 (20 rounds) of the counter words x0, x1 (u32 vectors) under key u32[2].

    Returns the two output words. Emits only uint32 primitives.
    """
    shape = x0.shape
    words = [b.reshape(b.slice(key, start_indices=(i,), limit_indices=(i + 1,), strides=(1,)), shape=())
             for i in (0, 1)]
    ks = (*words, b.bitwise_xor(b.bitwise_xor(*words), scalar(b, _PARITY, _U32)))
    shifts: dict[int, object] = {}

    def shift(r):
        if r not in shifts:
            shifts[r] = full(b, r, _U32, shape)
        return shifts[r]

    def rotl(v, r):
        return b.bitwise_or(b.shift_left(v, shift(r)), b.shift_right_logical(v, shift(32 - r)))

    x0 = b.add(x0, expand(b, ks[0], shape, ()))
    x1 = b.add(x1, expand(b, ks[1], shape, ()))
    for j in range(5):
        for r in _ROTATIONS[j % 2]:
            x0 = b.add(x0, x1)
            x1 = b.bitwise_xor(rotl(x1, r), x0)
        # Key injection after every 4 rounds; the second word also gets the round count.
        x0 = b.add(x0, expand(b, ks[(j + 1) % 3], shape, ()))
        x1 = b.add(x1, expand(b, b.add(ks[(j + 2) % 3], scalar(b, j + 1, _U32)), shape, ()))
    return x0, x1


def _words(b, key, n: int):
    """Both threefry words for the counters (0, i), i = 0..n-1."""
    return threefry2x32(b, key, full(b, 0, _U32, (n,)), b.iota(dtype=_U32, shape=(n,)))


def _bits(b, key, n: int):
    return b.bitwise_xor(*_words(b, key, n))


def _unit(b, key, n: int, dtype: DType):
    """n uniforms in [0, 1) of ``dtype`` by JAX's mantissa method (exact values)."""
    if dtype is DType.float64:
        y0, y1 = _words(b, key, n)
        w0 = b.convert(y0, dtype=dtype)
        w1 = b.convert(b.shift_right_logical(y1, full(b, 12, _U32, (n,))), dtype=dtype)
        m = b.add(b.mul(w0, full(b, 2.0**20, dtype, (n,))), w1)
        return b.mul(m, full(b, 2.0**-52, dtype, (n,)))
    drawn, nmant = _MANTISSA[dtype]
    bits = _bits(b, key, n)
    if drawn < 32:
        bits = b.bitwise_and(bits, full(b, 2**drawn - 1, _U32, (n,)))
    m = b.shift_right_logical(bits, full(b, drawn - nmant, _U32, (n,)))
    return b.mul(b.convert(m, dtype=dtype), full(b, 2.0**-nmant, dtype, (n,)))


def _random_bits(b, attrs, key):
    shape = attrs["shape"]
    return b.reshape(_bits(b, key, math.prod(shape)), shape=shape)


def _uniform(b, attrs, key):
    shape, dtype, low, high = attrs["shape"], attrs["dtype"], attrs["low"], attrs["high"]
    u = _unit(b, key, math.prod(shape), dtype)
    if (low, high) != (0.0, 1.0):  # [0, 1) needs no affine map (and no clamp)
        lo = expand(b, scalar(b, low, dtype), u.shape, ())
        span = expand(b, b.sub(scalar(b, high, dtype), scalar(b, low, dtype)), u.shape, ())
        top = expand(b, scalar(b, _below(high, dtype), dtype), u.shape, ())
        u = b.clamp(lo, b.add(b.mul(u, span), lo), top)
    return b.reshape(u, shape=shape)


def _normal(b, attrs, key):
    shape, dtype = attrs["shape"], attrs["dtype"]
    n = math.prod(shape)
    wide = compose.compute_dtype(dtype)
    # the first n uniforms and the next n, as the rows of [2, n] (n may be symbolic: no slice starts at it)
    u = b.reshape(_unit(b, key, 2 * n, wide), shape=(2, n))
    u1 = b.sub(full(b, 1.0, wide, (n,)), b.reshape(b.slice(u, start_indices=(0, 0), limit_indices=(1, n),
                                                           strides=(1, 1)), shape=(n,)))
    u2 = b.reshape(b.slice(u, start_indices=(1, 0), limit_indices=(2, n), strides=(1, 1)), shape=(n,))
    radius = b.sqrt(b.mul(full(b, -2.0, wide, (n,)), b.log(u1)))
    z = b.mul(radius, b.cos(b.mul(full(b, 2.0 * math.pi, wide, (n,)), u2)))
    return b.reshape(compose.narrow(b, z, dtype), shape=shape)


def _dropout(b, attrs, x, key):
    p = attrs["p"]
    shape = tuple(x.shape)
    n = math.prod(shape)
    mantissa = b.shift_right_logical(_bits(b, key, n), full(b, 32 - _DROPOUT_BITS, _U32, (n,)))
    threshold = math.ceil(p * 2**_DROPOUT_BITS)
    keep = b.reshape(b.ge(mantissa, full(b, threshold, _U32, (n,))), shape=shape)
    kept = x if p == 0.0 else b.mul(x, full_like(b, 0.0 if p == 1.0 else 1.0 / (1.0 - p), x))
    return b.select(keep, kept, full_like(b, 0.0, x))


def _below(value: float, dtype: DType) -> float:
    """The largest ``dtype`` number below ``value`` (rounded to ``dtype`` first)."""
    v = np.asarray(value, dtype.numpy)
    return float(np.nextafter(v, np.asarray(-np.inf, dtype.numpy)))


def _check_key(op: str, t: TensorType, operand: int) -> None:
    if t != TensorType(_U32, (2,)):
        raise TypeRuleError(op, f"the key must be u32[2] (two threefry key words), got {t}", operand)


def _check_shape(op: str, shape) -> tuple:
    """A draw's shape: static, or with symbolic dims (a batch that changes), whose element count
    is then checked against the counter's range only when the sizes are known (the backends)."""
    if not all(isinstance(d, int) for d in shape):
        return tuple(shape)
    if math.prod(shape) >= 2**32:
        raise TypeRuleError(op, f"at most 2**32 - 1 elements per draw (the counter is one u32 word), got {shape}",
                            "shape")
    return tuple(shape)


def _random_bits_infer(types, attrs):
    _check_key("random_bits", types[0], 0)
    return (TensorType(_U32, _check_shape("random_bits", attrs["shape"])),)


def _float_draw_infer(name: str):
    def infer(types, attrs):
        _check_key(name, types[0], 0)
        shape = _check_shape(name, attrs["shape"])
        dtype = attrs["dtype"]
        if not dtype.is_float:
            raise TypeRuleError(name, f"dtype must be a float dtype, got {dtype.short}", "dtype")
        if "low" in attrs:
            _check_range(name, attrs["low"], attrs["high"], dtype)
        return (TensorType(dtype, shape),)

    return infer


def _check_range(op: str, low: float, high: float, dtype: DType) -> None:
    lo, hi = (np.asarray(v, dtype.numpy).astype(np.float64) for v in (low, high))
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi and hi - lo <= float(dtype.finfo.max)):
        raise TypeRuleError(op, f"need finite low < high with a finite span in {dtype.short}, "
                                f"got low={low}, high={high}", "low")


def _dropout_infer(types, attrs):
    x, key = types
    check_dtype("dropout", x, FLOAT_DTYPES)
    _check_shape("dropout", x.shape)
    _check_key("dropout", key, 1)
    if not 0.0 <= attrs["p"] <= 1.0:
        raise TypeRuleError("dropout", f"p must be in [0, 1], got {attrs['p']}", "p")
    return (x,)


def _random(*, accuracy: Accuracy = Accuracy.COMPOSITE, groups: tuple[Group, ...] = (), **fields):
    """A random composite: group RANDOM, and EXACT where its accuracy is."""
    exact = (Group.EXACT,) if accuracy is Accuracy.EXACT else ()
    return compose.composite(accuracy=accuracy, groups=(Group.RANDOM, *exact, *groups), **fields)


_KEY = (DType.uint32,)
_SHAPE = AttrSpec("shape", AttrKind.SHAPE, doc="shape of the draw (dims may be symbolic)")
_DTYPE = AttrSpec("dtype", AttrKind.DTYPE, doc="float dtype of the draw")

OPS = (
    _random(name="random_bits", operands=("key",), attrs=(_SHAPE,), infer=_random_bits_infer,
            decompose=_random_bits, dtypes=_KEY, accuracy=Accuracy.EXACT,
            doc="u32 bits: threefry-2x32 (20 rounds) of counters (0, i), xor of the two words (JAX's layout)"),
    _random(name="uniform", operands=("key",),
            attrs=(_SHAPE, _DTYPE, AttrSpec("low", AttrKind.FLOAT, 0.0), AttrSpec("high", AttrKind.FLOAT, 1.0)),
            infer=_float_draw_infer("uniform"), decompose=_uniform, dtypes=_KEY,
            doc="uniform in [low, high): JAX's mantissa method, clamped below high"),
    _random(name="normal", operands=("key",), attrs=(_SHAPE, _DTYPE), infer=_float_draw_infer("normal"),
            decompose=_normal, dtypes=_KEY, groups=(Group.COMPUTES_WIDE,),
            doc="standard normal by Box-Muller on 2n uniforms"),
    _random(name="dropout", operands=("x", "key"), attrs=(AttrSpec("p", AttrKind.FLOAT, doc="drop probability"),),
            infer=_dropout_infer, decompose=compose.widened(_dropout), dtypes=FLOAT_DTYPES,
            doc="keep x / (1 - p) where uniform(key) >= p, else 0"),
)
