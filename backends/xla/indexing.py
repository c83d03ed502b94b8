"""Indexing rules: gather/scatter along an axis and dynamic slices, indices clamped as the IR says.

Out-of-range indices read and write the nearest valid element (the reference clamps);
dynamic slice starts never wrap negative.

Example::

    >>> import numpy as np
    >>> from parity.ir import f32, i64
    >>> from .context import XlaNodeContext
    >>> ctx = XlaNodeContext({"axis": 0}, (f32[3], i64[2]), (f32[2],))
    >>> np.asarray(RULES["gather"](ctx, np.array([1., 2., 3.], np.float32), np.array([2, 9]))).tolist()
    [3.0, 3.0]
"""

from __future__ import annotations

import numpy as np
from jax import lax

from ...ir.dtypes import DType
from ...ir.ops.indexing import scatter_identity
from .context import Rule, full, is_known, size_value


def _clamped_indices(indices, dtype: DType, size):
    """Indices as i32/i64 clamped to [0, size - 1] (what the reference does out of range).
    A symbolic size (export) may exceed i32, so it clamps in i64."""
    narrow = dtype not in (DType.int64, DType.uint32) and is_known(size) and size <= 2**31 - 1
    wide = np.int32 if narrow else np.int64
    idx = lax.convert_element_type(indices, wide)
    return lax.clamp(np.array(0, wide), idx, size_value(size - 1, wide))


def _along_axis(ctx, x, indices):
    """(x cut to indices' extent off the axis, batching dims, clamped [..., 1] indices).

    Take-along-axis is a batched gather/scatter: every dim but the axis is a batching
    dim, whose sizes must agree, so x is cut to indices' extent there (the IR allows
    indices to be smaller; nothing beyond them is read or written).
    """
    axis = ctx.attrs["axis"]
    x_t, i_t = ctx.in_types[:2]
    limits = [n if d == axis else m for d, (n, m) in enumerate(zip(x_t.shape, i_t.shape))]
    part = lax.slice(x, [0] * x_t.rank, limits)
    batch = tuple(d for d in range(x_t.rank) if d != axis)
    return part, batch, _clamped_indices(indices, i_t.dtype, x_t.shape[axis])[..., None]


def _gather(ctx, x, indices):
    axis = ctx.attrs["axis"]
    if ctx.in_types[0].shape[axis] == 0 or ctx.out.numel == 0:
        return full(0, ctx.out)
    part, batch, idx = _along_axis(ctx, x, indices)
    dnums = lax.GatherDimensionNumbers(
        offset_dims=(), collapsed_slice_dims=(axis,), start_index_map=(axis,),
        operand_batching_dims=batch, start_indices_batching_dims=batch)
    return lax.gather(part, idx, dnums, slice_sizes=[1] * part.ndim, mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS)


def _scatter(ctx, x, indices, updates):
    axis = ctx.attrs["axis"]
    if ctx.in_types[0].shape[axis] == 0 or ctx.in_types[1].numel == 0:
        return x
    part, batch, idx = _along_axis(ctx, x, indices)
    dnums = lax.ScatterDimensionNumbers(
        update_window_dims=(), inserted_window_dims=(axis,), scatter_dims_to_operand_dims=(axis,),
        operand_batching_dims=batch, scatter_indices_batching_dims=batch)
    mode = lax.GatherScatterMode.PROMISE_IN_BOUNDS
    reduce = ctx.attrs["reduce"]
    if not ctx.attrs["include_self"]:  # written elements start from the identity: every write is equal
        start = lax.full_like(updates, scatter_identity(reduce, ctx.in_types[0].dtype))
        part = lax.scatter(part, idx, start, dnums, mode=mode)
    part = _SCATTERS[reduce](part, idx, updates, dnums, mode=mode)
    return lax.dynamic_update_slice(x, part, [0] * x.ndim, allow_negative_indices=False)


# reduce mode -> lax's scatter (scatter_max/min propagate NaN, as the IR's max/min do)
_SCATTERS = {"replace": lax.scatter, "add": lax.scatter_add, "mul": lax.scatter_mul,
             "max": lax.scatter_max, "min": lax.scatter_min}



def _starts(ctx, starts, first: int):
    # u32 starts above INT32_MAX must still clamp high, so widen them before XLA sees them.
    return [lax.convert_element_type(s, np.int64) if t.dtype is DType.uint32 else s
            for s, t in zip(starts, ctx.in_types[first:])]


def _dynamic_slice(ctx, x, *starts):
    return lax.dynamic_slice(x, _starts(ctx, starts, 1), ctx.out.shape, allow_negative_indices=False)


def _dynamic_update_slice(ctx, x, update, *starts):
    return lax.dynamic_update_slice(x, update, _starts(ctx, starts, 2), allow_negative_indices=False)


RULES: dict[str, Rule] = {
    "gather": _gather, "scatter": _scatter,
    "dynamic_slice": _dynamic_slice, "dynamic_update_slice": _dynamic_update_slice,
}
