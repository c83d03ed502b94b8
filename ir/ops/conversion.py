"""Conversion primitives: ``convert`` (value-preserving, rounding) and ``bitcast_convert``.

``convert`` rounds once, to nearest even, from the *exact* input value. NumPy's own casts
are not enough for that: ml_dtypes casts float64 to bfloat16 through float32 (rounding
twice) and int64 does not fit float64, so :func:`round_float` goes through round-to-odd.

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, evaluate, f64, bf16
    >>> b = GraphBuilder()
    >>> x = b.input(f64[1])
    >>> g = b.build([b.convert(x, dtype=bf16)])
    >>> float(evaluate(g, [np.array([1 + 2**-8 + 2**-40])])[0][0])  # above the tie: rounds up
    1.0078125
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..dtypes import ALL_DTYPES, COMPLEX_DTYPES, DType
from ..errors import TypeRuleError
from ..opdef import Accuracy, AttrKind, AttrSpec, Group, Kind, OpDef

_UINT_OF_WIDTH = {16: np.uint16, 32: np.uint32, 64: np.uint64}


def _to_odd(rounded: np.ndarray, exact_minus_rounded_sign: np.ndarray) -> np.ndarray:
    """Turn a round-to-nearest result into round-to-odd.

    ``exact_minus_rounded_sign`` is the sign of (exact - rounded) per element: 0 where the
    rounding was exact. Inexact results are truncated toward zero and get their last bit
    set; rounding that to a format >= 2 bits narrower is then correctly rounded.
    """
    inexact = exact_minus_rounded_sign != 0
    # A nonzero result that is further from zero than the exact value steps back; a zero
    # result is already truncated (and keeps its sign).
    overshot = inexact & (rounded != 0) & (exact_minus_rounded_sign != np.sign(rounded))
    truncated = np.where(overshot, np.nextafter(rounded, rounded.dtype.type(0)), rounded)
    bits = truncated.view(_UINT_OF_WIDTH[truncated.dtype.itemsize * 8])
    return np.where(inexact, bits | 1, bits).view(truncated.dtype)


def _float64_to_bfloat16(x: np.ndarray) -> np.ndarray:
    narrow = x.astype(np.float32)
    wide = narrow.astype(np.float64)
    side = np.where((x == wide) | np.isnan(x), 0.0, np.sign(x - wide))  # x - wide keeps its sign
    result = _to_odd(narrow, side).astype(DType.bfloat16.numpy)
    # ml_dtypes canonicalizes NaNs; keep the payload's top bits as a bit-level cast would.
    nan_bits = (narrow.view(np.uint32) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), nan_bits.view(DType.bfloat16.numpy), result)


def _int64_to_float64_odd(x: np.ndarray) -> np.ndarray:
    """int64 → float64 rounded to odd (exact where the value fits 53 bits)."""
    high = (x & ~np.int64(0xFFFFFFFF)).astype(np.float64)  # <= 32 significant bits: exact
    low = (x & np.int64(0xFFFFFFFF)).astype(np.float64)  # in [0, 2**32): exact
    total = high + low
    # TwoSum: the exact error of high + low, so the sign of (exact - total) is known.
    low_part = total - high
    error = (high - (total - low_part)) + (low - low_part)
    return _to_odd(total, np.sign(error))


def round_float(x: np.ndarray, dtype: DType) -> np.ndarray:
    """Round numbers (any NumPy int, bool or float array) once, to nearest even, into ``dtype``.

    Example::

        >>> import numpy as np
        >>> from parity.ir import bf16, f32
        >>> float(round_float(np.array(2**24 + 2**16 + 1, np.int64), bf16))  # past the tie
        16908288.0
        >>> float(round_float(np.array(2**60 + 2**36 + 1), f32)) == 2.0**60 + 2.0**37
        True
    """
    if not dtype.is_float:
        raise TypeError(f"round_float rounds to a float dtype, not {dtype.short}")
    x = np.asarray(x)
    if x.dtype == dtype.numpy:
        return x
    with np.errstate(all="ignore"):  # overflow to inf and inf - inf are expected here
        return _round_float(x, dtype)


def _round_float(x: np.ndarray, dtype: DType) -> np.ndarray:
    if x.dtype == np.int64:
        x = _int64_to_float64_odd(x) if dtype is not DType.float64 else x.astype(np.float64)
    else:
        x = x.astype(np.float64)  # exact for every other IR dtype
    if dtype is DType.bfloat16:
        return _float64_to_bfloat16(x)
    return x.astype(dtype.numpy)  # NumPy rounds float64 → f16/f32 once


def _float_to_int(x: np.ndarray, dtype: DType) -> np.ndarray:
    """Truncate toward zero; NaN → 0; out of range (and ±inf) saturates."""
    info = dtype.iinfo
    low, high_excl = float(info.min), float(info.max) + 1.0  # both powers of two: exact
    t = np.trunc(x)
    nan, above, below = np.isnan(t), t >= high_excl, t < low
    safe = np.where(nan | above | below, 0.0, t).astype(dtype.numpy)
    return np.where(above, info.max, np.where(below, info.min, safe)).astype(dtype.numpy)


def _convert_infer(types, attrs):
    src, dst = types[0].dtype, attrs["dtype"]
    if src.is_complex and not dst.is_complex:
        raise TypeRuleError("convert", f"{src.short} → {dst.short} would drop the imaginary part; take the real "
                                       f"op's result (and convert that) instead", "dtype")
    return (types[0].with_dtype(dst),)


def _convert_ref(ctx, x):
    src, dst = ctx.in_types[0].dtype, ctx.out_types[0].dtype
    if dst.is_complex:  # a real operand is the real part; the imaginary part is +0.0
        real = x.real if src.is_complex else _convert_ref(replace(ctx, out_types=(ctx.out.with_dtype(dst.real_dtype),)), x)
        imag = x.imag if src.is_complex else np.zeros(x.shape)
        out = np.empty(x.shape, np.complex128 if ctx.oracle else dst.numpy)
        out.real, out.imag = real, imag  # each part rounded once (complex128 → c64 by part)
        return out
    if dst.is_bool:
        return x != 0  # NaN != 0, so NaN → true
    if dst.is_float:
        if ctx.oracle:
            return x.astype(np.float64)  # the oracle never rounds
        return round_float(x, dst)
    if src.is_float:
        return _float_to_int(x, dst)
    return x.astype(dst.numpy)  # int/bool → int: two's complement wrap


def _bitcast_infer(types, attrs):
    src, dst = types[0].dtype, attrs["dtype"]
    if src.is_bool:
        raise TypeRuleError("bitcast_convert", "bool has no defined bit layout; convert it instead", 0)
    if dst.is_bool:
        raise TypeRuleError("bitcast_convert", "bool has no defined bit layout; convert to it instead", "dtype")
    if src.bits != dst.bits:
        raise TypeRuleError(
            "bitcast_convert",
            f"operand has {src.bits}-bit {src.short} but {dst.short} has {dst.bits} bits; bit widths must be equal",
            "dtype",
        )
    return (types[0].with_dtype(dst),)


def _bitcast_ref(ctx, x):
    src = ctx.in_types[0].dtype
    # Floats arrive widened to float64 (and unrounded in oracle mode): back to their bits first.
    bits = round_float(x, src) if src.is_float else x
    return bits.view(ctx.out_types[0].dtype.numpy)


OPS = (
    OpDef(
        name="convert",
        kind=Kind.PRIMITIVE,
        operands=("x",),
        attrs=(AttrSpec("dtype", AttrKind.DTYPE, doc="the result dtype"),),
        infer=_convert_infer,
        dtypes=ALL_DTYPES + COMPLEX_DTYPES,
        accuracy=Accuracy.CORRECTLY_ROUNDED,  # exact wherever the result is an int or bool
        groups=frozenset({Group.ELEMENTWISE, Group.NO_FUSED_ADD}),
        reference=_convert_ref,
        doc="Value conversion: float→float and int→float round to nearest even once; "
        "float→int truncates toward zero; x→bool is x != 0; int→int wraps; a real x → complex is "
        "x + 0i, complex → complex rounds each part; complex → real is refused (take real).",
        implementation_defined=(
            "float→int of NaN or out-of-range values (reference: NaN → 0, saturate to the int range)",
        ),
    ),
    OpDef(
        name="bitcast_convert",
        kind=Kind.PRIMITIVE,
        operands=("x",),
        attrs=(AttrSpec("dtype", AttrKind.DTYPE, doc="the result dtype, of the operand's bit width"),),
        infer=_bitcast_infer,
        dtypes=tuple(d for d in ALL_DTYPES if not d.is_bool),
        accuracy=Accuracy.EXACT,
        groups=frozenset({Group.ELEMENTWISE, Group.EXACT, Group.NO_FUSED_ADD}),
        reference=_bitcast_ref,
        doc="The bits of each element reinterpreted as another dtype of the same width.",
        implementation_defined=(
            "signalling NaN operands (the reference may quiet them: floats pass through float64)",
        ),
    ),
)
