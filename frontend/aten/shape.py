"""Shape and view aten ops, copies, and tensor creation (full, arange, scalar_tensor, ...).

Views become copies in the IR (values have no aliasing); the result shape is always
torch's (``ctx.out``), so ``view(x, [-1, 4])`` needs no size arithmetic here.
"""

from __future__ import annotations

import math

import numpy as np

from ...ir.dtypes import DType
from ...ir.graph import Value
from ...ir.types import DimExpr
from ..context import TranslationContext, unsupported
from ..sizes import dim_of


def reshape(ctx: TranslationContext, x, *_args, **_kwargs):
    return ctx.reshape(x, ctx.out.shape)


def expand(ctx: TranslationContext, x, *_args, **_kwargs):
    return ctx.broadcast(x, ctx.out.shape)


def permute(ctx: TranslationContext, x, dims):
    perm = tuple(ctx.axis(d, x.type.rank) for d in dims)
    return x if perm == tuple(range(x.type.rank)) else ctx.b.transpose(x, permutation=perm)


def transpose(ctx: TranslationContext, x, dim0=0, dim1=1):
    rank = x.type.rank
    if rank < 2:
        return x
    perm = list(range(rank))
    a, b = ctx.axis(dim0, rank), ctx.axis(dim1, rank)
    perm[a], perm[b] = perm[b], perm[a]
    return permute(ctx, x, perm)


def identity(ctx: TranslationContext, x, *_args, **_kwargs):
    return x


def to_copy(ctx: TranslationContext, x, *_args, **_kwargs):
    return ctx.convert(x, ctx.out.dtype)


def copy(ctx: TranslationContext, dst, src, non_blocking=False):
    return ctx.broadcast(ctx.convert(src, ctx.out.dtype), ctx.out.shape)


def _static(ctx: TranslationContext, dim, what: str) -> int:
    if isinstance(dim, DimExpr):
        unsupported(f"{what} needs a static size, but the dimension is symbolic ({dim})")
    return dim


def slice_values(ctx: TranslationContext, x, dim: int, start, end, step: int = 1):
    """x[start:end:step] along ``dim`` with Python's clamping of out-of-range bounds.

    With symbolic sizes or bounds (``x[:, :seq]``, ``x[:, :4]`` of a dynamic dim) the bounds
    are taken as they are: torch guarded ``0 <= start <= end <= size`` while tracing, and
    the IR's slice requires the same of every size, checked when sizes are bound."""
    size = x.type.shape[dim]
    open_end = end is None or isinstance(end, int) and end >= 2**62  # torch spells it sys.maxsize
    if isinstance(size, DimExpr) and start in (None, 0) and step == 1 and open_end:
        return x  # x[:] of a symbolic dim
    if isinstance(start, Value) or isinstance(end, Value):
        # a bound computed in the graph (torch.sym_max(0, n - s): an i64[] value, no IR dim)
        return _slice_at_value(ctx, x, dim, start, end, step)
    if any(isinstance(v, DimExpr) for v in (size, start, end)):
        start = 0 if start is None else start
        end = size if open_end else end
        if isinstance(size, DimExpr) and isinstance(start, int) and start < 0 and step == 1 and (
                end is size or isinstance(end, int) and end < 0):
            return _slice_from_end(ctx, x, dim, -start, 0 if end is size else -end)
        if isinstance(end, int) and end < 0 and isinstance(size, DimExpr):
            end = size + end  # x[:-2]: torch guarded size >= 2
        if any(isinstance(v, int) and v < 0 for v in (start, end)):
            unsupported(f"slice [{start}:{end}] counts from the end of the symbolic size {size}")
        if isinstance(start, DimExpr):
            return _slice_at_size(ctx, x, dim, start, end, step)
        return _slice(ctx, x, dim, start, end, step)
    start = 0 if start is None else start
    end = size if end is None else end
    start = max(0, min(size, start + size if start < 0 else start))
    end = max(start, min(size, end + size if end < 0 else end))
    return _slice(ctx, x, dim, start, end, step)


def _slice_at_size(ctx: TranslationContext, x, dim: int, start, end, step):
    """x[k:k + n] with a symbolic start ``k`` (an int argument made symbolic, a position offset):
    a dynamic_slice whose start is the size's value. torch guarded 0 <= k <= k + n <= size while
    tracing, so the IR's clamping of the window never moves it."""
    length = ctx.out.shape[dim]
    if step != 1 or not isinstance(length, int):
        unsupported(f"slice [{start}:{end}:{step}]: a symbolic start needs step 1 and a static length "
                    f"(here {length})")
    zero = ctx.const(0, DType.int64)
    starts = [ctx.value(start, DType.int64) if d == dim else zero for d in range(x.type.rank)]
    sizes = tuple(length if d == dim else size for d, size in enumerate(x.type.shape))
    return ctx.b.dynamic_slice(x, *starts, slice_sizes=sizes)


