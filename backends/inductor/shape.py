"""Shape and creation rules: data moved or made, never computed on (all bit-exact).

``pad`` is computed as a zero pad plus a mask of where the operand landed, then one
``where`` with the padding value: the value is a run-time scalar, which torch's pad
cannot take, and negative edge padding (a crop) comes for free from ``F.pad``.
Constants of one element become ``torch.full`` (Inductor folds them into its kernels);
larger ones are inputs of the compiled graph (:mod:`.lowering` passes them).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .context import InductorNodeContext, carried


def reshape(ctx: InductorNodeContext, x):
    return x.reshape(ctx.out.shape)


def broadcast_in_dim(ctx: InductorNodeContext, x):
    shape = ctx.out.shape
    view = [1] * len(shape)
    for i, d in enumerate(ctx.attrs["broadcast_dimensions"]):
        view[d] = ctx.in_types[0].shape[i]
    return x.reshape(view).expand(shape)


def transpose(ctx: InductorNodeContext, x):
    return x.permute(ctx.attrs["permutation"])


def slice_(ctx: InductorNodeContext, x):
    a = ctx.attrs
    return x[tuple(slice(s, lim, st) for s, lim, st in zip(a["start_indices"], a["limit_indices"], a["strides"]))]


def concatenate(ctx: InductorNodeContext, *xs):
    return torch.cat(xs, dim=ctx.attrs["dimension"])


def reverse(ctx: InductorNodeContext, x):
    dims = ctx.attrs["dimensions"]
    return torch.flip(x, dims) if dims else x


def _interior(x, dim: int, inner: int):
    """Insert ``inner`` zeros between the elements of ``dim``."""
    n = x.shape[dim]
    if inner == 0 or n <= 1:
        return x
    x = x.unsqueeze(dim + 1)
    gaps = list(x.shape)
    gaps[dim + 1] = inner
    spread = torch.cat([x, x.new_zeros(gaps)], dim=dim + 1)
    merged = list(x.shape[:dim + 1]) + list(x.shape[dim + 2:])
    merged[dim] = n * (inner + 1)
    return spread.reshape(merged).narrow(dim, 0, n * (inner + 1) - inner)


def pad_zeros(x, low, high, interior):
    """``x`` padded with zeros: interior first, then the edges (negative ones crop)."""
    for d, inner in enumerate(interior):
        x = _interior(x, d, inner)
    pads = []
    for lo, hi in zip(reversed(low), reversed(high)):  # F.pad takes the last dim first
        pads += [lo, hi]
    return F.pad(x, pads) if any(pads) else x


def pad(ctx: InductorNodeContext, x, value):
    a = ctx.attrs
    low, high, interior = a["edge_padding_low"], a["edge_padding_high"], a["interior_padding"]
    placed = pad_zeros(torch.ones_like(x, dtype=torch.bool), low, high, interior)
    return torch.where(placed, pad_zeros(x, low, high, interior), value)


def iota(ctx: InductorNodeContext):
    shape, dim = ctx.out.shape, ctx.attrs["dimension"]
    view = [1] * len(shape)
    view[dim] = shape[dim]
    count = torch.arange(shape[dim], dtype=torch.int64)  # counted exactly, rounded once
    return count.to(ctx.out_dtype).reshape(view).expand(shape)


def constant(ctx: InductorNodeContext):
    value = ctx.attrs["value"]
    item = value.reshape(-1)[0].item()
    return torch.full(tuple(value.shape), item, dtype=carried(ctx.out.dtype))


RULES = {
    "reshape": reshape, "broadcast_in_dim": broadcast_in_dim, "transpose": transpose, "slice": slice_,
    "concatenate": concatenate, "reverse": reverse, "pad": pad, "iota": iota, "constant": constant,
}
