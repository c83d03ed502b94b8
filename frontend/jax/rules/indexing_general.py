"""gather and the scatter family in XLA's general form (StableHLO ``gather``/``scatter``): any
``offset_dims``/``collapsed_slice_dims``/``start_index_map``, batching dims, slice sizes, and
each :class:`jax.lax.GatherScatterMode`. rules/indexing.py tries its one-axis forms first (they
also take symbolic sizes, which this route refuses) and falls back here.

The IR's gather and scatter pick along one axis, so the operand is flattened to 1-D and the
graph computes, for every element of the result (gather) or of the updates (scatter), its
linear position in the operand: per operand dim, the clamped start component broadcast over
the batch dims, plus an iota over the window (offset) dim that walks that operand dim, or,
for a batching dim, an iota over the batch dim paired with it; each times the dim's stride.
One IR gather (or scatter) on the flat operand and a reshape give the result.

Out-of-range starts, by mode (JAX's ``GatherScatterMode``):

* gather ``CLIP`` and ``PROMISE_IN_BOUNDS``: each start clamped into ``[0, dim - slice_size]``
  (what XLA does for both);
* gather ``FILL_OR_DROP``: a slice with any start outside ``[0, dim - slice_size]`` is all
  ``fill_value`` (JAX's default: NaN, the lowest signed / highest unsigned int, True);
* scatter ``CLIP``: starts clamped as for gather; ``FILL_OR_DROP`` and ``PROMISE_IN_BOUNDS``
  (XLA drops there too): an update window with any start out of range is dropped whole. The
  flat operand gets one extra slot, dropped updates are sent there, and it is sliced off.

Duplicate positions: ``scatter`` (replace) writes one of the updates aimed at an element, and
which one is implementation-defined, in the IR as in XLA; the reducing primitives combine all
of them. Example (``x[i, j]``, two indexed axes, falls back here)::

    >>> import jax.numpy as jnp, numpy as np, parity.jax
    >>> x = jnp.arange(12.0).reshape(3, 4)
    >>> f = parity.jax.jit(lambda x: x[jnp.array([2, 0]), jnp.array([1, 3])], backend="reference")
    >>> np.asarray(f(x)).tolist()
    [9.0, 3.0]
"""

from __future__ import annotations

import math

import numpy as np

from ....ir.dtypes import DType
from ....ir.graph import Value
from ..context import JaxContext, refuse

# JAX scatter primitive -> the IR scatter's reduce (scatter-sub adds the negated updates)
REDUCES = {"scatter": "replace", "scatter-add": "add", "scatter_add": "add", "scatter-sub": "add",
           "scatter_sub": "add", "scatter-mul": "mul", "scatter-min": "min", "scatter-max": "max"}


def index_dtype(size: int) -> DType:
    """int32 positions unless the operand has more elements than int32 counts."""
    return DType.int32 if size <= np.iinfo(np.int32).max else DType.int64


def _static(what: str, shape) -> tuple[int, ...]:
    if not all(isinstance(d, int) for d in shape):
        refuse(f"a general gather/scatter whose {what} has a symbolic size ({list(shape)}): its positions are "
               "computed from static sizes; export with that size concrete, or index one axis with whole "
               "slices (x[idx], jnp.take, jnp.take_along_axis), which parity translates with symbolic sizes")
    return tuple(int(d) for d in shape)


MODES = ("CLIP", "FILL_OR_DROP", "PROMISE_IN_BOUNDS")  # GatherScatterMode's names that parity translates


def fills(mode: str) -> bool:
    """Whether a gather in ``mode`` fills out-of-range slices (else it clamps their starts, as XLA
    does for CLIP and PROMISE_IN_BOUNDS)."""
    return mode == "FILL_OR_DROP"


def drops(mode: str) -> bool:
    """Whether a scatter in ``mode`` drops out-of-range update windows (XLA does for
    PROMISE_IN_BOUNDS too), else it clamps their starts."""
    return mode != "CLIP"


def _mode(mode: str) -> str:
    if mode not in MODES:
        refuse(f"gather/scatter mode {mode} (parity translates {', '.join(MODES)}); use one of those "
               "(jnp's mode='clip' or 'fill')")
    return mode


