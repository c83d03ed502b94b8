"""FFT rules: ``lax.fft`` over the trailing axes, scaled as the IR's ``norm`` says.

XLA's inverse transforms (IFFT, IRFFT) divide by N themselves, so the factor each rule
applies is the IR's scale relative to XLA's own. The factor multiplies the real and the
imaginary part separately: a complex product with (c + 0i) would turn an infinite part's
0·inf into NaN.

Example::

    >>> import numpy as np
    >>> from parity.ir import c64, f32
    >>> from .context import XlaNodeContext
    >>> ctx = XlaNodeContext({"ndims": 1, "norm": "ortho"}, (f32[4],), (c64[3],))
    >>> np.round(np.asarray(RULES["rfft"](ctx, np.ones(4, np.float32))), 6).tolist()
    [(2+0j), 0j, 0j]
"""

from __future__ import annotations

import math

import numpy as np
from jax import lax

from .context import Rule

_TYPES = {"fft": lax.FftType.FFT, "ifft": lax.FftType.IFFT, "rfft": lax.FftType.RFFT, "irfft": lax.FftType.IRFFT}
_INVERSE = ("ifft", "irfft")


def _factor(op: str, norm: str, n: int) -> float:
    """The IR's scale divided by XLA's (1/N for the inverse transforms, 1 otherwise)."""
    wanted = {"backward": 1.0, "ortho": 1 / math.sqrt(n), "forward": 1 / n}[norm] if op not in _INVERSE else \
        {"backward": 1 / n, "ortho": 1 / math.sqrt(n), "forward": 1.0}[norm]
    return wanted * n if op in _INVERSE else wanted


def _scaled(y, factor: float):
    if factor == 1.0:
        return y
    if np.iscomplexobj(np.empty(0, y.dtype)):
        part = lax.full_like(lax.real(y), factor)
        return lax.complex(lax.mul(lax.real(y), part), lax.mul(lax.imag(y), part))
    return lax.mul(y, lax.full_like(y, factor))


def _fft_rule(op: str) -> Rule:
    def rule(ctx, x):
        ndims = ctx.attrs["ndims"]
        out = ctx.out_types[0]
        lengths = tuple(int(d) for d in (out.shape if op == "irfft" else ctx.in_types[0].shape)[-ndims:])
        y = lax.fft(x, _TYPES[op], lengths)
        return _scaled(y, _factor(op, ctx.attrs["norm"], math.prod(lengths)))

    return rule


RULES: dict[str, Rule] = {op: _fft_rule(op) for op in _TYPES}
