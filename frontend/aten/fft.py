"""torch.fft's aten ops: ``_fft_c2c``, ``_fft_r2c``, ``_fft_c2r`` as the IR's fft family.

The IR transforms the last ``ndims`` axes; aten names any set of dims. The dims are moved
to the end (in the order given: ``_fft_r2c`` halves the last one, ``_fft_c2r`` restores
it), transformed, and moved back. aten's ``normalization`` (0: none, 1: 1/√N, 2: 1/N) and
direction give the IR's ``norm``. torch.stft reaches here decomposed by torch (framing,
a window multiply, ``_fft_r2c``) only when frontend/spectral.py could not keep it whole.

Example::

    >>> import torch
    >>> from torch.fx.experimental.proxy_tensor import make_fx
    >>> from parity.frontend.translate import fx_to_ir
    >>> gm = make_fx(lambda x: torch.fft.rfft(x, dim=0, norm="ortho"))(torch.ones(8, 3))
    >>> [(n.op, dict(n.attrs)) for n in fx_to_ir(gm).graph.nodes if n.op == "rfft"]
    [('rfft', {'ndims': 1, 'norm': 'ortho'})]
"""

from __future__ import annotations

from ..context import TranslationContext, unsupported

# aten normalization → norm, for a forward transform and for an inverse one.
_FORWARD_NORM = {0: "backward", 1: "ortho", 2: "forward"}
_INVERSE_NORM = {0: "forward", 1: "ortho", 2: "backward"}


def _to_end(ctx: TranslationContext, x, dims):
    """x with ``dims`` moved to the end (in that order), and the permutation that undoes it."""
    axes = [ctx.axis(d, x.type.rank) for d in dims]
    if len(set(axes)) != len(axes):
        unsupported(f"an FFT over repeated dims {list(dims)}")
    order = [i for i in range(x.type.rank) if i not in axes] + axes
    if order == list(range(x.type.rank)):
        return x, None
    inverse = [order.index(i) for i in range(len(order))]
    return ctx.b.transpose(x, permutation=tuple(order)), tuple(inverse)


def _back(ctx: TranslationContext, y, inverse):
    return y if inverse is None else ctx.b.transpose(y, permutation=inverse)


def _norm(normalization: int, forward: bool) -> str:
    table = _FORWARD_NORM if forward else _INVERSE_NORM
    if normalization not in table:
        unsupported(f"FFT normalization mode {normalization}")
    return table[normalization]


def fft_c2c(ctx: TranslationContext, x, dim, normalization, forward):
    moved, inverse = _to_end(ctx, x, dim)
    op = "fft" if forward else "ifft"
    return _back(ctx, ctx.b.op(op, moved, ndims=len(dim), norm=_norm(normalization, forward)), inverse)


def fft_r2c(ctx: TranslationContext, x, dim, normalization, onesided):
    moved, inverse = _to_end(ctx, x, dim)
    norm = _norm(normalization, True)
    if onesided:
        y = ctx.b.rfft(moved, ndims=len(dim), norm=norm)
    else:  # the whole spectrum: a complex transform of the real signal
        y = ctx.b.fft(ctx.convert(moved, moved.type.dtype.complex_dtype), ndims=len(dim), norm=norm)
    return _back(ctx, y, inverse)


def fft_c2r(ctx: TranslationContext, x, dim, normalization, last_dim_size):
    moved, inverse = _to_end(ctx, x, dim)
    half = last_dim_size // 2 + 1
    have = moved.type.shape[-1]
    if have != half:  # torch trims or zero-pads the half-spectrum to the signal's length
        rank = moved.type.rank
        if have > half:
            moved = ctx.b.slice(moved, start_indices=(0,) * rank, limit_indices=(*moved.type.shape[:-1], half),
                                strides=(1,) * rank)
        else:
            zero = ctx.const(0, moved.type.dtype)
            moved = ctx.b.pad(moved, zero, edge_padding_low=(0,) * rank,
                              edge_padding_high=(0,) * (rank - 1) + (half - have,), interior_padding=(0,) * rank)
    y = ctx.b.irfft(moved, ndims=len(dim), length=last_dim_size, norm=_norm(normalization, False))
    return _back(ctx, y, inverse)


TABLE = {
    "_fft_c2c.default": fft_c2c,
    "_fft_r2c.default": fft_r2c,
    "_fft_c2r.default": fft_c2r,
}
