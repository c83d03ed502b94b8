"""gather and scatter-add in the two forms models produce: ``x[idx]``, ``jnp.take`` and their
gradients (one indexed axis, whole slices along every other axis), and ``jnp.take_along_axis``
(cross-entropy with integer labels; every other axis a batching dim) and its gradient.

The IR's gather and scatter pick along one axis with indices of the operand's rank
(``np.take_along_axis`` and its inverse), so the indexed axis moves to the front, the
indices are broadcast over the other axes, and the result goes back to JAX's layout. An
out-of-range index is implementation-defined in the IR, so each JAX mode is built
explicitly: ``CLIP`` and ``PROMISE_IN_BOUNDS`` clamp, ``FILL_OR_DROP`` fills (gather) or
drops (scatter-add) what falls outside.
"""

from __future__ import annotations

import math

import numpy as np

from ....ir.dtypes import DType
from ....ir.graph import Value
from ..context import JaxContext, refuse


def _one_axis(operand_shape, slice_sizes, indexed, mapped, batching) -> int:
    """The indexed axis of a gather/scatter in the supported form, or a refusal saying why not."""
    if batching:
        refuse("batched indexing (operand_batching_dims) other than jnp.take_along_axis's")
    if len(indexed) != 1 or tuple(indexed) != tuple(mapped):
        refuse(f"indexing {len(mapped)} axes at once (parity translates one indexed axis)")
    axis = int(indexed[0])
    if slice_sizes is not None and any(s != (1 if d == axis else n)
                                       for d, (s, n) in enumerate(zip(slice_sizes, operand_shape))):
        refuse(f"slices of sizes {tuple(slice_sizes)} (parity translates whole slices beside the indexed axis)")
    return axis


def _positions(ctx: JaxContext, indices: Value, size: int, mode: str) -> tuple[Value, Value | None]:
    """The flat index list (clamped into [0, size)) and, for FILL_OR_DROP, which were in range."""
    b = ctx.b
    if indices.type.shape[-1] != 1:
        refuse(f"indices of shape {list(indices.type.shape)} whose last dim is not 1")
    n = math.prod(indices.type.shape[:-1])
    flat = b.reshape(indices, shape=(n,))
    dtype = flat.type.dtype
    lo, hi = ctx.full(0, dtype, (n,)), ctx.full(size - 1, dtype, (n,))
    in_range = None
    if mode == "FILL_OR_DROP":
        in_range = b.logical_and(b.ge(flat, lo), b.le(flat, hi))
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


def _along_axis_positions(ctx: JaxContext, x: Value, indices: Value, axis: int, mode: str):
    """Indices shaped as the IR's gather/scatter takes them (x's rank, size 1 at ``axis``), clamped,
    and (FILL_OR_DROP) which were in range, in the same shape."""
    b = ctx.b
    shape = tuple(1 if d == axis else n for d, n in enumerate(x.type.shape))
    where = b.reshape(indices, shape=shape)
    dtype, size = where.type.dtype, x.type.shape[axis]
    lo, hi = ctx.full(0, dtype, shape), ctx.full(size - 1, dtype, shape)
    in_range = b.logical_and(b.ge(where, lo), b.le(where, hi)) if mode == "FILL_OR_DROP" else None
    return b.clamp(lo, where, hi), in_range


def _gather_along_axis(ctx: JaxContext, x: Value, indices: Value, axis: int):
    b = ctx.b
    if any(s != 1 for s in ctx.params["slice_sizes"]) or tuple(ctx.params["dimension_numbers"].offset_dims):
        refuse("a batched gather of slices wider than one element")
    where, in_range = _along_axis_positions(ctx, x, indices, axis, ctx.params["mode"])
    picked = b.gather(x, where, axis=axis)
    if in_range is not None:
        fill = _fill_value(ctx.params.get("fill_value"), x.type.dtype)
        picked = b.select(in_range, picked, ctx.full(fill, x.type.dtype, where.type.shape))
    return b.reshape(picked, shape=tuple(ctx.out.shape))


def _scatter_add_along_axis(ctx: JaxContext, x: Value, indices: Value, updates: Value, axis: int):
    b = ctx.b
    if tuple(ctx.params["dimension_numbers"].update_window_dims):
        refuse("a batched scatter of slices wider than one element")
    where, in_range = _along_axis_positions(ctx, x, indices, axis, ctx.params["mode"])
    updates = b.reshape(updates, shape=where.type.shape)
    if in_range is not None:  # dropped: they add nothing
        updates = b.select(in_range, updates, ctx.full(0, x.type.dtype, where.type.shape))
    return b.scatter(x, where, updates, axis=axis, reduce="add", include_self=True)


