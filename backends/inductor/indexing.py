"""Indexing rules: gather, scatter, dynamic_slice, dynamic_update_slice.

The IR clamps out-of-range gather/scatter indices to ``[0, dim - 1]`` (torch would read
out of bounds in the generated C++), and dynamic slice starts to ``[0, dim - size]``.
Dynamic starts become a gather/scatter over the window's positions, so the compiled
graph has no data-dependent shapes.
"""

from __future__ import annotations

import torch
from torch._prims_common import is_contiguous_or_false

from .context import InductorNodeContext


def _clamped(indices, size: int):
    return torch.clamp(indices.to(torch.int64), 0, size - 1)


def gather(ctx: InductorNodeContext, x, indices):
    axis = ctx.attrs["axis"]
    size = ctx.in_types[0].shape[axis]
    if size == 0:  # every index is out of range: zeros, as the reference gives
        return torch.zeros(ctx.out.shape, dtype=x.dtype)
    return torch.gather(x, axis, _clamped(indices, size))


def scatter(ctx: InductorNodeContext, x, indices, updates):
    axis = ctx.attrs["axis"]
    size = ctx.in_types[0].shape[axis]
    if size == 0 or updates.numel() == 0:
        return x.clone()
    index = _clamped(indices, size)
    reduce = ctx.attrs["reduce"]
    if reduce == "replace":
        # Inductor's index_put writes into an expanded operand's one element (a cache made by
        # broadcasting a zero: every row came out the last one written; torch.compile does the
        # same with torch 2.13): a dense copy first, which an input (contiguous) never needs.
        dense = x if is_contiguous_or_false(x) else x.clone(memory_format=torch.contiguous_format)
        return torch.index_put(dense, _scatter_coordinates(index, axis), updates)
    return torch.scatter_reduce(x, axis, index, updates, TORCH_REDUCE[reduce], include_self=ctx.attrs["include_self"])


def _scatter_coordinates(index, axis: int) -> tuple:
    """``torch.scatter(x, axis, index, u)`` as ``x.index_put(coordinates, u)``: ``index`` along
    ``axis``, each other dim its own positions. Inductor writes an ``index_put`` whose result is
    copied back into its input into that input's memory (its reinplacing pass: a static KV cache
    updated in place, InductorExecutable.in_place); a ``scatter`` it always writes into a copy."""
    coordinates = []
    for d in range(index.dim()):
        if d == axis:
            coordinates.append(index)
        else:
            view = [1] * index.dim()
            view[d] = index.shape[d]
            coordinates.append(torch.arange(index.shape[d], dtype=torch.int64).reshape(view))
    return tuple(coordinates)


# the IR's reduce mode -> torch.scatter_reduce's (its amax/amin propagate NaN, as the IR's max/min do)
TORCH_REDUCE = {"add": "sum", "mul": "prod", "max": "amax", "min": "amin"}


def _window_index(x_shape, sizes, starts):
    """Per dim, the clamped window's positions: ``start + arange(size)``, start in [0, dim - size]."""
    positions = []
    for d, (dim, size, start) in enumerate(zip(x_shape, sizes, starts)):
        begin = torch.clamp(start.reshape(()).to(torch.int64), 0, dim - size)
        view = [1] * len(x_shape)
        view[d] = size
        positions.append((begin + torch.arange(size, dtype=torch.int64)).reshape(view))
    return positions


def dynamic_slice(ctx: InductorNodeContext, x, *starts):
    sizes = ctx.out.shape
    out = x
    for d, index in enumerate(_window_index(x.shape, sizes, starts)):
        shape = list(out.shape)
        shape[d] = sizes[d]
        out = torch.gather(out, d, index.expand(shape))
    return out


def dynamic_update_slice(ctx: InductorNodeContext, x, update, *starts):
    index = _window_index(x.shape, update.shape, starts)
    return torch.index_put(x, tuple(index), update)


RULES = {
    "gather": gather, "scatter": scatter,
    "dynamic_slice": dynamic_slice, "dynamic_update_slice": dynamic_update_slice,
}
