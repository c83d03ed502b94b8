"""Fourier transforms: ``fft ifft rfft irfft`` over one and two trailing axes, every norm.

Sizes run from 1 to 2¹⁶, powers of two and not (primes among them: a prime size takes a
different algorithm from a power of two); ``--quick`` keeps one of them (8 points) with the edge cases. The ``specials`` cases put a NaN, an infinity or a huge value into one signal
and leave the others plain: the transform of the poisoned signal is not finite (for irfft,
which of its results are is implementation-defined but for a NaN at bin 0, which poisons
every result in any algorithm: the inf signal is masked, the NaN one compared), and its
neighbours must stay exact-ish. ``irfft``'s half-spectra have arbitrary imaginary parts at
bin 0 (and n/2), which the op ignores.
"""

from __future__ import annotations

import numpy as np

from ...ir.dtypes import DType
from ...ir.ops import OP_TABLE
from ...ir.ops.fft import NONFINITE_SPECTRUM, NORMS
from ...ir.types import tensor as _t
from .. import values as V
from ..case import Case, ErrorCase
from .common import EDGE, LAYOUT, case, mask_where, ops_of

IR_FAMILIES = ("fft",)
OPS = ops_of(IR_FAMILIES)

_REAL = (DType.float32, DType.float64)
# (name, batch shape, transformed sizes, tags): the signal shape is batch + sizes
_SHAPES = [
    ("n8", (3,), (8,), ()), ("n12_2d", (2,), (6, 12), ()), ("n1", (4,), (1,), (LAYOUT,)),
    ("empty_batch", (0,), (8,), (LAYOUT,)), ("n7_prime", (2,), (7,), ()), ("n100", (2,), (100,), ()),
    ("n1024", (2,), (1024,), ()), ("n1000", (2,), (1000,), ()),
    ("n4096", (2,), (4096,), ()), ("n4099_prime", (2,), (4099,), ()),
    ("n65536", (1,), (65536,), ()), ("n60000", (1,), (60000,), ()),
]


def _signal(op: str, d: DType, batch, sizes):
    """The draw of a case: what ``op`` takes for ``sizes`` transformed points."""
    if op == "irfft":
        half = tuple(sizes[:-1]) + (sizes[-1] // 2 + 1,)
        return lambda rng: (V.normal(rng, d.complex_dtype, batch + half, 1.0),)
    dtype = d if op == "rfft" else d.complex_dtype
    return lambda rng: (V.normal(rng, dtype, batch + tuple(sizes), 1.0),)


def _attrs(op: str, sizes, norm: str = "backward") -> dict:
    attrs = {"ndims": len(sizes), "norm": norm}
    if op == "irfft":
        attrs["length"] = sizes[-1]
    return attrs


def _poisoned(op: str, d: DType):
    """Four signals of 16 points; the first three hold a NaN, an inf and 1e30 (f32: 1e30 squared
    overflows). irfft's NaN sits in bin 0, which reaches every result with weight 1: every
    algorithm gives NaN throughout, so that signal is compared (a lost NaN fails)."""
    nan_at = 0 if _implementation_defined(op) else 3

    def inputs(rng):
        (x,) = _signal(op, d, (4,), (16,))(rng)
        x = x.copy()
        x[0, nan_at], x[1, 5], x[2, 0] = np.nan, np.inf, 1e30
        return (x,)
    return inputs


def _implementation_defined(op: str) -> bool:
    return NONFINITE_SPECTRUM in OP_TABLE[op].implementation_defined


def _mask(op: str):
    """irfft: a signal whose half-spectrum holds a NaN or inf elsewhere than a NaN in bin 0 is
    implementation-defined (ir/ops/fft.py, NONFINITE_SPECTRUM) and masked whole; the NaN-at-DC
    signal and the finite ones are compared."""
    if not _implementation_defined(op):
        return None

    def compared(x):
        finite = np.isfinite(x)
        nan_at_dc = np.isnan(x[..., :1]).all(axis=-1, keepdims=True) & finite[..., 1:].all(axis=-1, keepdims=True)
        return finite.all(axis=-1, keepdims=True) | nan_at_dc
    return mask_where(compared)


def _op_cases(op: str) -> list[Case]:
    out = []
    for d in _REAL:
        sweep = d if op == "rfft" else d.complex_dtype  # the op's dtype: its operand's
        for name, batch, sizes, tags in _SHAPES:
            out.append(case(op, sweep, name, _signal(op, d, batch, sizes), _attrs(op, sizes), tags=tags or ("random",)))
        for norm in NORMS:
            out.append(case(op, sweep, f"norm_{norm}", _signal(op, d, (2,), (4, 10)), _attrs(op, (4, 10), norm)))
        out.append(case(op, sweep, "specials", _poisoned(op, d), _attrs(op, (16,)), tags=(EDGE,), mask=_mask(op)))
    return out


def cases() -> list[Case]:
    return [c for op in OPS for c in _op_cases(op)]


f32, c64 = DType.float32, DType.complex64

ERRORS = (
    ErrorCase("fft", (_t(f32, 8),), {"ndims": 1}, "dtype f32 is not accepted", "real_operand"),
    ErrorCase("rfft", (_t(c64, 8),), {"ndims": 1}, "dtype c64 is not accepted", "complex_operand"),
    ErrorCase("fft", (_t(c64, 8),), {"ndims": 2}, "ndims 2 must be between 1 and the operand's rank 1", "ndims"),
    ErrorCase("fft", (_t(c64, 8),), {"ndims": 1, "norm": "none"}, "must be one of", "norm"),
    ErrorCase("irfft", (_t(c64, 8),), {"ndims": 1, "length": 8}, "must be length // 2 + 1 = 5", "length"),
    ErrorCase("fft", (_t(c64, 0),), {"ndims": 1}, "must have a static size >= 1", "empty_axis"),
)
