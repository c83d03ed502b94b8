"""Views that pick elements by storage position (``as_strided``, ``as_strided_scatter``) or
by overlapping windows (``unfold``): gathers and scatters with constant indices.

IR values have no storage, so a strided view is translated by working out, at trace time,
which element each of its reads is. torch reads ``storage[offset + sum(i_k * stride_k)]``.
The view's input may itself be a view of something else (Longformer's ``_chunk``:
``hidden.view(...).as_strided(...)``), so the storage it reads is its *storage root*'s: the
nearest tensor up its chain of views that owns the storage. Each FX node's traced value
(``meta["val"]``, a fake tensor) carries strides, storage offset and storage identity, so
the root's layout says which of its elements sits at each storage position, and the view is
a gather over the root's elements, flattened.

What cannot be proven right is refused (the user sees an ``UnsupportedAtenOp`` with the
reason), never read approximately:

- a read of storage no element of the root occupies (padding, another tensor's memory);
- a root whose elements overlap in storage (which of them a read means is not defined);
- an explicit ``storage_offset`` on a chain rooted at a graph input: the offset counts
  from the start of the input's storage, a later call may pass a tensor that starts
  elsewhere in its storage, and torch's guards do not check that;
- a root whose storage an earlier node of the graph writes to, a view that changes the
  element size (``view(dtype)``), symbolic sizes or strides.

Example::

    >>> import torch
    >>> from torch.fx.experimental.proxy_tensor import make_fx
    >>> from parity.frontend.translate import fx_to_ir
    >>> chunk = lambda t: t.view(2, 4).as_strided((3, 4), (2, 1))   # overlapping windows of a view
    >>> fx_to_ir(make_fx(chunk)(torch.arange(8.0))).graph.op_counts()["gather"]
    1
"""

from __future__ import annotations

import operator

import numpy as np
import torch
import torch.fx
from torch.multiprocessing.reductions import StorageWeakRef

from ...ir.types import DimExpr
from ..context import TranslationContext, unsupported
from ..sizes import dim_of


def as_strided(ctx: TranslationContext, x, size, stride, storage_offset=None):
    """A gather over the elements of x's storage root: each read's storage position names one.

    Example: ``as_strided(arange(6.), (2, 2), (1, 2), 1)`` reads storage 1, 3, 2, 4.
    """
    source = ctx.node.args[0]
    shape = _static_shape(ctx, tuple(ctx.out.shape))
    root = storage_root(source)
    if storage_offset is not None and root.op == "placeholder":
        unsupported(f"as_strided with storage_offset={storage_offset} reads graph input {root.name}'s storage from "
                    f"its start, and a later call may pass a tensor that starts elsewhere in its storage (torch's "
                    f"guards do not check where): leave storage_offset out (it then counts from the tensor's own "
                    f"start) or slice the tensor first")
    _check_root(ctx, root, source)
    traced = source.meta["val"]
    offset = traced.storage_offset() if storage_offset is None else storage_offset
    root_val = root.meta["val"]
    positions = storage_positions(tuple(root_val.shape), root_val.stride(), root_val.storage_offset())
    wanted = storage_positions(shape, stride, offset)
    index = _elements_at(positions, wanted, lambda: (
        f"as_strided(size={list(shape)}, stride={list(stride)}, storage_offset={dim_of(offset)}) reads storage "
        f"that no element of {_describe(root, source)} occupies: only reads within that tensor translate"))
    if index.size == 0:
        return ctx.full(0, x.type.dtype, shape)
    whole = ctx.value_of(root)
    flat = ctx.reshape(whole, (whole.type.numel,))
    if index.size == positions.size and (index == np.arange(index.size)).all():
        return ctx.reshape(flat, shape)
    return ctx.reshape(ctx.b.gather(flat, ctx.b.constant(index), axis=0), shape)