def _start(ctx: JaxContext, indices: Value, k: int, bound: int, dtype: DType, masked: bool):
    """Start component ``k`` (``indices[..., k]``) clamped into ``[0, bound]`` as ``dtype``, and
    (``masked``) whether it was in range. Compared in a dtype that holds both the index and
    the bound: widened first where that is exact, else narrowed after the clamp."""
    b = ctx.b
    rank, batch = indices.type.rank, tuple(indices.type.shape[:-1])
    comp = b.reshape(b.slice(indices, start_indices=(0,) * (rank - 1) + (k,), limit_indices=(*batch, k + 1),
                             strides=(1,) * rank), shape=batch)
    if np.can_cast(comp.type.dtype.numpy, dtype.numpy, "safe"):
        comp = ctx.convert(comp, dtype)
    lo, hi = ctx.full(0, comp.type.dtype, batch), ctx.full(bound, comp.type.dtype, batch)
    ok = b.logical_and(b.ge(comp, lo), b.le(comp, hi)) if masked else None
    return ctx.convert(b.clamp(lo, comp, hi), dtype), ok


def _strides(shape) -> list[int]:
    return [math.prod(shape[d + 1:]) for d in range(len(shape))]


def _linear(ctx: JaxContext, x_shape, indices: Value, shape, batch_dims, *, starts, bounds, batching,
            windows, dtype: DType, masked: bool):
    """Each element's flat position in the operand, an array of ``shape`` (the gather's result or
    the scatter's updates), and (``masked``) whether every start was in range, or None.

    ``batch_dims``: the dims of ``shape`` that walk the indices' leading dims, in order;
    ``starts``: operand dim of each start component; ``bounds``: its largest valid start;
    ``batching``: (operand dim, indices dim) pairs; ``windows``: (operand dim, dim of ``shape``)."""
    b = ctx.b
    stride = _strides(x_shape)
    terms, ok = [], None

    def scaled(v, d):
        return v if stride[d] == 1 else b.mul(v, ctx.full(stride[d], dtype, shape))

    for k, (d, bound) in enumerate(zip(starts, bounds)):
        comp, in_range = _start(ctx, indices, k, bound, dtype, masked)
        terms.append(scaled(b.broadcast_in_dim(comp, shape=shape, broadcast_dimensions=batch_dims), d))
        if in_range is not None:
            ok = in_range if ok is None else b.logical_and(ok, in_range)
    for d, j in batching:
        terms.append(scaled(b.iota(dtype=dtype, shape=shape, dimension=batch_dims[j]), d))
    for d, j in windows:
        terms.append(scaled(b.iota(dtype=dtype, shape=shape, dimension=j), d))
    linear = terms[0] if terms else ctx.full(0, dtype, shape)
    for t in terms[1:]:
        linear = b.add(linear, t)
    if ok is not None:
        ok = b.broadcast_in_dim(ok, shape=shape, broadcast_dimensions=batch_dims)
    return linear, ok


def general_gather(ctx: JaxContext, x: Value, indices: Value, fill) -> Value:
    """``lax.gather`` in any form; ``fill`` is the FILL_OR_DROP fill value."""
    p, b = ctx.params, ctx.b
    dn = p["dimension_numbers"]
    x_shape, out_shape = _static("operand", x.type.shape), _static("result", ctx.out.shape)
    _static("index array", indices.type.shape)
    mode = _mode(p["mode"])
    sizes = [int(s) for s in p["slice_sizes"]]
    n, total = math.prod(x_shape), math.prod(out_shape)
    if total == 0 or n == 0:  # nothing to pick (a slice size bounds its dim: an empty operand gives an empty result)
        return ctx.full(0, x.type.dtype, out_shape)
    offset = [int(d) for d in dn.offset_dims]
    skipped = {int(d) for d in (*dn.collapsed_slice_dims, *dn.operand_batching_dims)}
    window_operand = [d for d in range(len(x_shape)) if d not in skipped]
    starts = [int(d) for d in dn.start_index_map]
    dtype = index_dtype(n)
    linear, ok = _linear(ctx, x_shape, indices, out_shape,
                         tuple(d for d in range(len(out_shape)) if d not in offset),
                         starts=starts, bounds=[x_shape[d] - sizes[d] for d in starts],
                         batching=list(zip((int(d) for d in dn.operand_batching_dims),
                                           (int(d) for d in dn.start_indices_batching_dims))),
                         windows=list(zip(window_operand, offset)), dtype=dtype, masked=fills(mode))
    picked = b.gather(b.reshape(x, shape=(n,)), b.reshape(linear, shape=(total,)), axis=0)
    picked = b.reshape(picked, shape=out_shape)
    if ok is not None:
        picked = b.select(ok, picked, ctx.full(fill, x.type.dtype, out_shape))
    return picked


