"""Discrete Fourier transforms over the last ``ndims`` axes: ``fft ifft rfft irfft``.

``fft``/``ifft`` take a complex tensor to one of the same type. ``rfft`` takes a real
tensor (f32 → c64, f64 → c128) to the non-redundant half of its spectrum: the last axis
of size n becomes n//2 + 1. ``irfft`` inverts it: its last axis must be ``length``//2 + 1
and becomes ``length``; the imaginary parts of the bins a real signal's spectrum has real
(bin 0, and bin n/2 for even n) are ignored, as every c2r transform does. Every
transformed axis has a static size of at least 1.

``norm`` follows torch.fft (and numpy.fft): with N the product of the transformed sizes
(for irfft, of the result's), ``"backward"`` scales the inverse transforms by 1/N and the
forward ones not at all, ``"forward"`` the other way round, and ``"ortho"`` both by
1/√N. The reference is NumPy's pocketfft in complex128 (float64 for irfft's result).

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, evaluate, f32
    >>> b = GraphBuilder()
    >>> x = b.input(f32[4])
    >>> spectrum = b.rfft(x, ndims=1, norm="backward")
    >>> g = b.build([spectrum, b.irfft(spectrum, ndims=1, length=4, norm="backward")])
    >>> [a.tolist() for a in evaluate(g, [np.array([1, 2, 3, 4], np.float32)])]
    [[(10+0j), (-2+2j), (-2+0j)], [1.0, 2.0, 3.0, 4.0]]
"""

from __future__ import annotations

import numpy as np

from ..dtypes import COMPLEX_DTYPES, DType
from ..errors import TypeRuleError
from ..opdef import Accuracy, AttrKind, AttrSpec, Kind, OpDef
from ..types import TensorType
from .rules import check_dtype, is_symbolic

NORMS = ("backward", "ortho", "forward")
# Which results of a real inverse transform are NaN, ±inf or finite once its half-spectrum
# holds a NaN or an infinity depends on the algorithm: pocketfft's real-data butterflies
# never multiply by a twiddle that is exactly 0 (a quarter turn is a swap), so NaN + 0i in
# bin 3 of 16 leaves x[4] and x[12] finite, while a complex inverse of the whole Hermitian
# spectrum, or a different factorisation, computes NaN·0 there (and inf - inf elsewhere).
# (The complex results of fft/ifft/rfft only have to be non-finite where the reference's
# are, which every algorithm meets: docs/conformance.md.)
NONFINITE_SPECTRUM = "which results are NaN, infinite or finite when a signal's half-spectrum holds a NaN or inf"
_REAL = (DType.float32, DType.float64)

_NDIMS = AttrSpec("ndims", AttrKind.INT, doc="how many trailing axes are transformed (>= 1)")
_NORM = AttrSpec("norm", AttrKind.STR, "backward", choices=NORMS, doc="torch.fft's scaling mode")
_LENGTH = AttrSpec("length", AttrKind.INT, doc="the size of the result's last axis (>= 1)")


def _check_axes(op: str, x: TensorType, ndims: int) -> tuple[int, ...]:
    """The transformed axes (the last ``ndims``), each static and nonempty."""
    if not 1 <= ndims <= x.rank:
        raise TypeRuleError(op, f"ndims {ndims} must be between 1 and the operand's rank {x.rank} ({x})", "ndims")
    axes = tuple(range(x.rank - ndims, x.rank))
    for axis in axes:
        size = x.shape[axis]
        if is_symbolic(size) or size < 1:
            raise TypeRuleError(op, f"transformed axis {axis} of {x} must have a static size >= 1", 0)
    return axes


def _infer(op: str):
    def infer(types, attrs):
        x = types[0]
        check_dtype(op, x, _REAL if op == "rfft" else COMPLEX_DTYPES)
        _check_axes(op, x, attrs["ndims"])
        if op == "fft" or op == "ifft":
            return (x,)
        if op == "rfft":
            return (TensorType(x.dtype.complex_dtype, (*x.shape[:-1], x.shape[-1] // 2 + 1)),)
        length = attrs["length"]
        if length < 1 or x.shape[-1] != length // 2 + 1:
            raise TypeRuleError(op, f"the last axis of {x} must be length // 2 + 1 = {max(length, 1) // 2 + 1} "
                                    f"for length {length} (>= 1)", "length")
        return (TensorType(x.dtype.real_dtype, (*x.shape[:-1], length)),)

    return infer


def _reference(op: str):
    def reference(ctx, x):
        a = ctx.attrs
        axes = tuple(range(x.ndim - a["ndims"], x.ndim))
        if op == "irfft":
            sizes = tuple(x.shape[i] for i in axes[:-1]) + (a["length"],)
            return np.fft.irfftn(x, s=sizes, axes=axes, norm=a["norm"])
        fn = {"fft": np.fft.fftn, "ifft": np.fft.ifftn, "rfft": np.fft.rfftn}[op]
        return fn(x, axes=axes, norm=a["norm"])

    return reference


_DOCS = {
    "fft": "discrete Fourier transform (exponent -2πi jk/n) over the last ndims axes",
    "ifft": "inverse discrete Fourier transform (exponent +2πi jk/n) over the last ndims axes",
    "rfft": "fft of a real signal, the non-negative frequencies only: last axis n → n//2 + 1",
    "irfft": "inverse of rfft: a Hermitian half-spectrum (last axis length//2 + 1) → a real signal of length",
}


def _fft_op(name: str) -> OpDef:
    attrs = (_NDIMS, _LENGTH, _NORM) if name == "irfft" else (_NDIMS, _NORM)
    return OpDef(
        name=name,
        kind=Kind.PRIMITIVE,
        operands=("x",),
        attrs=attrs,
        infer=_infer(name),
        dtypes=_REAL if name == "rfft" else COMPLEX_DTYPES,
        accuracy=Accuracy.ACCUMULATION,  # its bound grows with log n (conformance/bounds.py)
        reference=_reference(name),
        doc=_DOCS[name],
        implementation_defined=(NONFINITE_SPECTRUM,) if name == "irfft" else (),
    )


OPS = tuple(_fft_op(name) for name in ("fft", "ifft", "rfft", "irfft"))
