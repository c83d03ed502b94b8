"""Indexing aten ops: gather/scatter, index_select, advanced indexing (index, index_put),
select_scatter and slice_scatter.

Advanced indexing is linearized: the indexed dims move to the front and flatten into
one, the index tensors combine into one flat (row-major) index, and a single
gather/scatter along axis 0 does the work; the result is moved to torch's layout.
Symbolic dims work the same way: a size the index arithmetic needs as a number (to
wrap negative indices, as a row-major stride) is computed from the shape at run time.
"""

from __future__ import annotations

import math

from ...ir.dims import DimExpr
from ...ir.dtypes import DType
from ...ir.graph import Value
from ..context import TranslationContext, broadcast_shapes, unsupported
from .elementwise import floor_divide_values
from .shape import permute


def _size_value(ctx: TranslationContext, size, shape) -> Value:
    """``size`` as an int64 tensor of ``shape``: a constant, or for a symbolic size the
    sum of ``size`` ones (the IR has no op that reads a dim; one reduction per size)."""
    if isinstance(size, int):
        return ctx.full(size, DType.int64, shape)
    count = ctx.b.reduce_sum(ctx.full(1, DType.int64, (size,)), axes=(0,))
    return ctx.broadcast(count, shape)


def _wrapped(ctx: TranslationContext, index, size, shape) -> Value:
    """``index`` (int64, of ``shape``) with negative positions counted from ``size``, torch's rule."""
    i64 = DType.int64
    return ctx.b.select(ctx.b.lt(index, ctx.full(0, i64, shape)), ctx.b.add(index, _size_value(ctx, size, shape)), index)


def _empty(value) -> bool:
    return any(d == 0 for d in value.type.shape if isinstance(d, int))


def gather(ctx: TranslationContext, x, dim, index, sparse_grad=False):
    if _empty(index):  # torch accepts an empty index of any rank: the result is empty too
        return ctx.full(0, ctx.out.dtype, ctx.out.shape)
    if x.type.rank == 0:
        return ctx.reshape(x, ctx.out.shape)
    return ctx.b.gather(x, index, axis=ctx.axis(dim, x.type.rank))


def _scatter(ctx: TranslationContext, x, dim, index, src, reduce: str, include_self: bool = True):
    if _empty(index):  # nothing is written
        return x
    if x.type.rank == 0:  # a 0-d tensor scatters as one element along axis 0 (index 0)
        flat = [ctx.reshape(v, (math.prod(v.type.shape),)) for v in (x, index, src)]
        flat[2] = ctx.b.slice(flat[2], start_indices=[0], limit_indices=[1], strides=[1])
        out = ctx.b.scatter(flat[0], ctx.reshape(flat[1], (1,)), ctx.convert(flat[2], x.type.dtype), axis=0,
                            reduce=reduce, include_self=include_self or reduce == "replace")
        return ctx.reshape(out, ())
    axis = ctx.axis(dim, x.type.rank)
    if src.type.shape != index.type.shape:  # torch reads only the index-shaped corner of src
        src = ctx.b.slice(src, start_indices=[0] * src.type.rank, limit_indices=list(index.type.shape),
                          strides=[1] * src.type.rank)
    return ctx.b.scatter(x, index, ctx.convert(src, x.type.dtype), axis=axis, reduce=reduce,
                         include_self=include_self or reduce == "replace")


def scatter_value(ctx: TranslationContext, x, dim, index, value):
    return _scatter(ctx, x, dim, index, ctx.full(value, x.type.dtype, index.type.shape), "replace")


def scatter_src(ctx: TranslationContext, x, dim, index, src):
    return _scatter(ctx, x, dim, index, src, "replace")


def scatter_add(ctx: TranslationContext, x, dim, index, src):
    return _scatter(ctx, x, dim, index, src, "add")


# torch's reduce names (scatter_reduce's, and scatter's reduce= argument) -> the IR scatter's
_TORCH_REDUCE = {"sum": "add", "prod": "mul", "amax": "max", "amin": "min", "add": "add", "multiply": "mul"}