def as_strided_scatter(ctx: TranslationContext, x, src, size, stride, storage_offset=None):
    """x with its strided view replaced by ``src`` (as_strided's backward; Swin). torch writes into
    a copy of x's whole storage that keeps x's strides and storage offset (a plain contiguous copy
    when x repeats elements through a zero stride), so each element of the result takes src's
    value where a write lands on its storage position, else x's: one gather over [x, src]
    flattened. Two writes to one position have no single answer.

    The layout is x's traced one, not the node's own traced value: under AOTAutograd's
    functionalization that value says storage offset 0 for a copy of a view with offset 2, where
    torch's kernel keeps the 2 (measured, torch 2.13)."""
    source = ctx.node.args[0]
    shape = _static_shape(ctx, tuple(src.type.shape))
    if storage_offset is not None and storage_root(source).op == "placeholder":
        unsupported(f"as_strided_scatter with storage_offset={storage_offset} into a graph input's copy: the "
                    f"offset counts from the start of the input's storage, and a later call may pass a tensor "
                    f"that starts elsewhere in it: leave storage_offset out or slice the tensor first")
    traced = source.meta.get("val")
    if not isinstance(traced, torch.Tensor):
        unsupported(f"as_strided_scatter of {source.name}: its traced value (strides, storage) is unknown")
    _static_shape(ctx, tuple(x.type.shape))
    if any(dim_of(st) == 0 and n > 1 for n, st in zip(x.type.shape, traced.stride())):
        layout_stride, layout_offset = _contiguous_strides(tuple(x.type.shape)), 0
    else:
        layout_stride, layout_offset = traced.stride(), traced.storage_offset()
    positions = storage_positions(tuple(x.type.shape), layout_stride, layout_offset)
    offset = layout_offset if storage_offset is None else storage_offset
    wanted = storage_positions(shape, stride, offset)
    if len(np.unique(wanted)) != wanted.size:
        unsupported(f"as_strided_scatter with a view that covers an element twice (stride {list(stride)})")
    n = x.type.numel
    take = np.arange(n, dtype=np.int64)
    # every element at a written position takes that write (elements of x may share a position);
    # a write that lands on no element of x changes nothing torch returns
    writer = dict(zip(wanted.tolist(), range(wanted.size)))
    for element, position in enumerate(positions.tolist()):
        if position in writer:
            take[element] = n + writer[position]
    if (take < n).all():
        return x
    both = ctx.b.concatenate(ctx.reshape(x, (n,)), ctx.reshape(ctx.convert(src, x.type.dtype), (wanted.size,)),
                             dimension=0)
    return ctx.reshape(ctx.b.gather(both, ctx.b.constant(take), axis=0), x.type.shape)


def _contiguous_strides(shape: tuple) -> tuple:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def unfold(ctx: TranslationContext, x, dimension, size, step):
    """Windows of ``size`` elements every ``step`` along ``dimension`` (torch.stft's framing):
    that dim becomes the window count and a last dim of ``size`` is added. One gather with
    constant indices into flattened x (static sizes). Windows are logical, so x's storage
    layout does not matter."""
    axis = ctx.axis(dimension, max(x.type.rank, 1))
    if not x.type.is_static:
        if not isinstance(x.type.shape[axis], int):
            unsupported("unfold along a symbolic dim")
        return _unfold_by_slices(ctx, x, axis, size, step)
    index = np.arange(x.type.numel, dtype=np.int64).reshape(x.type.shape or (1,))
    windows = np.lib.stride_tricks.sliding_window_view(index, size, axis=axis)
    windows = windows[(slice(None),) * axis + (slice(None, None, step),)]
    shape = tuple(ctx.out.shape)
    if windows.size == 0:
        return ctx.full(0, x.type.dtype, shape)
    flat = ctx.reshape(x, (x.type.numel,))
    return ctx.reshape(ctx.b.gather(flat, ctx.b.constant(np.ascontiguousarray(windows).reshape(-1)), axis=0), shape)


def _unfold_by_slices(ctx: TranslationContext, x, axis: int, size: int, step: int):
    """:func:`unfold` of an ``x`` with symbolic dims other than ``axis`` (a dynamic batch):
    element k of every window is one strided slice of x along ``axis`` (from k, every
    ``step``); the ``size`` slices are stacked on a new last dim."""
    shape, rank = tuple(x.type.shape), x.type.rank
    count = (shape[axis] - size) // step + 1
    part = (*shape[:axis], count, *shape[axis + 1:], 1)
    slices = []
    for k in range(size):
        start, limit, strides = [0] * rank, list(shape), [1] * rank
        start[axis], limit[axis], strides[axis] = k, k + (count - 1) * step + 1, step
        window = ctx.b.slice(x, start_indices=tuple(start), limit_indices=tuple(limit), strides=tuple(strides))
        slices.append(ctx.reshape(window, part))
    return slices[0] if size == 1 else ctx.b.concatenate(*slices, dimension=rank)


# -- storage layouts ------------------------------------------------------------------------


def storage_root(node: torch.fx.Node) -> torch.fx.Node:
    """The nearest node up ``node``'s chain of views whose traced value owns the storage that
    ``node``'s shares: each step goes to the viewed tensor (a view op's first argument; through
    ``getitem`` of ``split``/``unbind``) while the traced values share one storage."""
    while True:
        parent = _viewed(node)
        if parent is None or not _same_storage(node.meta.get("val"), parent.meta.get("val")):
            return node
        node = parent


