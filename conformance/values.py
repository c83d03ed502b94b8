"""Value pools for the op database: special values per dtype, seeded random draws, layouts.

Everything here returns NumPy arrays of an IR dtype (bfloat16 from ml_dtypes). Random
draws take the case's ``np.random.Generator`` so that each case is deterministic. A complex
dtype draws its real and imaginary parts independently, each as its part dtype would.

Example::

    >>> from parity.ir import f16
    >>> v = specials(f16)
    >>> bool(np.isnan(v).any() and np.isinf(v).any() and (v == 0).sum() == 2)
    True
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..ir.dtypes import DType


def cast(values, dtype: DType) -> np.ndarray:
    """``values`` in ``dtype`` (rounded to nearest, as NumPy casts; complex values part by part)."""
    with np.errstate(all="ignore"):
        if dtype.is_complex:
            return np.asarray(values, dtype=np.complex128).astype(dtype.numpy)
        return np.asarray(values, dtype=np.float64 if dtype.is_float else None).astype(dtype.numpy)


def from_parts(real: np.ndarray, imag: np.ndarray, dtype: DType) -> np.ndarray:
    """The complex array of ``dtype`` with these parts (NaN and inf parts kept as they are)."""
    out = np.empty(np.broadcast_shapes(np.shape(real), np.shape(imag)), dtype.numpy)
    out.real, out.imag = real, imag
    return out


def _parts(draw, rng: np.random.Generator, dtype: DType, shape, *args) -> np.ndarray:
    """A complex draw: ``draw`` for the real part, then for the imaginary part, in the part dtype."""
    part = dtype.real_dtype
    return from_parts(draw(rng, part, shape, *args), draw(rng, part, shape, *args), dtype)


def specials(dtype: DType) -> np.ndarray:
    """The edge values of ``dtype``: NaN, ±inf, ±0, subnormals, extremes, ties, ±1.

    Ints: the extremes, -1, 0, 1 and a few ordinary values; bool: both values.
    """
    if dtype.is_bool:
        return np.array([False, True])
    if dtype.is_complex:
        # Every special part against a few plain and special partners, both ways round.
        parts, partners = specials(dtype.real_dtype), cast([0.0, -0.0, 1.0, -2.5, np.inf, np.nan], dtype.real_dtype)
        re, im = grid(parts, partners)
        return np.concatenate([from_parts(re, im, dtype), from_parts(im, re, dtype)])
    if dtype.is_integer:
        info = dtype.iinfo
        vals = [info.min, info.min + 1, -1, 0, 1, 2, 7, info.max - 1, info.max]
        return np.array([v for v in vals if info.min <= v <= info.max], dtype=dtype.numpy)
    fi = dtype.finfo
    tiny, sub, big, eps = float(fi.tiny), float(fi.smallest_subnormal), float(fi.max), float(fi.eps)
    vals = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, sub, -sub, tiny - sub, tiny, -tiny,
            big, -big, eps, 1.0 + eps, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, -7.25, 100.0, 1e-3, np.pi]
    return cast(vals, dtype)


def normal(rng: np.random.Generator, dtype: DType, shape: Sequence[int], scale: float = 3.0) -> np.ndarray:
    """Normal draws in a float dtype; small random ints for int dtypes; coin flips for bool."""
    if dtype.is_bool:
        return np.asarray(rng.random(shape) < 0.5)
    if dtype.is_complex:
        return _parts(normal, rng, dtype, shape, scale)
    if dtype.is_integer:
        info = dtype.iinfo
        lo, hi = max(info.min, -50), min(info.max, 50)
        return np.asarray(rng.integers(lo, hi, size=shape, endpoint=True)).astype(dtype.numpy)
    return cast(rng.standard_normal(shape) * scale, dtype)


def uniform(rng: np.random.Generator, dtype: DType, shape: Sequence[int], lo: float, hi: float) -> np.ndarray:
    if dtype.is_complex:
        return _parts(uniform, rng, dtype, shape, lo, hi)
    return cast(rng.uniform(lo, hi, size=shape), dtype)


def full_range(rng: np.random.Generator, dtype: DType, shape: Sequence[int]) -> np.ndarray:
    """Ints over the whole range (wraparound); floats with log-uniform magnitudes over most
    of the dtype's exponent range, random signs, and a sprinkle of subnormals."""
    if dtype.is_bool:
        return np.asarray(rng.random(shape) < 0.5)
    if dtype.is_complex:
        return _parts(full_range, rng, dtype, shape)
    if dtype.is_integer:
        info = dtype.iinfo
        return np.asarray(rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype.numpy))
    fi = dtype.finfo
    low = float(np.log2(float(fi.smallest_subnormal)))
    high = float(np.log2(float(fi.max))) - 0.01
    mag = np.exp2(rng.uniform(low, high, size=shape))
    return cast(mag * rng.choice([-1.0, 1.0], size=shape), dtype)


def subnormals(rng: np.random.Generator, dtype: DType, shape: Sequence[int]) -> np.ndarray:
    """Random subnormal values of a float dtype (both signs), with a few zeros."""
    if dtype.is_complex:
        return _parts(subnormals, rng, dtype, shape)
    fi = dtype.finfo
    steps = rng.integers(0, 2 ** int(fi.nmant), size=shape)
    return cast(steps * float(fi.smallest_subnormal) * rng.choice([-1.0, 1.0], size=shape), dtype)


def small_normals(rng: np.random.Generator, dtype: DType, shape: Sequence[int], root: int = 1) -> np.ndarray:
    """Positive normals just above ``dtype``'s smallest: tiny·[2, 8) (``root`` 2: their square
    roots, whose products are such values). Sums of a few of them stay below tiny·2**8, where a
    backend that flushes normals to zero shows (mutation testing's ``flushed_normals``)."""
    tiny = float(dtype.finfo.tiny)
    return cast((tiny * rng.uniform(2.0, 8.0, size=shape)) ** (1.0 / root), dtype)


def magnitudes(rng: np.random.Generator, dtype: DType, shape: Sequence[int], lo_exp: float, hi_exp: float,
               signed: bool = True) -> np.ndarray:
    """Log-uniform magnitudes 2**[lo_exp, hi_exp), optionally with random signs."""
    if dtype.is_complex:
        return _parts(magnitudes, rng, dtype, shape, lo_exp, hi_exp, signed)
    mag = np.exp2(rng.uniform(lo_exp, hi_exp, size=shape))
    if signed:
        mag = mag * rng.choice([-1.0, 1.0], size=shape)
    return cast(mag, dtype)


def grid(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every pair (a[i], b[j]) as two flat arrays (for binary edge cases)."""
    x, y = np.meshgrid(a, b, indexing="ij")
    return x.reshape(-1).copy(), y.reshape(-1).copy()


def non_contiguous(a: np.ndarray) -> np.ndarray:
    """The same values as a strided view (every other element of a wider buffer)."""
    if a.ndim == 0:
        return a
    wide = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), dtype=a.dtype)
    wide[..., ::2] = a
    view = wide[..., ::2]
    assert not view.flags.c_contiguous or a.shape[-1] <= 1
    return view


def transposed(a: np.ndarray) -> np.ndarray:
    """The same values as a transposed view of a copy in the opposite order (F-order)."""
    return np.asfortranarray(a) if a.ndim >= 2 else non_contiguous(a)