def gather(ctx: JaxContext, x: Value, indices: Value):
    p, b = ctx.params, ctx.b
    dn = p["dimension_numbers"]
    along = _along_axis(x, indices, dn.collapsed_slice_dims, dn.start_index_map, dn.operand_batching_dims,
                        dn.start_indices_batching_dims)
    if along is not None:
        return _gather_along_axis(ctx, x, indices, along)
    axis = _one_axis(x.type.shape, p["slice_sizes"], dn.collapsed_slice_dims, dn.start_index_map,
                     dn.operand_batching_dims)
    moved, _ = _front(ctx, x, axis)
    rest = tuple(moved.type.shape[1:])
    flat, in_range = _positions(ctx, indices, x.type.shape[axis], p["mode"])
    n = flat.type.shape[0]
    picked = b.gather(moved, b.broadcast_in_dim(flat, shape=(n, *rest), broadcast_dimensions=(0,)), axis=0)
    batch = tuple(indices.type.shape[:-1])
    picked = b.reshape(picked, shape=(*batch, *rest))
    if in_range is not None:
        fill = _fill_value(p.get("fill_value"), x.type.dtype)
        mask = b.broadcast_in_dim(b.reshape(in_range, shape=batch), shape=(*batch, *rest),
                                  broadcast_dimensions=tuple(range(len(batch))))
        picked = b.select(mask, picked, ctx.full(fill, x.type.dtype, (*batch, *rest)))
    perm = _layout(len(batch), dn.offset_dims, ctx.out.rank)
    return picked if perm == tuple(range(len(perm))) else b.transpose(picked, permutation=perm)


def _fill_value(fill, dtype: DType):
    """JAX's default fill: NaN for floats, the lowest signed / highest unsigned int, True for bools."""
    if fill is not None:
        return fill
    if dtype.is_float:
        return np.nan
    if dtype.is_bool:
        return True
    info = np.iinfo(dtype.numpy)
    return info.min if dtype.is_signed else info.max


def scatter_add(ctx: JaxContext, x: Value, indices: Value, updates: Value):
    p, b = ctx.params, ctx.b
    dn = p["dimension_numbers"]
    along = _along_axis(x, indices, dn.inserted_window_dims, dn.scatter_dims_to_operand_dims,
                        dn.operand_batching_dims, dn.scatter_indices_batching_dims)
    if along is not None:
        return _scatter_add_along_axis(ctx, x, indices, updates, along)
    axis = _one_axis(x.type.shape, None, dn.inserted_window_dims, dn.scatter_dims_to_operand_dims,
                     dn.operand_batching_dims)
    moved, order = _front(ctx, x, axis)
    rest = tuple(moved.type.shape[1:])
    batch = tuple(indices.type.shape[:-1])
    # updates in JAX's layout -> [*batch, *rest] (the inverse of gather's last transpose)
    perm = _layout(len(batch), dn.update_window_dims, updates.type.rank)
    inverse = tuple(perm.index(i) for i in range(len(perm)))
    if tuple(updates.type.shape[i] for i in inverse[len(batch):]) != rest:
        refuse(f"updates of shape {list(updates.type.shape)} that are not whole slices of {x.type}")
    if inverse != tuple(range(len(inverse))):
        updates = b.transpose(updates, permutation=inverse)
    flat, in_range = _positions(ctx, indices, x.type.shape[axis], p["mode"])
    n = flat.type.shape[0]
    updates = b.reshape(updates, shape=(n, *rest))
    if in_range is not None:  # dropped: they add nothing
        mask = b.broadcast_in_dim(in_range, shape=(n, *rest), broadcast_dimensions=(0,))
        updates = b.select(mask, updates, ctx.full(0, x.type.dtype, (n, *rest)))
    where = b.broadcast_in_dim(flat, shape=(n, *rest), broadcast_dimensions=(0,))
    summed = b.scatter(moved, where, updates, axis=0, reduce="add", include_self=True)
    back = tuple(order.index(d) for d in range(len(order)))
    return summed if back == tuple(range(len(back))) else b.transpose(summed, permutation=back)


TABLE = {
    "gather": gather,
    "scatter-add": scatter_add,
    "scatter_add": scatter_add,
}
