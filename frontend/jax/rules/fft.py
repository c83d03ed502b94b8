"""``fft``: JAX's one Fourier primitive, its four ``fft_type`` s onto the IR's ops of the same
names (``ir/ops/fft.py``).

JAX's ``fft_lengths`` name the sizes of the 1 to 3 transformed trailing axes: the operand's
(FFT, IFFT, RFFT) or, for IRFFT, the result's, whose last entry is the signal's length (odd
or even; the operand's last axis is length // 2 + 1). JAX scales like numpy's "backward"
norm: IFFT and IRFFT divide by the product of the lengths, FFT and RFFT do not; the IR's
``norm="backward"`` is that convention. ``jnp.fft``'s ``norm="ortho"``/``"forward"`` are
multiplies around the primitive, translated as they come.

Example::

    >>> import jax.numpy as jnp
    >>> from parity.frontend.jax import capture
    >>> counts = capture(lambda x: jnp.fft.irfft(jnp.fft.rfft(x), n=7), jnp.ones(7)).op_counts()
    >>> counts["rfft"], counts["irfft"]
    (1, 1)
"""

from __future__ import annotations

from ....ir.graph import Value
from ..context import JaxContext

# lax.FftType's members by name (compat.py passes an enum param by its member's name)
IR_OP = {"FFT": "fft", "IFFT": "ifft", "RFFT": "rfft", "IRFFT": "irfft"}


def fft(ctx: JaxContext, x: Value):
    kind = ctx.params["fft_type"]
    lengths = tuple(int(n) for n in ctx.params["fft_lengths"])
    length = {"length": lengths[-1]} if kind == "IRFFT" else {}
    return ctx.b.op(IR_OP[kind], x, ndims=len(lengths), norm="backward", **length)


TABLE = {"fft": fft}
