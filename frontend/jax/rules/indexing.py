"""gather and the scatter family. Two forms models produce most have fast paths here:
``x[idx]``, ``jnp.take`` and their gradients (one indexed axis, whole slices along every other
axis), and ``jnp.take_along_axis`` (cross-entropy with integer labels; every other axis a
batching dim) and its gradient. Every other form (several indexed axes, partial slices, vmapped
indexing, ``.at[].set/mul/min/max``, ``scatter-sub``) goes through the general route of
:mod:`.indexing_general`, which the fast paths' results equal.

The IR's gather and scatter pick along one axis with indices of the operand's rank
(``np.take_along_axis`` and its inverse), so the indexed axis moves to the front, the
indices are broadcast over the other axes, and the result goes back to JAX's layout. An
out-of-range index is implementation-defined in the IR, so each JAX mode is built
explicitly, as XLA does (:func:`.indexing_general.fills`, :func:`.indexing_general.drops`): a
gather clamps in ``CLIP`` and ``PROMISE_IN_BOUNDS`` and fills in ``FILL_OR_DROP``; a
scatter-add clamps in ``CLIP`` and drops what falls outside in the other two.
"""

from __future__ import annotations

import math

import numpy as np

from ....ir.dtypes import DType
from ....ir.graph import Value
from ..context import JaxContext
from .indexing_general import MODES, drops, fills, general_gather, general_scatter


def _one_axis(operand_shape, slice_sizes, indexed, mapped, batching, indices_shape) -> int | None:
    """The indexed axis of a gather/scatter in the one-axis form (whole slices beside it), or None."""
    if batching or len(indexed) != 1 or tuple(indexed) != tuple(mapped) or indices_shape[-1] != 1:
        return None
    axis = int(indexed[0])
    if slice_sizes is not None and any(s != (1 if d == axis else n)
                                       for d, (s, n) in enumerate(zip(slice_sizes, operand_shape))):
        return None
    return axis


def _positions(ctx: JaxContext, indices: Value, size: int, masked: bool) -> tuple[Value, Value | None]:
    """The flat index list (clamped into [0, size)) and, if ``masked``, which were in range."""
    b = ctx.b
    n = math.prod(indices.type.shape[:-1])
    flat = b.reshape(indices, shape=(n,))
    dtype = flat.type.dtype
    lo, hi = ctx.full(0, dtype, (n,)), ctx.full(size - 1, dtype, (n,))
    in_range = b.logical_and(b.ge(flat, lo), b.le(flat, hi)) if masked else None
    return b.clamp(lo, flat, hi), in_range


def _front(ctx: JaxContext, x: Value, axis: int) -> tuple[Value, tuple[int, ...]]:
    order = (axis, *(d for d in range(x.type.rank) if d != axis))
    moved = x if order == tuple(range(x.type.rank)) else ctx.b.transpose(x, permutation=order)
    return moved, order


def _layout(batch_rank: int, window_dims, rank: int) -> tuple[int, ...]:
    """For an array laid out [*batch, *window]: the permutation to JAX's layout, where
    ``window_dims`` are the window dims' positions and the batch dims fill the rest in order."""
    window_dims = [int(d) for d in window_dims]
    batch = iter(range(batch_rank))
    return tuple(batch_rank + window_dims.index(j) if j in window_dims else next(batch) for j in range(rank))


def _along_axis(x: Value, indices: Value, indexed, mapped, operand_batching, indices_batching) -> int | None:
    """The indexed axis when the gather/scatter is ``take_along_axis`` (every other operand dim a
    batching dim paired, in order, with the indices' leading dims), else None."""
    if len(indexed) != 1 or tuple(indexed) != tuple(mapped) or not operand_batching:
        return None
    axis = int(indexed[0])
    others = tuple(d for d in range(x.type.rank) if d != axis)
    batch = tuple(indices.type.shape[:-1])  # jnp.take_along_axis keeps a size-1 dim for the axis
    if (tuple(operand_batching) != others or tuple(indices_batching) != tuple(range(len(others)))
            or batch[:len(others)] != tuple(x.type.shape[d] for d in others)
            or any(n != 1 for n in batch[len(others):]) or indices.type.shape[-1] != 1):
        return None
    return axis


def _along_axis_positions(ctx: JaxContext, x: Value, indices: Value, axis: int, masked: bool):
    """Indices shaped as the IR's gather/scatter takes them (x's rank, size 1 at ``axis``), clamped,
    and (``masked``) which were in range, in the same shape."""
    b = ctx.b
    shape = tuple(1 if d == axis else n for d, n in enumerate(x.type.shape))
    where = b.reshape(indices, shape=shape)
    dtype, size = where.type.dtype, x.type.shape[axis]
    lo, hi = ctx.full(0, dtype, shape), ctx.full(size - 1, dtype, shape)
    in_range = b.logical_and(b.ge(where, lo), b.le(where, hi)) if masked else None
    return b.clamp(lo, where, hi), in_range


def _gather_along_axis(ctx: JaxContext, x: Value, indices: Value, axis: int):
    b = ctx.b
    where, in_range = _along_axis_positions(ctx, x, indices, axis, fills(ctx.params["mode"]))
    picked = b.gather(x, where, axis=axis)
    if in_range is not None:
        fill = _fill_value(ctx.params.get("fill_value"), x.type.dtype)
        picked = b.select(in_range, picked, ctx.full(fill, x.type.dtype, where.type.shape))
    return b.reshape(picked, shape=tuple(ctx.out.shape))


