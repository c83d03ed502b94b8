"""Error metrics against the float64 oracle: ULPs of the output dtype, relative error,
bit-exact comparison, and the check of one output against its bound.

**ULP.** ``ulp(dtype, v)`` is the spacing of ``dtype`` at magnitude ``|v|``: ``2**(e -
mantissa bits)`` with ``e`` the exponent of ``v`` clamped to the dtype's normal range, so
the spacing stays the subnormal spacing all the way down to 0 and the spacing of the
largest binade above ``max``. The error of a backend value ``a`` against the oracle
``o`` is ``|a - o| / ulp(dtype, s)`` where ``s`` is the scale the bound uses (``|o|`` for
elementwise classes). Infinities: ``a = ±inf`` counts as ``±2**emax`` (one ULP past the
largest finite), unless ``o`` rounded to the dtype is the same infinity (then the error
is 0); an infinite ``o`` must be matched exactly. NaN must meet NaN.

**Exact.** Values must be equal (NaN meets NaN, whatever its payload); the sign of a
zero counts unless the op declares it implementation-defined.

**Complex results** are measured part by part against the magnitude: the error of a
complex ``a`` against ``o`` is the larger of its real part's and its imaginary part's
error (each with the infinity and NaN rules above, in the part dtype), in ULPs of the part
dtype at ``|o|``. Where ``o`` has an infinite or NaN part (or one that rounds to inf in
the part dtype), ``a`` must have one too; which of the C99 Annex G forms (``inf + NaN·i``,
``NaN + NaN·i``, ...) is implementation-defined. A part that is tiny beside the other is thus held to the accuracy the
magnitude allows, not to its own (no complex algorithm gets a cancelling part right
relatively), while a swapped, conjugated or dropped part is off by about ``|o|``: 2**23
ULPs in c64. Exact bounds compare each part bit for bit.

Example::

    >>> from parity.ir import f32
    >>> float(ulp_error(f32, np.array(1.0), np.array(1.0 + 2**-23)))
    1.0
    >>> float(ulp(f32, np.array(0.0))) == 2.0**-149
    True
    >>> from parity.ir import c64
    >>> float(ulp_error(c64, np.array(3 + 4j), np.array(3 + (4 + 2**-21) * 1j, np.complex64)))  # |o| = 5
    1.0
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..ir.dtypes import DType
from ..ir.ops.conversion import round_float


def ulp(dtype: DType, v: np.ndarray) -> np.ndarray:
    """Spacing of ``dtype`` at the magnitude of ``v`` (float64 array; NaN/inf give the top
    spacing). A complex dtype's is its part dtype's spacing at ``|v|``."""
    fi = dtype.real_dtype.finfo
    v = np.abs(np.asarray(v)).astype(np.float64)
    finite = np.where(np.isfinite(v), v, 0.0)
    _, e = np.frexp(finite)  # v = m * 2**e with m in [0.5, 1)
    exponent = np.clip(e - 1, fi.minexp, fi.maxexp - 1)
    exponent = np.where(finite == 0, fi.minexp, exponent)  # frexp(0) has exponent 0: zero is subnormal spacing
    exponent = np.where(np.isfinite(v), exponent, fi.maxexp - 1)
    return np.ldexp(1.0, exponent - fi.nmant)


def _past_max(dtype: DType) -> float:
    return float(np.ldexp(1.0, dtype.finfo.maxexp))


def abs_error(dtype: DType, oracle: np.ndarray, actual: np.ndarray) -> np.ndarray:
    """|actual - oracle| with the infinity and NaN rules of the module docstring (complex:
    the larger of the parts' errors)."""
    if dtype.is_complex:
        o, a, part = np.asarray(oracle), np.asarray(actual), dtype.real_dtype
        err = np.maximum(abs_error(part, o.real, a.real), abs_error(part, o.imag, a.imag))
        # Which non-finite value results (C99 Annex G's inf + NaN·i, or NaN + NaN·i) is
        # implementation-defined; that the result is not finite is not. A part that rounds
        # past the part dtype's range makes the value infinite too.
        with np.errstate(all="ignore"):
            rounded = o.astype(dtype.numpy)
        return np.where(np.isfinite(rounded), err, np.where(np.isfinite(a), np.inf, 0.0))
    o = np.asarray(oracle, dtype=np.float64)
    a = np.asarray(actual).astype(np.float64)
    with np.errstate(all="ignore"):
        rounded = round_float(o, dtype).astype(np.float64)
        a_fin = np.where(np.isinf(a), np.copysign(_past_max(dtype), a), a)
        err = np.abs(a_fin - o)
        err = np.where(np.isinf(a) & (rounded == a), 0.0, err)  # o rounds to that same infinity
        err = np.where(np.isinf(o), np.where(a == o, 0.0, np.inf), err)
        both_nan = np.isnan(o) & np.isnan(a)
        one_nan = np.isnan(o) ^ np.isnan(a)
        err = np.where(both_nan, 0.0, np.where(one_nan, np.inf, err))
    return err


def ulp_error(dtype: DType, oracle: np.ndarray, actual: np.ndarray, scale: np.ndarray | None = None) -> np.ndarray:
    """Error in ULPs of ``dtype`` at ``scale`` (default: the oracle's magnitude)."""
    return abs_error(dtype, oracle, actual) / ulp(dtype, oracle if scale is None else scale)


def rel_error(oracle: np.ndarray, actual: np.ndarray) -> np.ndarray:
    """|actual - oracle| / |oracle| (0 where equal, inf where the oracle is 0 and they differ)."""
    o = np.asarray(oracle)
    a = np.asarray(actual)
    if o.dtype.kind == "c" or a.dtype.kind == "c":
        o, a = o.astype(np.complex128), a.astype(np.complex128)
        with np.errstate(all="ignore"):
            same = (a == o) | (np.isnan(a) & np.isnan(o))
            return np.where(same, 0.0, np.abs(a - o) / np.abs(o))
    o, a = o.astype(np.float64), a.astype(np.float64)
    with np.errstate(all="ignore"):
        same = (a == o) | (np.isnan(a) & np.isnan(o))
        return np.where(same, 0.0, np.abs(a - o) / np.abs(o))


def exact_mismatch(dtype: DType, oracle: np.ndarray, actual: np.ndarray, *, zero_sign: bool) -> np.ndarray:
    """Bool array: where ``actual`` differs from ``oracle`` (NaN meets NaN; ``zero_sign``
    makes -0.0 differ from 0.0)."""
    o, a = np.asarray(oracle), np.asarray(actual)
    if dtype.is_complex:
        part = dtype.real_dtype
        return (exact_mismatch(part, o.real, a.real, zero_sign=zero_sign)
                | exact_mismatch(part, o.imag, a.imag, zero_sign=zero_sign))
    if not dtype.is_float:
        return o != a
    o64, a64 = o.astype(np.float64), a.astype(np.float64)
    differ = (o64 != a64) & ~(np.isnan(o64) & np.isnan(a64))
    if zero_sign:
        differ |= (o64 == 0) & (a64 == 0) & (np.signbit(o64) != np.signbit(a64))
    return differ


@dataclass
class Measurement:
    """The comparison of one case's outputs with the oracle.

    ``max_ulp``: worst error in ULPs at the bound's scale (None for exact or non-float
    outputs); ``max_ratio``: worst error / allowed error (passes when <= 1; inf for an
    exact mismatch); ``mismatches``: elements over their bound; ``malformed``: the outputs
    were the wrong number, shape or dtype (no error figure exists, no deviation excuses it).
    """

    passed: bool
    max_ulp: float | None = None
    max_rel: float | None = None
    max_ratio: float = 0.0
    mismatches: int = 0
    compared: int = 0
    worst: dict = field(default_factory=dict)
    message: str = ""
    malformed: bool = False


def worst_element(index: tuple, output: int, oracle, actual, **extra) -> dict:
    """A JSON-friendly description of the worst element."""
    return {"output": output, "index": [int(i) for i in index], "expected": _num(oracle), "got": _num(actual), **extra}


def _num(v):
    v = np.asarray(v)
    if v.dtype == np.bool_:
        return bool(v)
    if v.dtype.kind in "iu":
        return int(v)
    if v.dtype.kind == "c":  # [real, imaginary]
        return [_num(v.real), _num(v.imag)]
    f = float(v.astype(np.float64))
    return f if np.isfinite(f) else repr(f)