def scatter_reduce(ctx: TranslationContext, x, dim, index, src, reduce, *, include_self=True):
    """Every mode onto the IR's scatter; ``mean`` is the scattered sum divided by the number
    of terms each element received (1 for x itself with include_self; at least 1), floored
    for integers as torch does.

    Example: x = [1, 1], index = [0, 0], src = [4, 6], mean with self gives [11 / 3, 1].
    """
    if reduce != "mean":
        return _scatter(ctx, x, dim, index, src, _TORCH_REDUCE[reduce], include_self)
    total = _scatter(ctx, x, dim, index, src, "add", include_self)
    shape, dtype = x.type.shape, x.type.dtype
    start = ctx.full(1 if include_self else 0, dtype, shape)
    count = _scatter(ctx, start, dim, index, ctx.full(1, dtype, index.type.shape), "add")
    count = ctx.b.max(count, ctx.full(1, dtype, shape))  # untouched without self: x / 1
    return ctx.b.div(total, count) if dtype.is_float else floor_divide_values(ctx, total, count)


def scatter_value_reduce(ctx: TranslationContext, x, dim, index, value, *, reduce):
    return _scatter(ctx, x, dim, index, ctx.full(value, x.type.dtype, index.type.shape), _TORCH_REDUCE[reduce])


def scatter_src_reduce(ctx: TranslationContext, x, dim, index, src, *, reduce):
    return _scatter(ctx, x, dim, index, src, _TORCH_REDUCE[reduce])


def index_select(ctx: TranslationContext, x, dim, index):
    axis = ctx.axis(dim, x.type.rank)
    shape = ctx.out.shape
    if x.type.rank == 0:
        return ctx.reshape(x, shape)
    indices = ctx.b.broadcast_in_dim(ctx.reshape(index, (index.type.shape[0] if index.type.rank else 1,)),
                                     shape=shape, broadcast_dimensions=(axis,))
    return ctx.b.gather(x, indices, axis=axis)


class _Linearized:
    """x with its indexed dims in front, flattened, and one flat index per selected element."""

    def __init__(self, ctx: TranslationContext, x, indices):
        rank = x.type.rank
        self.positions = [i for i, t in enumerate(indices) if t is not None]
        chosen = [indices[i] for i in self.positions]
        if any(t.type.dtype.is_bool for t in chosen):
            unsupported("boolean mask indexing (its result size depends on the data)")
        self.rest = [d for d in range(rank) if d not in self.positions]
        self.sizes = [x.type.shape[p] for p in self.positions]
        self.rest_shape = tuple(x.type.shape[d] for d in self.rest)
        self.bshape = broadcast_shapes(*(t.type.shape for t in chosen))
        self.count = math.prod(self.bshape)
        b, i64 = ctx.b, DType.int64
        self.flat = ctx.reshape(permute(ctx, x, self.positions + self.rest), (math.prod(self.sizes), *self.rest_shape))
        linear, stride = None, 1
        for size, t in reversed(list(zip(self.sizes, chosen))):
            t = _wrapped(ctx, ctx.broadcast(ctx.convert(t, i64), self.bshape), size, self.bshape)
            term = t if isinstance(stride, int) and stride == 1 else b.mul(t, _size_value(ctx, stride, self.bshape))
            linear = term if linear is None else b.add(linear, term)
            stride *= size
        linear = ctx.reshape(linear, (self.count,))
        self.index = b.broadcast_in_dim(linear, shape=(self.count, *self.rest_shape), broadcast_dimensions=(0,))
        p0 = self.positions[0]
        adjacent = self.positions == list(range(p0, p0 + len(self.positions)))
        # torch puts the broadcast index dims where the indexed dims were when they are adjacent
        self.inner = p0 if adjacent else 0
        nb = len(self.bshape)
        self.to_torch = list(range(nb, nb + self.inner)) + list(range(nb)) + list(range(nb + self.inner, nb + len(self.rest)))
        self.torch_shape = self.rest_shape[:self.inner] + tuple(self.bshape) + self.rest_shape[self.inner:]


def index(ctx: TranslationContext, x, indices):
    lin = _Linearized(ctx, x, indices)
    picked = ctx.b.gather(lin.flat, lin.index, axis=0)
    picked = ctx.reshape(picked, (*lin.bshape, *lin.rest_shape))
    return permute(ctx, picked, lin.to_torch)


