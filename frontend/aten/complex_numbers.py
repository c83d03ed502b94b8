"""Complex-number aten ops: parts, polar form, conjugation and the real views of complex tensors.

``view_as_real`` is a [..., 2] real tensor of (real, imaginary) pairs and ``view_as_complex``
reads one back; in the IR both are copies built from ``real``/``imag``/``complex`` (the IR
has no aliasing views). Conjugation is eager in the IR: ``_conj`` and ``conj_physical``
are ``conj``, and ``resolve_conj`` / ``resolve_neg`` (which only materialise torch's lazy
bits) are the identity.

Example::

    >>> import torch
    >>> from torch.fx.experimental.proxy_tensor import make_fx
    >>> from parity.frontend.translate import fx_to_ir
    >>> gm = make_fx(lambda z: torch.view_as_real(z.conj().resolve_conj()))(torch.ones(2, dtype=torch.complex64))
    >>> sorted({n.op for n in fx_to_ir(gm).graph.nodes})
    ['concatenate', 'conj', 'imag', 'real', 'reshape']
"""

from __future__ import annotations

from ...ir.graph import Value
from ..context import TranslationContext, unsupported


def real(ctx: TranslationContext, z):
    return ctx.b.real(z) if z.type.dtype.is_complex else z


def imag(ctx: TranslationContext, z):
    if not z.type.dtype.is_complex:
        unsupported("imag of a real tensor (torch raises too)")
    return ctx.b.imag(z)


def conj(ctx: TranslationContext, z):
    if not isinstance(z, Value):  # a Python number (the gradient of x * 2j conjugates 2j)
        return ctx.full(complex(z).conjugate(), ctx.out.dtype, ctx.out.shape)
    return ctx.b.conj(z) if z.type.dtype.is_complex else z  # a real tensor is its own conjugate


def resolve(ctx: TranslationContext, z):
    return z


def angle(ctx: TranslationContext, z):
    if z.type.dtype.is_complex:
        return ctx.b.angle(z)
    # torch: π for negative x, 0 otherwise, NaN kept (an int x gives a float result)
    x = ctx.convert(z, ctx.out.dtype)
    shape = x.type.shape
    pi = ctx.b.select(ctx.b.lt(x, ctx.full(0, x.type.dtype, shape)), ctx.full(3.141592653589793, x.type.dtype, shape),
                      ctx.full(0, x.type.dtype, shape))
    return ctx.b.select(ctx.b.ne(x, x), x, pi)


def complex_(ctx: TranslationContext, re, im):
    dtype = ctx.out.dtype.real_dtype
    re, im = ctx.elementwise([re, im], dtype)
    return ctx.b.complex(re, im)


def polar(ctx: TranslationContext, magnitude, phase):
    dtype = ctx.out.dtype.real_dtype
    magnitude, phase = ctx.elementwise([magnitude, phase], dtype)
    return ctx.b.complex(ctx.b.mul(magnitude, ctx.b.cos(phase)), ctx.b.mul(magnitude, ctx.b.sin(phase)))


def view_as_real(ctx: TranslationContext, z):
    pair = tuple(z.type.shape) + (1,)
    parts = [ctx.reshape(ctx.b.op(part, z), pair) for part in ("real", "imag")]
    return ctx.b.concatenate(*parts, dimension=z.type.rank)


def view_as_complex(ctx: TranslationContext, x):
    rank = x.type.rank
    if rank == 0 or x.type.shape[-1] != 2:
        unsupported(f"view_as_complex of {x.type}: the last dim must be 2")
    whole = tuple(x.type.shape[:-1])
    parts = [ctx.reshape(ctx.b.slice(x, start_indices=(0,) * (rank - 1) + (k,), limit_indices=whole + (k + 1,),
                                     strides=(1,) * rank), whole) for k in (0, 1)]
    return ctx.b.complex(*parts)


TABLE = {
    "real.default": real, "imag.default": imag,
    "conj.default": conj, "_conj.default": conj, "conj_physical.default": conj,
    "resolve_conj.default": resolve, "resolve_neg.default": resolve,
    "angle.default": angle, "complex.default": complex_, "polar.default": polar,
    "view_as_real.default": view_as_real, "view_as_complex.default": view_as_complex,
}