def _scatter_add_along_axis(ctx: JaxContext, x: Value, indices: Value, updates: Value, axis: int):
    b = ctx.b
    where, in_range = _along_axis_positions(ctx, x, indices, axis, drops(ctx.params["mode"]))
    updates = b.reshape(updates, shape=where.type.shape)
    if in_range is not None:  # dropped: they add nothing
        updates = b.select(in_range, updates, ctx.full(0, x.type.dtype, where.type.shape))
    return b.scatter(x, where, updates, axis=axis, reduce="add", include_self=True)


def gather(ctx: JaxContext, x: Value, indices: Value):
    """``lax.gather``: the fast paths where they apply, else the general route."""
    p, b = ctx.params, ctx.b
    dn = p["dimension_numbers"]
    fill = _fill_value(p.get("fill_value"), x.type.dtype)
    along = _along_axis(x, indices, dn.collapsed_slice_dims, dn.start_index_map, dn.operand_batching_dims,
                        dn.start_indices_batching_dims)
    if (along is not None and p["mode"] in MODES and all(s == 1 for s in p["slice_sizes"])
            and not tuple(dn.offset_dims)):
        return _gather_along_axis(ctx, x, indices, along)
    axis = _one_axis(x.type.shape, p["slice_sizes"], dn.collapsed_slice_dims, dn.start_index_map,
                     dn.operand_batching_dims, indices.type.shape)
    if axis is None or p["mode"] not in MODES:
        return general_gather(ctx, x, indices, fill)
    moved, _ = _front(ctx, x, axis)
    rest = tuple(moved.type.shape[1:])
    flat, in_range = _positions(ctx, indices, x.type.shape[axis], fills(p["mode"]))
    n = flat.type.shape[0]
    picked = b.gather(moved, b.broadcast_in_dim(flat, shape=(n, *rest), broadcast_dimensions=(0,)), axis=0)
    batch = tuple(indices.type.shape[:-1])
    picked = b.reshape(picked, shape=(*batch, *rest))
    if in_range is not None:
        mask = b.broadcast_in_dim(b.reshape(in_range, shape=batch), shape=(*batch, *rest),
                                  broadcast_dimensions=tuple(range(len(batch))))
        picked = b.select(mask, picked, ctx.full(fill, x.type.dtype, (*batch, *rest)))
    perm = _layout(len(batch), dn.offset_dims, ctx.out.rank)
    return picked if perm == tuple(range(len(perm))) else b.transpose(picked, permutation=perm)


def _fill_value(fill, dtype: DType):
    """JAX's default fill: NaN for floats (NaN+0j for complex), the lowest signed / highest unsigned
    int, True for bools."""
    if fill is not None:
        return fill
    if dtype.is_float or dtype.is_complex:
        return np.nan
    if dtype.is_bool:
        return True
    info = np.iinfo(dtype.numpy)
    return info.min if dtype.is_signed else info.max


def scatter_add(ctx: JaxContext, x: Value, indices: Value, updates: Value):
    """``lax.scatter_add``: the fast paths where they apply, else the general route."""
    p, b = ctx.params, ctx.b
    dn = p["dimension_numbers"]
    if p["mode"] not in MODES:
        return general_scatter(ctx, x, indices, updates, "scatter-add")
    along = _along_axis(x, indices, dn.inserted_window_dims, dn.scatter_dims_to_operand_dims,
                        dn.operand_batching_dims, dn.scatter_indices_batching_dims)
    if along is not None and not tuple(dn.update_window_dims):
        return _scatter_add_along_axis(ctx, x, indices, updates, along)
    axis = _one_axis(x.type.shape, None, dn.inserted_window_dims, dn.scatter_dims_to_operand_dims,
                     dn.operand_batching_dims, indices.type.shape)
    batch = tuple(indices.type.shape[:-1])
    # updates in JAX's layout -> [*batch, *rest] (the inverse of gather's last transpose)
    perm = _layout(len(batch), dn.update_window_dims, updates.type.rank)
    inverse = tuple(perm.index(i) for i in range(len(perm)))
    rest = tuple(n for d, n in enumerate(x.type.shape) if d != axis)
    if axis is None or tuple(updates.type.shape[i] for i in inverse[len(batch):]) != rest:
        return general_scatter(ctx, x, indices, updates, "scatter-add")
    moved, order = _front(ctx, x, axis)
    if inverse != tuple(range(len(inverse))):
        updates = b.transpose(updates, permutation=inverse)
    flat, in_range = _positions(ctx, indices, x.type.shape[axis], drops(p["mode"]))
    n = flat.type.shape[0]
    updates = b.reshape(updates, shape=(n, *rest))
    if in_range is not None:  # dropped: they add nothing
        mask = b.broadcast_in_dim(in_range, shape=(n, *rest), broadcast_dimensions=(0,))
        updates = b.select(mask, updates, ctx.full(0, x.type.dtype, (n, *rest)))
    where = b.broadcast_in_dim(flat, shape=(n, *rest), broadcast_dimensions=(0,))
    summed = b.scatter(moved, where, updates, axis=0, reduce="add", include_self=True)
    back = tuple(order.index(d) for d in range(len(order)))
    return summed if back == tuple(range(len(back))) else b.transpose(summed, permutation=back)


def _general_scatter_rule(primitive: str):
    def rule(ctx: JaxContext, x: Value, indices: Value, updates: Value):
        return general_scatter(ctx, x, indices, updates, primitive)

    rule.__name__ = rule.__qualname__ = primitive.replace("-", "_")
    rule.__doc__ = f"``{primitive}`` in any form (rules/indexing_general.py)."
    return rule


_SUB = _general_scatter_rule("scatter-sub")
TABLE = {
    "gather": gather,
    "scatter-add": scatter_add,
    "scatter_add": scatter_add,
    "scatter-sub": _SUB,
    "scatter_sub": _SUB,
    **{name: _general_scatter_rule(name) for name in ("scatter", "scatter-mul", "scatter-min", "scatter-max")},
}