def _slice_at_value(ctx: TranslationContext, x, dim: int, start, end, step):
    """x[k:] or x[k:k + n] where a bound is a value the graph computes (MPT's ALiBi bias cut to
    the keys: ``max(0, bias.size(2) - key_length)``): a dynamic_slice when the result's length
    is a static number or an IR dim; torch guarded the bounds' order while tracing, so the
    IR's clamping of the window never moves it. A length with Max or Min has an IR dim only
    under a guard on its branch (frontend/sizes.py, parity.compile's forward graphs); elsewhere
    it is refused here and the graph compiles per shape."""
    length = ctx.out.shape[dim]
    size = x.type.shape[dim]
    to_the_end = end is None or isinstance(end, int) and end >= size
    if isinstance(length, DimExpr) and isinstance(size, int) and step == 1 and to_the_end:
        # x[k:] of a static dim with a symbolic length (MPT's bias: the last s of 64 positions) is
        # its last ``length`` elements: a slice of the reversed dim, as the IR's dynamic_slice has
        # no symbolic size inside a static dim (a step other than 1 is refused below)
        flipped = ctx.b.reverse(x, dimensions=(dim,))
        return ctx.b.reverse(_slice(ctx, flipped, dim, 0, length, 1), dimensions=(dim,))
    start = 0 if start is None else start
    if step != 1 or not isinstance(start, (int, Value)):
        unsupported(f"slice [{start}:{end}:{step}] with a bound computed in the graph needs step 1 and "
                    f"a start that is a number or a value (here {start!r})")
    if isinstance(start, int) and start < 0:
        unsupported(f"slice [{start}:{end}] counts from the end with a bound computed in the graph")
    zero = ctx.const(0, DType.int64)
    first = ctx.value(start, DType.int64) if isinstance(start, Value) else ctx.const(start, DType.int64)
    starts = [first if d == dim else zero for d in range(x.type.rank)]
    sizes = tuple(length if d == dim else size for d, size in enumerate(x.type.shape))
    return ctx.b.dynamic_slice(x, *starts, slice_sizes=sizes)


def _slice_from_end(ctx: TranslationContext, x, dim: int, first: int, last: int):
    """x[-first:-last] of a symbolic dim (a sliding window's last tokens): reversed, the
    slice [last:first] starts at a static index; torch guarded size >= first."""
    if ctx.out.shape[dim] != first - last:
        unsupported(f"slice [-{first}:-{last}] of the symbolic size {x.type.shape[dim]} has size "
                    f"{ctx.out.shape[dim]}")
    flipped = ctx.b.reverse(x, dimensions=(dim,))
    return ctx.b.reverse(_slice(ctx, flipped, dim, last, first, 1), dimensions=(dim,))


def _slice(ctx: TranslationContext, x, dim: int, start, end, step):
    size = x.type.shape[dim]
    if (start, end, step) == (0, size, 1):
        return x
    starts = [0] * x.type.rank
    limits = list(x.type.shape)
    strides = [1] * x.type.rank
    starts[dim], limits[dim], strides[dim] = start, end, step
    return ctx.b.slice(x, start_indices=starts, limit_indices=limits, strides=strides)


def slice_(ctx: TranslationContext, x, dim=0, start=None, end=None, step=1):
    return slice_values(ctx, x, ctx.axis(dim, x.type.rank), start, end, step)


def select(ctx: TranslationContext, x, dim, index):
    dim = ctx.axis(dim, x.type.rank)
    size = x.type.shape[dim]
    # x[:, 0] of a symbolic dim slices [0:1] (torch guarded 0 < size); x[:, -1] of one is
    # x reversed, [0:1]: the IR's slice starts at a static index (torch guarded size >= 1)
    if isinstance(index, int) and index < 0 and isinstance(size, DimExpr):
        flipped = ctx.b.reverse(x, dimensions=(dim,))
        return ctx.reshape(_slice(ctx, flipped, dim, -index - 1, -index, 1), ctx.out.shape)
    index = index + size if isinstance(index, int) and index < 0 else index
    return ctx.reshape(slice_values(ctx, x, dim, index, index + 1), ctx.out.shape)


def cat(ctx: TranslationContext, tensors, dim=0):
    dtype, rank = ctx.out.dtype, ctx.out.rank
    # torch skips legacy empty 1-d tensors in cat
    parts = [ctx.convert(t, dtype) for t in tensors if not (t.type.shape == (0,) and rank != 1)]
    if len(parts) == 1:
        return parts[0]
    return ctx.b.concatenate(*parts, dimension=ctx.axis(dim, rank))


def split_with_sizes(ctx: TranslationContext, x, sizes, dim=0):
    dim = ctx.axis(dim, x.type.rank)
    out, start = [], 0
    for size in sizes:
        out.append(slice_values(ctx, x, dim, start, start + size))
        start += size
    return tuple(out)


