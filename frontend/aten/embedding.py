"""Embedding aten ops: embedding and its dense backward, embedding bags."""

from __future__ import annotations

import math

from ...ir.dtypes import DType
from ..translate import Lowering, unsupported


def embedding(ctx: Lowering, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return ctx.b.embedding(weight, indices)


def embedding_dense_backward(ctx: Lowering, grad, indices, num_weights, padding_idx, scale_grad_by_freq):
    if scale_grad_by_freq:
        unsupported("embedding backward with scale_grad_by_freq=True")
    dim = grad.type.shape[-1]
    count = math.prod(indices.type.shape) if indices.type.is_static else unsupported("symbolic embedding indices")
    flat_idx = ctx.reshape(ctx.convert(indices, DType.int64), (count,))
    flat_grad = ctx.reshape(grad, (count, dim))
    if padding_idx is not None and padding_idx >= 0:
        keep = ctx.b.ne(flat_idx, ctx.full(padding_idx, DType.int64, (count,)))
        keep = ctx.b.broadcast_in_dim(keep, shape=(count, dim), broadcast_dimensions=(0,))
        flat_grad = ctx.b.select(keep, flat_grad, ctx.full(0, grad.type.dtype, (count, dim)))
    index = ctx.b.broadcast_in_dim(flat_idx, shape=(count, dim), broadcast_dimensions=(0,))
    zeros = ctx.full(0, grad.type.dtype, (num_weights, dim))
    return ctx.b.scatter(zeros, index, flat_grad, axis=0, reduce="add")


TABLE = {
    "embedding.default": embedding,
    "embedding_dense_backward.default": embedding_dense_backward,
}