def index_put(ctx: TranslationContext, x, indices, values, accumulate=False):
    """``x[indices] = values`` (or ``+=`` with accumulate): one scatter for integer indices
    (accumulate adds every duplicate; without it, which duplicate wins is implementation-defined),
    a masked select for one boolean mask (:func:`_index_put_mask`)."""
    masks = [i for i, t in enumerate(indices) if t is not None and t.type.dtype.is_bool]
    if masks:
        if sum(t is not None for t in indices) > 1:
            unsupported("index_put with a boolean mask beside other index tensors (its positions depend on the data)")
        return _index_put_mask(ctx, x, masks[0], indices[masks[0]], values, accumulate)
    chosen = [i for i, t in enumerate(indices) if t is not None]
    if len(chosen) == 1:
        return _index_put_along(ctx, x, chosen[0], indices[chosen[0]], values, accumulate)
    lin = _Linearized(ctx, x, indices)
    values = ctx.broadcast(ctx.convert(values, x.type.dtype), lin.torch_shape)
    inverse = [lin.to_torch.index(d) for d in range(len(lin.to_torch))]
    values = ctx.reshape(permute(ctx, values, inverse), (lin.count, *lin.rest_shape))
    result = ctx.b.scatter(lin.flat, lin.index, values, axis=0, reduce="add" if accumulate else "replace")
    result = ctx.reshape(result, (*lin.sizes, *lin.rest_shape))
    order = lin.positions + lin.rest
    return permute(ctx, result, [order.index(d) for d in range(len(order))])


def _index_put_along(ctx: TranslationContext, x, p: int, index, values, accumulate: bool):
    """``x[..., index, ...] = values`` with one integer index tensor, at dim ``p`` (a static KV
    cache's ``index_copy_`` along its sequence dim): one scatter along ``p`` into ``x`` as it is.
    The linearized form would move ``p`` to the front and back (two transposes around the
    scatter), which keeps a backend from writing the result into ``x``'s own memory."""
    shape = x.type.shape
    count = math.prod(index.type.shape)
    flat = _wrapped(ctx, ctx.reshape(ctx.convert(index, DType.int64), (count,)), shape[p], (count,))
    torch_shape = (*shape[:p], *index.type.shape, *shape[p + 1:])
    along = (*shape[:p], count, *shape[p + 1:])
    values = ctx.reshape(ctx.broadcast(ctx.convert(values, x.type.dtype), torch_shape), along)
    positions = ctx.b.broadcast_in_dim(flat, shape=along, broadcast_dimensions=(p,))
    return ctx.b.scatter(x, positions, values, axis=p, reduce="add" if accumulate else "replace")


def _scatter_along(ctx: TranslationContext, x, src, axis: int, start: int, step: int):
    """Write src into x at positions start, start + step, ... of ``axis``."""
    shape = src.type.shape
    i64 = DType.int64
    positions = ctx.b.iota(dtype=i64, shape=shape, dimension=axis)
    if step != 1:
        positions = ctx.b.mul(positions, ctx.full(step, i64, shape))
    if start:
        positions = ctx.b.add(positions, ctx.full(start, i64, shape))
    return ctx.b.scatter(x, positions, ctx.convert(src, x.type.dtype), axis=axis, reduce="replace")


def select_backward(ctx: TranslationContext, grad, input_sizes, dim, index):
    """The gradient of ``x.select(dim, index)`` with symbolic sizes (the decomposition
    table keeps this op whole there; static sizes become a pad): ``grad`` as one slice of
    ``input_sizes``, with zeros of the (symbolic) widths before and after it."""
    sizes = list(ctx.out.shape)
    axis = ctx.axis(dim, len(sizes))
    index = index + sizes[axis] if isinstance(index, int) and index < 0 else index
    row = list(sizes)
    row[axis] = 1
    parts = [ctx.reshape(grad, row)]
    for width, at in ((index, 0), (sizes[axis] - 1 - index, 1)):
        if isinstance(width, int) and width == 0:
            continue
        shape = list(sizes)
        shape[axis] = width
        parts.insert(len(parts) if at else 0, ctx.full(0, ctx.out.dtype, shape))
    return parts[0] if len(parts) == 1 else ctx.b.concatenate(*parts, dimension=axis)