def storage_positions(shape: tuple, stride, offset) -> np.ndarray:
    """offset + sum(i_k * stride_k) for every index of ``shape``, row-major, flattened."""
    stride, offset = [dim_of(s) for s in stride], dim_of(offset)
    if any(isinstance(v, DimExpr) for v in (*stride, offset)):
        unsupported("as_strided with symbolic strides or offset")
    positions = np.full(shape, offset, np.int64)
    for axis, (n, st) in enumerate(zip(shape, stride)):
        positions += (np.arange(n, dtype=np.int64) * st).reshape((n,) + (1,) * (len(shape) - axis - 1))
    return positions.reshape(-1)


def _viewed(node: torch.fx.Node) -> torch.fx.Node | None:
    """The tensor ``node`` may be a view of: a non-mutating op's first argument, or for
    ``getitem`` the first argument of the op whose result it picks. Whether it *is* a view is
    the storage check's answer (:func:`storage_root`)."""
    if node.op != "call_function":
        return None
    if node.target is operator.getitem:
        node = node.args[0]
        if not isinstance(node, torch.fx.Node) or node.op != "call_function":
            return None
    if not isinstance(node.target, torch._ops.OpOverload) or _mutates(node) or not node.args:
        return None
    first = node.args[0]
    return first if isinstance(first, torch.fx.Node) else None


def _mutates(node: torch.fx.Node) -> bool:
    schema = node.target._schema
    return any(a.alias_info is not None and a.alias_info.is_write for a in schema.arguments)


def _same_storage(a, b) -> bool:
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        return False
    try:
        return StorageWeakRef(a.untyped_storage()) == StorageWeakRef(b.untyped_storage())
    except (RuntimeError, NotImplementedError):  # a tensor with no storage to compare: not provably one
        return False


def _check_root(ctx: TranslationContext, root: torch.fx.Node, source: torch.fx.Node) -> None:
    """What must hold for the root's IR value to be what x's storage holds when the view reads it."""
    root_val, traced = root.meta.get("val"), source.meta.get("val")
    if not isinstance(root_val, torch.Tensor) or not isinstance(traced, torch.Tensor):
        unsupported(f"{_op(ctx)} of {source.name}: its traced value (strides, storage) is unknown")
    if root_val.dtype.itemsize != traced.dtype.itemsize:
        unsupported(f"{_op(ctx)} of a view that changes the element size ({root_val.dtype} storage read as "
                    f"{traced.dtype}): storage positions would not name whole elements")
    _static_shape(ctx, tuple(dim_of(d) for d in root_val.shape))
    positions = storage_positions(tuple(root_val.shape), root_val.stride(), root_val.storage_offset())
    if len(np.unique(positions)) != positions.size:
        unsupported(f"{_op(ctx)} of {_describe(root, source)}, whose elements overlap in storage (strides "
                    f"{tuple(root_val.stride())}): which element a read means is not defined")
    for node in ctx.node.graph.nodes:
        if node is ctx.node:
            break
        if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload) and _mutates(node):
            if any(_same_storage(a.meta.get("val"), root_val) for a in _node_args(node)):
                unsupported(f"{_op(ctx)} reads storage that {node.target} writes to earlier in the graph: "
                            f"the IR has no storage to write to")


def _node_args(node: torch.fx.Node) -> list[torch.fx.Node]:
    found: list[torch.fx.Node] = []
    torch.fx.node.map_arg((node.args, node.kwargs), found.append)
    return found


def _elements_at(positions: np.ndarray, wanted: np.ndarray, why) -> np.ndarray:
    """For each wanted storage position, the index of the element there (``positions`` distinct);
    ``why()`` is the refusal when a position holds no element."""
    if wanted.size == 0:
        return np.zeros(0, np.int64)
    top = int(max(positions.max(initial=-1), wanted.max())) + 1
    inverse = np.full(top, -1, np.int64)
    inverse[positions] = np.arange(positions.size)
    if wanted.min() < 0 or (inverse[wanted] < 0).any():
        unsupported(why())
    return inverse[wanted]


def _static_shape(ctx: TranslationContext, shape: tuple) -> tuple:
    if not all(isinstance(d, int) for d in shape):
        unsupported(f"{_op(ctx)} needs static sizes")
    return shape


def _describe(root: torch.fx.Node, source: torch.fx.Node) -> str:
    val = root.meta["val"]
    what = f"graph input {root.name}" if root.op == "placeholder" else f"{root.target} ({root.name})"
    via = "" if root is source else f", viewed as {source.name}"
    return f"{what} {list(val.shape)} (strides {tuple(val.stride())}, offset {val.storage_offset()}{via})"


def _op(ctx: TranslationContext) -> str:
    return ctx.name.split(".")[1]


TABLE = {
    "as_strided.default": as_strided, "as_strided_copy.default": as_strided,
    "as_strided_scatter.default": as_strided_scatter, "unfold.default": unfold,
}
