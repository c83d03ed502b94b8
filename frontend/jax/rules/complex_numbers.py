"""Complex-number lax primitives: ``complex``, ``real``, ``imag``, ``conj``, onto the IR's ops of
the same names (``ir/ops/complex_numbers.py``). ``abs`` of a complex number is in elementwise.py.

Example::

    >>> import jax.numpy as jnp
    >>> from jax import lax
    >>> from parity.frontend.jax import capture
    >>> capture(lambda z: lax.real(lax.conj(z)), jnp.ones(2, jnp.complex64)).op_counts()
    {'conj': 1, 'real': 1}
"""

from __future__ import annotations

from ....ir.graph import Value
from ..context import JaxContext


def complex_(ctx: JaxContext, re: Value, im: Value):
    shape = ctx.out.shape
    return ctx.b.op("complex", ctx.broadcast(re, shape), ctx.broadcast(im, shape))


def conj(ctx: JaxContext, x: Value):
    """``conj`` of a real operand (JAX's ``input_dtype`` float32) is that number as a complex one."""
    return ctx.b.op("conj", ctx.convert(x, ctx.out.dtype))


def real(ctx: JaxContext, x: Value):
    return ctx.b.op("real", x)


def imag(ctx: JaxContext, x: Value):
    return ctx.b.op("imag", x)


TABLE = {"complex": complex_, "conj": conj, "real": real, "imag": imag}