def select_scatter(ctx: TranslationContext, x, src, dim, index):
    axis = ctx.axis(dim, x.type.rank)
    size = x.type.shape[axis]
    index = index + size if index < 0 else index
    shape = list(x.type.shape)
    shape[axis] = 1
    return _scatter_along(ctx, x, ctx.reshape(src, shape), axis, index, 1)


def slice_scatter(ctx: TranslationContext, x, src, dim=0, start=None, end=None, step=1):
    axis = ctx.axis(dim, x.type.rank)
    size = x.type.shape[axis]
    start = 0 if start is None else start
    if start == 0 and step == 1 and src.type.shape == x.type.shape:
        return ctx.convert(src, x.type.dtype)  # the whole of x (x[:, ...]'s gradient): src itself
    if isinstance(size, DimExpr):
        if not isinstance(start, int) or start < 0:
            unsupported(f"slice_scatter from {start} of the symbolic size {size}")
        # torch guarded start <= size while tracing: positions start, start + step, ... as given
    else:
        start = max(0, min(size, start + size if start < 0 else start))
    if src.type.shape[axis] == 0:
        return x
    return _scatter_along(ctx, x, src, axis, start, step)


def diagonal_scatter(ctx: TranslationContext, x, src, offset=0, dim1=0, dim2=1):
    """x with its diagonal (as ``diagonal(x, offset, dim1, dim2)`` reads it) replaced by ``src``:
    the two dims moved last and flattened, the diagonal is every (m + 1)-th element from its start.
    It is the backward of ``diagonal`` and what ``x.diagonal().zero_()`` becomes.

    Example: zeros(2, 3) with src [1, 2] at offset 1 gives [[0, 1, 0], [0, 0, 2]].
    """
    rank = x.type.rank
    d1, d2 = ctx.axis(dim1, rank), ctx.axis(dim2, rank)
    order = [d for d in range(rank) if d not in (d1, d2)] + [d1, d2]
    moved = permute(ctx, x, order)
    n, m = moved.type.shape[-2:]
    if not (isinstance(n, int) and isinstance(m, int)):
        unsupported(f"diagonal_scatter over the symbolic sizes {n}, {m}")
    if src.type.shape[-1] == 0:
        return x
    flat = ctx.reshape(moved, tuple(moved.type.shape[:-2]) + (n * m,))
    start = offset if offset >= 0 else -offset * m
    out = ctx.reshape(_scatter_along(ctx, flat, src, flat.type.rank - 1, start, m + 1), moved.type.shape)
    return permute(ctx, out, [order.index(d) for d in range(rank)])


def _mask_ranks(ctx: TranslationContext, mask, shape):
    """(flat mask, k) over ``shape``: element i is the k-th True of the mask (row-major), k from 0."""
    n = math.prod(shape)
    flat = ctx.reshape(ctx.broadcast(ctx.convert(mask, DType.bool), shape), (n,))
    ranks = ctx.b.cumsum(ctx.convert(flat, DType.int64), axis=0)
    return flat, ctx.b.sub(ranks, ctx.full(1, DType.int64, (n,)))