def split(ctx: TranslationContext, x, split_size, dim=0):
    dim = ctx.axis(dim, x.type.rank)
    total = _static(ctx, x.type.shape[dim], "split")
    sizes = [min(split_size, total - s) for s in range(0, total, split_size)] or [0]
    return split_with_sizes(ctx, x, sizes, dim)


def unbind(ctx: TranslationContext, x, dim=0):
    dim = ctx.axis(dim, x.type.rank)
    return tuple(select(_Sub(ctx, i), x, dim, i) for i in range(_static(ctx, x.type.shape[dim], "unbind")))


class _Sub:
    """A TranslationContext view of result ``i`` of a multi-result op (``ctx.out`` is that result)."""

    def __init__(self, ctx: TranslationContext, i: int):
        self._ctx, self._i = ctx, i

    def __getattr__(self, name):
        return getattr(self._ctx, name)

    @property
    def out(self):
        return self._ctx.out_type(self._i)


def flip(ctx: TranslationContext, x, dims):
    axes = tuple(sorted({ctx.axis(d, x.type.rank) for d in dims}))
    return ctx.b.reverse(x, dimensions=axes) if axes else x


def constant_pad_nd(ctx: TranslationContext, x, pad, value=0):
    rank = x.type.rank
    low, high = [0] * rank, [0] * rank
    for i in range(len(pad) // 2):
        low[rank - 1 - i], high[rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
    fill = ctx.const(value, x.type.dtype)
    return ctx.b.pad(x, fill, edge_padding_low=low, edge_padding_high=high, interior_padding=[0] * rank)


def repeat(ctx: TranslationContext, x, repeats):
    rank = len(repeats)
    shape = (1,) * (rank - x.type.rank) + tuple(x.type.shape)
    x = ctx.reshape(x, shape)
    wide = []
    for r, s in zip(repeats, shape):
        wide += [r, s]
    x = ctx.b.broadcast_in_dim(x, shape=wide, broadcast_dimensions=tuple(range(1, 2 * rank, 2)))
    return ctx.reshape(x, ctx.out.shape)


def diagonal(ctx: TranslationContext, x, offset=0, dim1=0, dim2=1):
    rank = x.type.rank
    d1, d2 = ctx.axis(dim1, rank), ctx.axis(dim2, rank)
    rest = [d for d in range(rank) if d not in (d1, d2)]
    x = permute(ctx, x, rest + [d1, d2])
    n, m = (_static(ctx, x.type.shape[-2], "diagonal"), _static(ctx, x.type.shape[-1], "diagonal"))
    length = ctx.out.shape[-1]
    flat = ctx.reshape(x, tuple(x.type.shape[:-2]) + (n * m,))
    start = offset if offset >= 0 else -offset * m
    if length == 0:
        return ctx.reshape(slice_values(ctx, flat, flat.type.rank - 1, 0, 0), ctx.out.shape)
    return slice_values(ctx, flat, flat.type.rank - 1, start, start + (length - 1) * (m + 1) + 1, m + 1)


# -- creation ------------------------------------------------------------------------


def full(ctx: TranslationContext, size, fill_value, **_kwargs):
    return ctx.full(fill_value, ctx.out.dtype, ctx.out.shape)


def full_like(ctx: TranslationContext, x, fill_value, **_kwargs):
    return ctx.full(fill_value, ctx.out.dtype, ctx.out.shape)


def new_full(ctx: TranslationContext, x, size, fill_value, **_kwargs):
    return ctx.full(fill_value, ctx.out.dtype, ctx.out.shape)


def _constant_fill(value):
    def translate(ctx: TranslationContext, *_args, **_kwargs):
        return ctx.full(value, ctx.out.dtype, ctx.out.shape)

    return translate


def _triangle_indices(lower: bool):
    def translate(ctx: TranslationContext, row, col, offset=0, **_kwargs):
        """torch.tril_indices / triu_indices: sizes known while tracing make it a constant (row-major order)."""
        if not all(isinstance(v, int) for v in (row, col, offset)):
            unsupported("tril_indices / triu_indices of symbolic sizes")
        pick = np.tril_indices if lower else np.triu_indices
        return ctx.convert(ctx.b.constant(np.stack(pick(row, offset, col)).astype(np.int64), DType.int64), ctx.out.dtype)

    return translate


def scalar_tensor(ctx: TranslationContext, value, **_kwargs):
    return ctx.value(value, ctx.out.dtype)  # a number, or a size or float computed from symbolic sizes


def fill(ctx: TranslationContext, x, value):
    return ctx.broadcast(ctx.value(value, ctx.out.dtype), ctx.out.shape)


def arange(ctx: TranslationContext, *args, **_kwargs):
    """start + step * i, computed like torch (double for floats, exact for integers). A
    symbolic start or step (``torch.arange(n, n + 3)``) is a size value (ctx.size_value)."""
    numbers = [a for a in args if isinstance(a, (int, float, DimExpr)) and not isinstance(a, bool)]
    start, step = 0, 1
    if len(numbers) >= 2:
        start = numbers[0]
    if len(numbers) >= 3:
        step = numbers[2]
    out = ctx.out
    (n,) = out.shape
    wide = DType.float64 if out.dtype.is_float or any(isinstance(v, float) for v in (start, step)) else DType.int64
    counts = ctx.b.iota(dtype=wide, shape=(n,), dimension=0)
    if isinstance(step, DimExpr) or step != 1:
        counts = ctx.b.mul(counts, ctx.broadcast(ctx.value(step, wide), (n,)))
    if isinstance(start, DimExpr) or start != 0:
        counts = ctx.b.add(counts, ctx.broadcast(ctx.value(start, wide), (n,)))
    return ctx.convert(counts, out.dtype)


def sym_size(ctx: TranslationContext, x, dim):
    return x.type.shape[ctx.axis(dim, x.type.rank)]


def sym_numel(ctx: TranslationContext, x):
    if not x.type.is_static:
        unsupported("numel of a tensor with symbolic dimensions")
    return math.prod(x.type.shape)


def sym_stride(ctx: TranslationContext, x, dim):
    """torch's stride of x (from the traced tensor): IR values have no strides, torch's answer is a constant."""
    return _traced_int(ctx, "stride")


def sym_storage_offset(ctx: TranslationContext, x):
    return _traced_int(ctx, "storage offset")


def sym_is_contiguous(ctx: TranslationContext, x, *_args):
    """torch's answer for the traced tensor (IR values are always contiguous; torch's may not be)."""
    if not isinstance(ctx.val, bool):
        unsupported("is_contiguous of a tensor whose contiguity depends on symbolic sizes")
    return ctx.val


def _traced_int(ctx: TranslationContext, what: str) -> int | DimExpr:
    if ctx.val is None:
        unsupported(f"the {what} is unknown (the FX node has no traced value)")
    return dim_of(ctx.val)


def assertion(ctx: TranslationContext, *_args, **_kwargs):
    """Runtime assertions emit nothing: the IR has no ops with effects (docs/frontend.md)."""
    return None


def _table():
    table = {}
    for key in ("view.default", "_unsafe_view.default", "reshape.default", "view_copy.default",
                "unsqueeze.default", "squeeze.dim", "squeeze.dims", "squeeze.default",
                "_reshape_alias.default", "flatten.using_ints", "unflatten.int"):
        table[key] = reshape
    for key in ("clone.default", "alias.default", "detach.default", "lift_fresh_copy.default",
                "contiguous.default", "alias_copy.default", "detach_copy.default"):
        table[key] = identity
    for key in ("expand.default", "expand_copy.default"):
        table[key] = expand
    for key in ("zeros_like.default", "empty_like.default", "new_zeros.default", "zeros.default",
                "empty.memory_format", "empty_strided.default", "new_empty.default",
                "new_empty_strided.default", "empty_permuted.default"):
        table[key] = _constant_fill(0)
    for key in ("ones_like.default", "new_ones.default", "ones.default"):
        table[key] = _constant_fill(1)
    for key in ("arange.default", "arange.start", "arange.start_step"):
        table[key] = arange
    table.update({
        "permute.default": permute, "permute_copy.default": permute,
        "t.default": transpose, "transpose.int": transpose,
        "_to_copy.default": to_copy, "to.dtype": to_copy, "copy.default": copy,
        "slice.Tensor": slice_, "slice_copy.Tensor": slice_,
        "select.int": select, "select_copy.int": select,
        "cat.default": cat, "split_with_sizes.default": split_with_sizes, "split.Tensor": split,
        "unbind.int": unbind, "flip.default": flip, "constant_pad_nd.default": constant_pad_nd,
        "repeat.default": repeat, "diagonal.default": diagonal,
        "full.default": full, "full_like.default": full_like, "new_full.default": new_full,
        "tril_indices.default": _triangle_indices(True), "triu_indices.default": _triangle_indices(False),
        "scalar_tensor.default": scalar_tensor, "fill.Scalar": fill, "fill.Tensor": fill,
        "sym_size.int": sym_size, "sym_numel.default": sym_numel,
        "sym_stride.int": sym_stride, "sym_storage_offset.default": sym_storage_offset,
        "sym_is_contiguous.default": sym_is_contiguous,
        "_assert_async.default": assertion, "_assert_async.msg": assertion,
        "_assert_tensor_metadata.default": assertion, "_assert_scalar.default": assertion,
    })
    return table


TABLE = _table()