def _negated(ctx: JaxContext, updates: Value) -> Value:
    """-updates, wrapping for unsigned ints (0 - u); neg keeps a float's signed zeros right."""
    if updates.type.dtype.is_unsigned:
        return ctx.b.sub(ctx.full(0, updates.type.dtype, updates.type.shape), updates)
    return ctx.b.neg(updates)


def general_scatter(ctx: JaxContext, x: Value, indices: Value, updates: Value, primitive: str) -> Value:
    """``lax.scatter``/``scatter_add``/... in any form (``primitive`` picks the combiner)."""
    p, b = ctx.params, ctx.b
    if primitive == "scatter" and p.get("update_jaxpr") is not None:
        refuse("scatter with a combiner of its own (lax.scatter_apply): parity translates the standard "
               "combiners (.at[].set/add/mul/min/max); apply the function to the gathered values and .set them")
    dn = p["dimension_numbers"]
    x_shape, u_shape = _static("operand", x.type.shape), _static("updates", updates.type.shape)
    _static("index array", indices.type.shape)
    mode = _mode(p["mode"])
    n, total = math.prod(x_shape), math.prod(u_shape)
    if total == 0 or n == 0:  # nothing written, or nowhere to write
        return x
    reduce = REDUCES[primitive]
    if primitive in ("scatter-sub", "scatter_sub"):
        updates = _negated(ctx, updates)
    window_updates = [int(d) for d in dn.update_window_dims]
    skipped = {int(d) for d in (*dn.inserted_window_dims, *dn.operand_batching_dims)}
    window_operand = [d for d in range(len(x_shape)) if d not in skipped]
    size = {d: u_shape[j] for d, j in zip(window_operand, window_updates)}
    starts = [int(d) for d in dn.scatter_dims_to_operand_dims]
    dropping = drops(mode)
    dtype = index_dtype(n + dropping)
    linear, ok = _linear(ctx, x_shape, indices, u_shape,
                         tuple(d for d in range(len(u_shape)) if d not in window_updates),
                         starts=starts, bounds=[x_shape[d] - size.get(d, 1) for d in starts],
                         batching=list(zip((int(d) for d in dn.operand_batching_dims),
                                           (int(d) for d in dn.scatter_indices_batching_dims))),
                         windows=list(zip(window_operand, window_updates)), dtype=dtype, masked=dropping)
    if ok is not None:  # a dropped window goes to the extra slot past the operand's end
        linear = b.select(ok, linear, ctx.full(n, dtype, u_shape))
    flat, source = b.reshape(x, shape=(n,)), b.reshape(updates, shape=(total,))
    as_bool = x.type.dtype.is_bool  # JAX takes bool in max/min (or/and) only; the IR's scatter reduces no bool
    if as_bool:
        flat, source = ctx.convert(flat, DType.uint8), ctx.convert(source, DType.uint8)
    if dropping:
        flat = b.concatenate(flat, ctx.full(0, flat.type.dtype, (1,)), dimension=0)
    out = b.scatter(flat, b.reshape(linear, shape=(total,)), source, axis=0, reduce=reduce, include_self=True)
    if dropping:
        out = b.slice(out, start_indices=(0,), limit_indices=(n,), strides=(1,))
    if as_bool:
        out = ctx.convert(out, DType.bool)
    return b.reshape(out, shape=x_shape)