def _index_put_mask(ctx: TranslationContext, x, p: int, mask, values, accumulate: bool):
    """``x[..., mask, ...] = values`` with the mask over dims p .. p + k - 1: values broadcast to
    ``x.shape[:p] + (L,) + x.shape[p + k:]``, and the mask's j-th True (row-major) takes row j
    of the L (row 0 when L is 1, torch's broadcast). Static shapes; no data-dependent size.

    Example: x = [0, 0, 0], mask = [True, False, True], values = [5, 6] gives [5, 0, 6].
    """
    shape, k = x.type.shape, mask.type.rank
    if not all(isinstance(d, int) for d in (*shape, *values.type.shape)):
        unsupported("index_put with a boolean mask and symbolic sizes")
    if tuple(mask.type.shape) != tuple(shape[p:p + k]):
        unsupported(f"a boolean mask of shape {list(mask.type.shape)} indexing dims {p}..{p + k - 1} of shape "
                    f"{list(shape[p:p + k])}: torch requires them to match")
    mdims = list(range(p, p + k))
    rest = [d for d in range(len(shape)) if d not in mdims]
    rest_shape, count = tuple(shape[d] for d in rest), math.prod(shape[p:p + k])
    target_rank = 1 + len(rest)
    if values.type.rank > target_rank:
        unsupported(f"index_put values of rank {values.type.rank} for a mask leaving rank {target_rank}")
    values = ctx.reshape(values, (1,) * (target_rank - values.type.rank) + tuple(values.type.shape))
    rows = values.type.shape[p]
    values = ctx.broadcast(ctx.convert(values, x.type.dtype), rest_shape[:p] + (rows,) + rest_shape[p:])
    if rows == 0 or count == 0:
        return x
    values = permute(ctx, values, [p] + [d for d in range(target_rank) if d != p])  # [rows, *rest]
    flat_x = ctx.reshape(permute(ctx, x, mdims + rest), (count, *rest_shape))
    flat_mask, ranks = _mask_ranks(ctx, mask, mask.type.shape)
    b, i64 = ctx.b, DType.int64
    ranks = b.clamp(ctx.full(0, i64, (count,)), ranks, ctx.full(rows - 1, i64, (count,)))
    full = (count, *rest_shape)
    picked = b.gather(values, b.broadcast_in_dim(ranks, shape=full, broadcast_dimensions=(0,)), axis=0)
    if accumulate:
        picked = b.add(flat_x, picked)
    out = b.select(b.broadcast_in_dim(flat_mask, shape=full, broadcast_dimensions=(0,)), picked, flat_x)
    out = ctx.reshape(out, (*shape[p:p + k], *rest_shape))
    order = mdims + rest
    return permute(ctx, out, [order.index(d) for d in range(len(order))])


def masked_scatter(ctx: TranslationContext, x, mask, source):
    """x where the mask is False; the mask's k-th True takes source.flatten()[k] (static shapes).

    Example: x = [0, 0, 0], mask = [True, False, True], source = [5, 6, 7] gives [5, 0, 6].
    """
    shape = ctx.out.shape
    if not all(isinstance(d, int) for d in (*shape, *source.type.shape)):
        unsupported("masked_scatter with symbolic sizes")
    n, count = math.prod(shape), math.prod(source.type.shape)
    flat, ranks = _mask_ranks(ctx, mask, shape)
    if count == 0:
        return ctx.broadcast(x, shape)
    # positions the mask skips read element 0 and are not selected
    index = ctx.b.max(ranks, ctx.full(0, DType.int64, (n,)))
    picked = ctx.b.gather(ctx.reshape(ctx.convert(source, ctx.out.dtype), (count,)), index, axis=0)
    base = ctx.reshape(ctx.broadcast(ctx.convert(x, ctx.out.dtype), shape), (n,))
    return ctx.reshape(ctx.b.select(flat, picked, base), shape)


def masked_scatter_backward(ctx: TranslationContext, grad, mask, sizes):
    """The source's gradient: the mask's k-th True sends its gradient to source element k."""
    out = ctx.out
    count, n = math.prod(out.shape), math.prod(grad.type.shape)
    flat, ranks = _mask_ranks(ctx, mask, grad.type.shape)
    # unmasked positions go to an extra slot (count), cut off at the end
    index = ctx.b.select(flat, ranks, ctx.full(count, DType.int64, (n,)))
    zeros = ctx.full(0, grad.type.dtype, (count + 1,))
    total = ctx.b.scatter(zeros, index, ctx.reshape(grad, (n,)), axis=0, reduce="add")
    kept = ctx.b.slice(total, start_indices=(0,), limit_indices=(count,), strides=(1,))
    return ctx.reshape(kept, out.shape)


TABLE = {
    "gather.default": gather,
    "scatter.value": scatter_value,
    "scatter.src": scatter_src,
    "scatter_add.default": scatter_add,
    "scatter_reduce.two": scatter_reduce,
    "scatter.reduce": scatter_src_reduce,
    "scatter.value_reduce": scatter_value_reduce,
    "index_select.default": index_select,
    "index.Tensor": index,
    "_unsafe_index.Tensor": index,
    "index_put.default": index_put,
    "_unsafe_index_put.default": index_put,
    "select_scatter.default": select_scatter,
    "select_backward.default": select_backward,
    "slice_scatter.default": slice_scatter,
    "diagonal_scatter.default": diagonal_scatter,
    "masked_scatter.default": masked_scatter,
    "masked_scatter_backward.default": masked_scatter_backward,
}
