"""Rules that create, move and index data: constant, iota, shape ops, gather/scatter,
dynamic slices. All are exact.

Out-of-range gather/scatter indices are implementation-defined in the IR; ORT would
reject them at run time, so indices are clamped to ``[0, dim - 1]`` like the reference.
Interior padding (``pad`` and the input dilation of ``convolution``) has no ONNX op: each
padded dim gets a new axis of size 1, padded to ``inner + 1``, merged back and cropped.

Example::

    >>> from parity.ir import GraphBuilder, f32
    >>> from parity.backends.onnx.lowering import to_model
    >>> b = GraphBuilder(); x = b.input(f32[2, 3])
    >>> g = b.build([b.transpose(x, permutation=(1, 0))])
    >>> [n.op_type for n in to_model(g).graph.node]
    ['Transpose']
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...ir.dtypes import DType
from ...ir.ops.indexing import scatter_identity
from ...ir.types import Dim, DimExpr
from .context import OnnxNodeContext
from .emitter import ShapeEntry

_I64 = DType.int64
_INT64_MAX, _INT64_MIN = np.iinfo(np.int64).max, np.iinfo(np.int64).min


def constant(ctx: OnnxNodeContext):
    return ctx.em.const(ctx.attrs["value"])


def iota(ctx: OnnxNodeContext):
    t, dim = ctx.out, ctx.attrs["dimension"]
    size = t.shape[dim]
    counts = ctx.op("Range", ctx.scalar(0, _I64), dim_value(ctx, size), ctx.scalar(1, _I64))
    if t.dtype is not _I64:
        counts = ctx.cast(counts, t.dtype)  # ints wrap; floats are exact below 2**24, then rounded once
    view = [1] * t.rank
    view[dim] = size
    line = ctx.op("Reshape", counts, ctx.em.shape(view))
    return ctx.expand(line, view, t.shape)


def reshape_to(ctx: OnnxNodeContext, x: str, entries: Sequence[ShapeEntry], current: Sequence[Dim]) -> str:
    """Reshape unless ``entries`` (products as tuples) already is ``current``.

    With symbolic sizes, a shape tensor costs ORT nodes every run (Shape, arithmetic, Concat),
    so two cases need none: a reshape that only inserts or only drops size-1 dims is an
    Unsqueeze or Squeeze with constant axes, and one whose only symbolic entry can be inferred
    (every other entry a static nonzero size) is a constant shape with -1 there. Both move no
    data, and both hold for a symbol that is 0 at run time (tested)."""
    flat = [e[0] if isinstance(e, tuple) and len(e) == 1 else e for e in entries]
    if list(flat) == list(current):
        return x
    if not any(isinstance(e, tuple) for e in flat) and any(isinstance(e, DimExpr) for e in flat):
        for op, longer, shorter in (("Unsqueeze", flat, current), ("Squeeze", current, flat)):
            axes = _ones_inserted(longer, shorter)
            if axes:
                return ctx.op(op, x, ctx.em.ints(axes))
        symbolic = [i for i, e in enumerate(flat) if isinstance(e, DimExpr)]
        if len(symbolic) == 1 and all(isinstance(e, int) and e > 0 for i, e in enumerate(flat) if i != symbolic[0]):
            inferred = [-1 if i == symbolic[0] else e for i, e in enumerate(flat)]
            return ctx.op("Reshape", x, ctx.em.ints(inferred), allowzero=1)
    return ctx.op("Reshape", x, ctx.em.shape(flat), allowzero=1)  # allowzero: a 0 is a size, not "copy"


def _ones_inserted(longer: Sequence[Dim], shorter: Sequence[Dim]) -> list[int]:
    """The positions in ``longer`` of the size-1 dims that, taken out, leave ``shorter``
    (empty when it is not ``shorter`` with 1s inserted)."""
    axes, j = [], 0
    for i, d in enumerate(longer):
        if j < len(shorter) and (d is shorter[j] or d == shorter[j]):
            j += 1
        elif isinstance(d, int) and d == 1:
            axes.append(i)
        else:
            return []
    return axes if j == len(shorter) else []


def transpose_to(ctx: OnnxNodeContext, x: str, perm: Sequence[int]) -> str:
    return x if list(perm) == sorted(perm) else ctx.op("Transpose", x, perm=list(perm))


def reshape(ctx, x):
    return reshape_to(ctx, x, ctx.out.shape, ctx.in_types[0].shape)


def broadcast_in_dim(ctx, x):
    shape, dims = ctx.attrs["shape"], ctx.attrs["broadcast_dimensions"]
    view: list[Dim] = [1] * len(shape)
    for i, d in enumerate(dims):
        view[d] = ctx.in_types[0].shape[i]
    x = reshape_to(ctx, x, view, ctx.in_types[0].shape)
    return x if list(view) == list(shape) else ctx.expand(x, view, shape)


def transpose(ctx, x):
    """A Transpose, or a Reshape where it moves only size-1 dims (the other dims keep their
    order, so the elements do too): a decode step's one-token [B, 1, H, D] ↔ [B, H, 1, D]
    head swaps, which then fold into the Reshapes around them (:mod:`.simplify`)."""
    perm = list(ctx.attrs["permutation"])
    shape = ctx.in_types[0].shape
    moved = [i for i in perm if not (isinstance(shape[i], int) and shape[i] == 1)]
    if moved == sorted(moved) and all(isinstance(d, int) for d in shape):
        return reshape_to(ctx, x, ctx.out.shape, shape)
    return ctx.op("Transpose", x, perm=perm)


def slice_(ctx, x):
    a = ctx.attrs
    ends = list(a["limit_indices"])  # a symbolic limit (S//2) is computed from the sizes
    axes = list(range(len(ends)))
    return ctx.op("Slice", x, ctx.em.ints(a["start_indices"]), ctx.em.shape(ends), ctx.em.ints(axes),
                  ctx.em.ints(a["strides"]))


def concatenate(ctx, *xs):
    return ctx.op("Concat", *xs, axis=ctx.attrs["dimension"])


def interior_pad(ctx: OnnxNodeContext, x: str, shape: list[Dim], inner: Sequence[int], value: str) -> tuple[str, list]:
    """Insert ``inner[d]`` copies of ``value`` between neighbours along each dim d."""
    shape = list(shape)
    for d, k in enumerate(inner):
        n = shape[d]
        if k == 0 or n in (0, 1):
            continue
        if isinstance(n, DimExpr):
            raise ctx.unsupported(f"interior padding of the symbolic dim {n}")
        rank = len(shape)
        pads = [0] * (2 * (rank + 1))
        pads[rank + 1 + d + 1] = k  # high padding of the new axis d + 1
        spread = ctx.op("Pad", ctx.op("Unsqueeze", x, ctx.em.ints([d + 1])), ctx.em.ints(pads), value)
        merged = shape[:d] + [(n, k + 1)] + shape[d + 1:]
        x = ctx.op("Reshape", spread, ctx.em.shape(merged), allowzero=1)
        size = (n - 1) * (k + 1) + 1
        x = ctx.op("Slice", x, ctx.em.ints([0]), ctx.em.ints([size]), ctx.em.ints([d]))
        shape[d] = size
    return x, shape


def pad(ctx, x, value):
    a = ctx.attrs
    x, _ = interior_pad(ctx, x, list(ctx.in_types[0].shape), a["interior_padding"], value)
    pads = list(a["edge_padding_low"]) + list(a["edge_padding_high"])
    if not any(pads):
        return x
    return ctx.op("Pad", x, ctx.em.ints(pads), value)  # negative pads crop (ONNX Pad allows them)


def reverse(ctx, x):
    dims = list(ctx.attrs["dimensions"])
    if not dims:
        return ctx.op("Identity", x)
    n = len(dims)
    return ctx.op("Slice", x, ctx.em.ints([-1] * n), ctx.em.ints([_INT64_MIN] * n), ctx.em.ints(dims),
                  ctx.em.ints([-1] * n))


# -- indexing -----------------------------------------------------------------------------


def dim_value(ctx: OnnxNodeContext, d: Dim) -> str:
    """A rank-0 int64 holding dim ``d``."""
    return ctx.scalar(d, _I64) if isinstance(d, int) else ctx.op("Squeeze", ctx.em.symbol(d))


def _clamped_indices(ctx: OnnxNodeContext, indices: str, index_dtype: DType, size: Dim) -> str:
    if index_dtype is not _I64:
        indices = ctx.cast(indices, _I64)
    high = ctx.op("Sub", dim_value(ctx, size), ctx.scalar(1, _I64))
    return ctx.op("Clip", indices, ctx.scalar(0, _I64), high)


def gather(ctx, x, indices):
    axis = ctx.attrs["axis"]
    x_t, idx_t = ctx.in_types
    if x_t.shape[axis] == 0:  # every index is out of range: zeros, like the reference
        return ctx.full(0, ctx.out)
    idx = _clamped_indices(ctx, indices, idx_t.dtype, x_t.shape[axis])
    return ctx.op("GatherElements", x, idx, axis=axis)


def scatter(ctx, x, indices, updates):
    axis = ctx.attrs["axis"]
    x_t, idx_t, _ = ctx.in_types
    if x_t.shape[axis] == 0 or 0 in idx_t.shape:  # nowhere to write, or nothing to write
        return ctx.op("Identity", x)
    idx = _clamped_indices(ctx, indices, idx_t.dtype, x_t.shape[axis])
    reduce = ctx.attrs["reduce"]
    if not ctx.attrs["include_self"]:  # written elements start from the identity: every write is equal
        start = ctx.op("Expand", ctx.scalar(scatter_identity(reduce, ctx.in_types[0].dtype), ctx.in_types[0].dtype),
                       ctx.op("Shape", updates))
        x = ctx.op("ScatterElements", x, idx, start, axis=axis, reduction="none")
    reduction = "none" if reduce == "replace" else reduce
    out = ctx.op("ScatterElements", x, idx, updates, axis=axis, reduction=reduction)
    if reduce in ("max", "min") and x_t.dtype.is_float:
        out = _propagate_nan(ctx, out, x, idx, updates)
    return out


def _propagate_nan(ctx, out: str, x: str, idx: str, updates: str) -> str:
    """ORT's ScatterElements max/min keep the old value against a NaN update (std::max); the IR
    propagates NaN: poison each element a NaN update reaches (or, with include_self, a NaN x)."""
    dtype = ctx.in_types[0].dtype
    nan_updates = ctx.cast(ctx.op("IsNaN", updates), dtype)
    flag = ctx.op("ScatterElements", ctx.full(0, ctx.in_types[0]), idx, nan_updates, axis=ctx.attrs["axis"],
                  reduction="max")
    if ctx.attrs["include_self"]:
        flag = ctx.op("Max", flag, ctx.cast(ctx.op("IsNaN", x), dtype))
    return ctx.poison(out, flag)


def _clamped_starts(ctx: OnnxNodeContext, starts: Sequence[str], start_dtype: DType, x_shape, window) -> str:
    """The starts as one int64 vector, clamped to [0, dim - window size] per dim."""
    pieces = [ctx.op("Reshape", s if start_dtype is _I64 else ctx.cast(s, _I64), ctx.em.ints([1])) for s in starts]
    vector = pieces[0] if len(pieces) == 1 else ctx.op("Concat", *pieces, axis=0)
    high = ctx.op("Sub", ctx.em.shape(x_shape), ctx.em.shape(window))
    return ctx.op("Max", ctx.op("Min", vector, high), ctx.scalar(0, _I64))


def dynamic_slice(ctx, x, *starts):
    x_t = ctx.in_types[0]
    if x_t.rank == 0:
        return ctx.op("Identity", x)
    sizes = ctx.attrs["slice_sizes"]
    begin = _clamped_starts(ctx, starts, ctx.in_types[1].dtype, x_t.shape, sizes)
    end = ctx.op("Add", begin, ctx.em.shape(sizes))
    return ctx.op("Slice", x, begin, end, ctx.em.ints(range(x_t.rank)))


def dynamic_update_slice(ctx, x, update, *starts):
    x_t, u_t = ctx.in_types[:2]
    if x_t.rank == 0:
        return ctx.op("Identity", update)
    if not u_t.is_static:
        raise ctx.unsupported(f"the update {u_t} must have a static shape")
    if 0 in u_t.shape:
        return ctx.op("Identity", x)
    begin = _clamped_starts(ctx, starts, ctx.in_types[2].dtype, x_t.shape, u_t.shape)
    grid = np.stack(np.indices(u_t.shape), axis=-1).astype(np.int64)  # [*update, rank]
    return ctx.op("ScatterND", x, ctx.op("Add", ctx.em.const(grid), begin), update)


RULES = {
    "constant": constant, "iota": iota, "reshape": reshape, "broadcast_in_dim": broadcast_in_dim,
    "transpose": transpose, "slice": slice_, "concatenate": concatenate, "pad": pad, "reverse": reverse,
    "gather": gather, "scatter": scatter, "dynamic_slice": dynamic_slice,
    "dynamic_update_slice": dynamic_update_slice,
}
