"""Indexing rules: gather, scatter, dynamic_slice, dynamic_update_slice.

The IR clamps out-of-range gather/scatter indices to ``[0, dim - 1]`` (torch would read
out of bounds in the generated C++), and dynamic slice starts to ``[0, dim - size]``.
Dynamic starts become a gather/scatter over the window's positions, so the compiled
graph has no data-dependent shapes.
"""

from __future__ import annotations

import torch

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
        return torch.scatter(x, axis, index, updates)
    return torch.scatter_reduce(x, axis, index, updates, TORCH_REDUCE[reduce], include_self=ctx.attrs["include_self"])


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
