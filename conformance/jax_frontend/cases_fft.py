"""Frontend cases of ``fft`` (``frontend/jax/rules/fft.py``): ``lax.fft`` of each ``FftType``.

The op database's cases of the IR's ``fft ifft rfft irfft`` (``conformance/opdb/fft.py``:
sizes 1 to 4099, primes and powers of two, one and two axes, the NaN/inf/huge ``specials``
with irfft's implementation-defined signals masked) in float32/complex64 and
float64/complex128, with the ``"backward"`` norm JAX's primitive has, run as ``lax.fft`` with
the same ``fft_lengths``; plus three transformed axes (the most JAX takes) and irfft's odd
and even lengths side by side. Each case names its ``FftType``: ``jax:fft[c64]:IRFFT:n7_prime``.
Held to the IR op's bound (one rounding node: the transform).
"""

from __future__ import annotations

import functools

from ...ir.dtypes import DType
from .. import values as V
from ..opdb import fft as opdb_fft
from ..opdb.common import RANDOM
from .spec import FrontendCase

TYPE_OF = {"fft": "FFT", "ifft": "IFFT", "rfft": "RFFT", "irfft": "IRFFT"}
_SKIPPED = ("n65536", "n60000")  # the op database's long sizes: the backends' rows run them, JAX's CPU FFT is slow
_REAL = (DType.float32, DType.float64)


def _lax_fft(x, *, fft_type: str, lengths: tuple):
    from jax import lax

    return lax.fft(x, getattr(lax.FftType, fft_type), lengths)


def _lengths(op: str, shape: tuple, ndims: int, length: int | None) -> tuple:
    """JAX's ``fft_lengths``: the transformed sizes, the result's for IRFFT."""
    sizes = tuple(shape[len(shape) - ndims:])
    return (*sizes[:-1], length) if op == "irfft" else sizes


def _from_opdb() -> list[FrontendCase]:
    import numpy as np

    out = []
    for c in opdb_fft.cases():
        if c.attrs.get("norm", "backward") != "backward" or c.name in _SKIPPED:
            continue
        (probe,) = c.inputs(np.random.default_rng(0))
        lengths = _lengths(c.op, probe.shape, c.attrs["ndims"], c.attrs.get("length"))
        fun = functools.partial(_lax_fft, fft_type=TYPE_OF[c.op], lengths=lengths)
        out.append(FrontendCase("fft", c.dtype, fun, c.inputs, f"{TYPE_OF[c.op]}:{c.name}", c.tags, mask=c.mask))
    return out


def _three_axes() -> list[FrontendCase]:
    """Three transformed axes (odd and even sizes) and irfft of odd and even lengths over two."""
    out = []
    for d in _REAL:
        c = d.complex_dtype
        for op, dtype, shape, lengths in (("fft", c, (2, 3, 4, 5), (3, 4, 5)), ("ifft", c, (2, 3, 4, 5), (3, 4, 5)),
                                          ("rfft", d, (2, 3, 4, 6), (3, 4, 6)),
                                          ("irfft", c, (2, 3, 4, 4), (3, 4, 7)),
                                          ("irfft", c, (2, 3, 4, 4), (3, 4, 6)),
                                          ("irfft", c, (3, 5, 6), (5, 11)), ("irfft", c, (3, 5, 6), (5, 10))):
            fun = functools.partial(_lax_fft, fft_type=TYPE_OF[op], lengths=lengths)
            name = f"{TYPE_OF[op]}:axes{len(lengths)}_n{'x'.join(map(str, lengths))}"
            out.append(FrontendCase("fft", dtype, fun, lambda rng, dtype=dtype, shape=shape: (
                V.normal(rng, dtype, shape, 1.0),), name, (RANDOM,)))
    return out


CASES = {"fft": lambda: _from_opdb() + _three_axes()}
