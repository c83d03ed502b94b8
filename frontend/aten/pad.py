"""Reflection and replication padding, forward and backward (``F.pad`` modes "reflect"
and "replicate").

Each padded dim is a gather with a constant index: output position i reads input
position j = i - low, reflected (``-j``, ``2(n-1) - j``) or clamped (to ``[0, n - 1]``).
Negative padding crops, as in torch. The backward is the transpose: a scatter-add of
the gradient to the same indices, dim by dim.

Example: reflecting [a, b, c] by (2, 1) reads positions [2, 1, 0, 1, 2, 1]: c b a b c b.
"""

from __future__ import annotations

import numpy as np

from ..context import TranslationContext, unsupported


def source_positions(mode: str, size: int, low: int, high: int) -> np.ndarray:
    """The input position each output position of one padded dim reads."""
    j = np.arange(-low, size + high, dtype=np.int64)
    if mode == "reflect":
        if low >= size or high >= size:
            unsupported(f"reflection padding ({low}, {high}) must be smaller than the dim ({size})")
        j = np.where(j < 0, -j, j)
        return np.where(j >= size, 2 * (size - 1) - j, j)
    return np.clip(j, 0, size - 1)


def _padded_dims(x, padding):
    """(axis, low, high) per padded dim; torch lists the last dim first."""
    rank = x.type.rank
    dims = []
    for i in range(len(padding) // 2):
        axis = rank - 1 - i
        if not isinstance(x.type.shape[axis], int):
            unsupported("padding a symbolic dimension")
        dims.append((axis, padding[2 * i], padding[2 * i + 1]))
    return dims


def _along(ctx: TranslationContext, index: np.ndarray, axis: int, shape):
    """The constant ``index`` laid along ``axis`` of ``shape`` (a gather/scatter index)."""
    return ctx.b.broadcast_in_dim(ctx.b.constant(index), shape=tuple(shape), broadcast_dimensions=(axis,))


def _pad(mode: str):
    def translate(ctx: TranslationContext, x, padding):
        for axis, low, high in _padded_dims(x, padding):
            index = source_positions(mode, x.type.shape[axis], low, high)
            shape = list(x.type.shape)
            shape[axis] = index.size
            x = ctx.b.gather(x, _along(ctx, index, axis, shape), axis=axis)
        return x

    return translate


def _pad_backward(mode: str):
    def translate(ctx: TranslationContext, grad, x, padding):
        """Every output position adds its gradient to the input position it read."""
        for axis, low, high in reversed(_padded_dims(x, padding)):
            size = x.type.shape[axis]
            index = source_positions(mode, size, low, high)
            shape = list(grad.type.shape)
            shape[axis] = size
            zeros = ctx.full(0, grad.type.dtype, shape)
            grad = ctx.b.scatter(zeros, _along(ctx, index, axis, grad.type.shape), grad, axis=axis, reduce="add")
        return grad

    return translate


def _table():
    table = {}
    for n in (1, 2, 3):
        for aten, mode in (("reflection", "reflect"), ("replication", "replicate")):
            table[f"{aten}_pad{n}d.default"] = _pad(mode)
            table[f"{aten}_pad{n}d_backward.default"] = _pad_backward(mode)
    return table


TABLE = _table()
