"""Normalization aten ops, forward and backward: layer norm, batch norm (training,
functional running-stat updates, inference), group norm, and weight norm.

An affine layer norm whose statistics nobody reads, and batch norm in inference, become
the IR's normalization composites (``layer_norm``, ``batch_norm``: backends may claim
them); the other forwards, and every backward, are written with IR primitives, their
statistics in the dtype torch gives them.
"""

from __future__ import annotations

import math

from ...ir.ops.rules import is_symbolic
from ..context import TranslationContext, unsupported


def _moments(ctx: TranslationContext, x, axes, dtype):
    """mean and biased variance over ``axes`` (kept as size-1 dims), in ``dtype``."""
    b = ctx.b
    x = ctx.convert(x, dtype)
    count = math.prod(x.type.shape[a] for a in axes)
    keep_shape = tuple(1 if d in axes else s for d, s in enumerate(x.type.shape))
    divisor = _count(ctx, count, dtype, _drop(x.type.shape, axes))
    mean = ctx.reshape(b.div(b.reduce_sum(x, axes=axes), divisor), keep_shape)
    centered = b.sub(x, _expand(ctx, mean, x.type.shape))
    var = b.div(b.reduce_sum(b.mul(centered, centered), axes=axes), divisor)
    return mean, ctx.reshape(var, keep_shape), centered, count


def _count(ctx: TranslationContext, count, dtype, shape, reciprocal: bool = False):
    """The number of elements a statistic covers (or its reciprocal), as ``dtype`` broadcast to
    ``shape``: a constant, or computed from the sizes where a batch or length is symbolic."""
    if not is_symbolic(count):
        return ctx.full(1 / count if reciprocal else count, dtype, shape)
    value = ctx.value(count, dtype)
    if reciprocal:
        value = ctx.b.div(ctx.const(1, dtype), value)
    return ctx.broadcast(value, tuple(shape))


def _bessel(ctx: TranslationContext, count, dtype, shape):
    """count / (count - 1), the unbiased variance's factor (count / 1 for a single element, as torch)."""
    if not is_symbolic(count):
        return ctx.full(count / max(count - 1, 1), dtype, shape)
    n, one = ctx.value(count, dtype), ctx.const(1, dtype)
    return ctx.broadcast(ctx.b.div(n, ctx.b.max(ctx.b.sub(n, one), one)), tuple(shape))


def _drop(shape, axes):
    return tuple(s for d, s in enumerate(shape) if d not in axes)


def _expand(ctx: TranslationContext, x, shape):
    """Broadcast a keepdim-shaped value (size-1 dims) to ``shape``."""
    if x.type.shape == tuple(shape):
        return x
    keep = tuple(d for d, s in enumerate(x.type.shape) if not (s == 1 and shape[d] != 1))
    squeezed = ctx.reshape(x, tuple(x.type.shape[d] for d in keep))
    return ctx.b.broadcast_in_dim(squeezed, shape=tuple(shape), broadcast_dimensions=keep)


def _affine(ctx: TranslationContext, y, weight, bias, dims):
    """y * weight + bias, with weight/bias laid along ``dims`` of y."""
    shape = y.type.shape
    if weight is not None:
        y = ctx.b.mul(y, ctx.b.broadcast_in_dim(ctx.convert(weight, y.type.dtype), shape=shape, broadcast_dimensions=dims))
    if bias is not None:
        y = ctx.b.add(y, ctx.b.broadcast_in_dim(ctx.convert(bias, y.type.dtype), shape=shape, broadcast_dimensions=dims))
    return y


def native_layer_norm(ctx: TranslationContext, x, normalized_shape, weight, bias, eps):
    rank, k = x.type.rank, len(normalized_shape)
    axes = tuple(range(rank - k, rank))
    stat_dtype = ctx.out_type(1).dtype
    if not (ctx.users_of_result(1) or ctx.users_of_result(2)) and weight is not None and bias is not None:
        return ctx.b.layer_norm(x, weight, bias, normalized_ndim=k, eps=float(eps)), None, None
    mean, var, centered, _ = _moments(ctx, x, axes, stat_dtype)
    rstd = ctx.b.rsqrt(ctx.b.add(var, ctx.full(eps, stat_dtype, var.type.shape)))
    y = ctx.b.mul(centered, _expand(ctx, rstd, x.type.shape))
    y = _affine(ctx, ctx.convert(y, ctx.out_type(0).dtype), weight, bias, axes)
    return y, mean, rstd


def native_layer_norm_backward(ctx: TranslationContext, grad, x, normalized_shape, mean, rstd, weight, bias,
                               output_mask):
    b = ctx.b
    rank, k = x.type.rank, len(normalized_shape)
    axes = tuple(range(rank - k, rank))
    batch_axes = tuple(range(rank - k))
    dtype = x.type.dtype
    n = math.prod(x.type.shape[a] for a in axes)
    xhat = b.mul(b.sub(x, _expand(ctx, ctx.convert(mean, dtype), x.type.shape)),
                 _expand(ctx, ctx.convert(rstd, dtype), x.type.shape))
    gw = grad if weight is None else b.mul(grad, b.broadcast_in_dim(weight, shape=x.type.shape, broadcast_dimensions=axes))
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        sum_g = b.broadcast_in_dim(b.reduce_sum(gw, axes=axes), shape=x.type.shape, broadcast_dimensions=batch_axes)
        sum_gx = b.broadcast_in_dim(b.reduce_sum(b.mul(gw, xhat), axes=axes), shape=x.type.shape,
                                    broadcast_dimensions=batch_axes)
        inner = b.sub(b.sub(b.mul(gw, ctx.full(n, dtype, x.type.shape)), sum_g), b.mul(xhat, sum_gx))
        scale = b.div(_expand(ctx, ctx.convert(rstd, dtype), x.type.shape), ctx.full(n, dtype, x.type.shape))
        grad_input = b.mul(scale, inner)
    if output_mask[1] and weight is not None:
        grad_weight = b.reduce_sum(b.mul(grad, xhat), axes=batch_axes)
    if output_mask[2] and bias is not None:
        grad_bias = b.reduce_sum(grad, axes=batch_axes)
    return grad_input, grad_weight, grad_bias


def _batch_norm_train(ctx: TranslationContext, x, weight, bias, eps):
    axes = (0, *range(2, x.type.rank))
    stat_dtype = ctx.out_type(1).dtype
    mean, var, centered, count = _moments(ctx, x, axes, stat_dtype)
    invstd = ctx.b.rsqrt(ctx.b.add(var, ctx.full(eps, stat_dtype, var.type.shape)))
    y = ctx.b.mul(centered, _expand(ctx, invstd, x.type.shape))
    y = _affine(ctx, ctx.convert(y, ctx.out_type(0).dtype), weight, bias, (1,))
    channels = (x.type.shape[1],)
    return y, ctx.reshape(mean, channels), ctx.reshape(invstd, channels), ctx.reshape(var, channels), count


def batch_norm_functional(ctx: TranslationContext, x, weight, bias, running_mean, running_var, training, momentum, eps):
    if not training:
        out, _, _ = batch_norm_no_training(ctx, x, weight, bias, running_mean, running_var, momentum, eps)
        return out, ctx.full(0, ctx.out_type(1).dtype, (0,)), ctx.full(0, ctx.out_type(2).dtype, (0,)), running_mean, running_var
    y, mean, invstd, var, count = _batch_norm_train(ctx, x, weight, bias, eps)
    b = ctx.b
    rdt = running_mean.type.dtype
    shape = running_mean.type.shape
    m = ctx.full(momentum, rdt, shape)
    keep = ctx.full(1 - momentum, rdt, shape)
    unbiased = b.mul(ctx.convert(var, rdt), _bessel(ctx, count, rdt, shape))
    new_mean = b.add(b.mul(running_mean, keep), b.mul(ctx.convert(mean, rdt), m))
    new_var = b.add(b.mul(running_var, keep), b.mul(unbiased, m))
    return y, mean, invstd, new_mean, new_var


def native_batch_norm(ctx: TranslationContext, x, weight, bias, running_mean, running_var, training, momentum, eps):
    """The mutating form (graphs captured without functionalization): only when nothing mutates."""
    if training and running_mean is not None:
        unsupported("native_batch_norm updates running stats in place; capture through AOTAutograd "
                    "(parity.compile) so the update is functional")
    if training:
        return batch_norm_no_stats(ctx, x, weight, bias, training, momentum, eps)
    out, _, _ = batch_norm_no_training(ctx, x, weight, bias, running_mean, running_var, momentum, eps)
    return out, ctx.full(0, ctx.out_type(1).dtype, ctx.out_type(1).shape), ctx.full(0, ctx.out_type(2).dtype, ctx.out_type(2).shape)


def batch_norm_no_stats(ctx: TranslationContext, x, weight, bias, training, momentum, eps):
    y, mean, invstd, _, _ = _batch_norm_train(ctx, x, weight, bias, eps)
    return y, mean, invstd


def batch_norm_no_training(ctx: TranslationContext, x, weight, bias, running_mean, running_var, momentum, eps):
    dtype = x.type.dtype
    channels = x.type.shape[1]
    if weight is None:
        weight = ctx.full(1, dtype, (channels,))
    if bias is None:
        bias = ctx.full(0, dtype, (channels,))
    out = ctx.b.batch_norm(x, ctx.convert(weight, dtype), ctx.convert(bias, dtype), ctx.convert(running_mean, dtype),
                           ctx.convert(running_var, dtype), training=False, momentum=float(momentum), eps=float(eps))
    out = out[0] if isinstance(out, tuple) else out
    return out, ctx.full(0, ctx.out_type(1).dtype, (0,)), ctx.full(0, ctx.out_type(2).dtype, (0,))


def batch_norm_backward(ctx: TranslationContext, grad, x, weight, running_mean, running_var, save_mean, save_invstd,
                        train, eps, output_mask):
    b = ctx.b
    dtype = x.type.dtype
    shape = x.type.shape
    axes = (0, *range(2, x.type.rank))
    count = math.prod(shape[a] for a in axes)
    if train:
        mean, invstd = ctx.convert(save_mean, dtype), ctx.convert(save_invstd, dtype)
    else:
        mean = ctx.convert(running_mean, dtype)
        invstd = b.rsqrt(b.add(ctx.convert(running_var, dtype), ctx.full(eps, dtype, running_var.type.shape)))
    along = (1,)
    centered = b.sub(x, b.broadcast_in_dim(mean, shape=shape, broadcast_dimensions=along))
    sum_g = b.reduce_sum(grad, axes=axes)
    dot = b.reduce_sum(b.mul(grad, centered), axes=axes)
    w = ctx.full(1, dtype, invstd.type.shape) if weight is None else ctx.convert(weight, dtype)
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        if train:
            proj = b.mul(dot, b.mul(b.mul(invstd, invstd), _count(ctx, count, dtype, invstd.type.shape, reciprocal=True)))
            gmean = b.mul(sum_g, _count(ctx, count, dtype, sum_g.type.shape, reciprocal=True))
            spread = b.mul(centered, b.broadcast_in_dim(proj, shape=shape, broadcast_dimensions=along))
            inner = b.sub(b.sub(grad, spread), b.broadcast_in_dim(gmean, shape=shape, broadcast_dimensions=along))
        else:
            inner = grad
        grad_input = b.mul(inner, b.broadcast_in_dim(b.mul(invstd, w), shape=shape, broadcast_dimensions=along))
    if output_mask[1]:
        grad_weight = b.mul(dot, invstd)
    if output_mask[2]:
        grad_bias = sum_g
    return grad_input, grad_weight, grad_bias


def native_group_norm(ctx: TranslationContext, x, weight, bias, n, c, hw, group, eps):
    shape = x.type.shape
    stat_dtype = ctx.out_type(1).dtype
    grouped = ctx.reshape(x, (shape[0], group, math.prod(shape[1:]) // group))
    mean, var, centered, _ = _moments(ctx, grouped, (2,), stat_dtype)
    rstd = ctx.b.rsqrt(ctx.b.add(var, ctx.full(eps, stat_dtype, var.type.shape)))
    y = ctx.reshape(ctx.b.mul(centered, _expand(ctx, rstd, grouped.type.shape)), shape)
    y = _affine(ctx, ctx.convert(y, ctx.out_type(0).dtype), weight, bias, (1,))
    return y, ctx.reshape(mean, (shape[0], group)), ctx.reshape(rstd, (shape[0], group))


def native_group_norm_backward(ctx: TranslationContext, grad, x, mean, rstd, weight, n, c, hw, group, output_mask):
    b = ctx.b
    dtype, shape = x.type.dtype, x.type.shape
    width = math.prod(shape[1:]) // group
    grouped = (shape[0], group, width)
    per_channel = (shape[0], shape[1], math.prod(shape[2:]))
    stat = (shape[0], group)

    def spread(stat_value):  # [N, G] -> [N, G, D]
        return b.broadcast_in_dim(ctx.convert(stat_value, dtype), shape=grouped, broadcast_dimensions=(0, 1))

    xhat = b.mul(b.sub(ctx.reshape(x, grouped), spread(ctx.reshape(mean, stat))), spread(ctx.reshape(rstd, stat)))
    g3 = ctx.reshape(grad, per_channel)
    gw = g3 if weight is None else b.mul(g3, b.broadcast_in_dim(weight, shape=per_channel, broadcast_dimensions=(1,)))
    gw = ctx.reshape(gw, grouped)
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        sum_g = b.broadcast_in_dim(b.reduce_sum(gw, axes=(2,)), shape=grouped, broadcast_dimensions=(0, 1))
        sum_gx = b.broadcast_in_dim(b.reduce_sum(b.mul(gw, xhat), axes=(2,)), shape=grouped, broadcast_dimensions=(0, 1))
        inner = b.sub(b.sub(b.mul(gw, ctx.full(width, dtype, grouped)), sum_g), b.mul(xhat, sum_gx))
        scale = b.div(spread(ctx.reshape(rstd, stat)), ctx.full(width, dtype, grouped))
        grad_input = ctx.reshape(b.mul(scale, inner), shape)
    if output_mask[1] and weight is not None:
        grad_weight = b.reduce_sum(b.mul(g3, ctx.reshape(xhat, per_channel)), axes=(0, 2))
    if output_mask[2]:
        grad_bias = b.reduce_sum(g3, axes=(0, 2))
    return grad_input, grad_weight, grad_bias


def weight_norm(ctx: TranslationContext, v, g, dim=0):
    """(v * g / norm, norm), norm = ||v|| over every dim but ``dim`` (kept as size 1; f32 for bf16 g)."""
    norm = _norm_except(ctx, v, dim, ctx.out_type(1).dtype)
    scale = ctx.b.div(g, ctx.convert(norm, g.type.dtype))
    return ctx.b.mul(v, _expand(ctx, scale, v.type.shape)), norm


def _norm_except(ctx: TranslationContext, v, dim: int, dtype):
    axes = tuple(d for d in range(v.type.rank) if d != ctx.axis(dim, v.type.rank))
    x = ctx.convert(v, dtype)
    norm = ctx.b.sqrt(ctx.b.reduce_sum(ctx.b.mul(x, x), axes=axes))
    return ctx.reshape(norm, tuple(1 if d in axes else s for d, s in enumerate(v.type.shape)))


def weight_norm_backward(ctx: TranslationContext, grad, v, g, norms, dim):
    """torch's formula: s = sum(grad * v) per slice; dg = s / norm; dv = g / norm * (grad - v * s / norm²)."""
    b, dtype = ctx.b, norms.type.dtype
    axes = tuple(d for d in range(v.type.rank) if d != ctx.axis(dim, v.type.rank))
    keep = norms.type.shape
    sums = ctx.reshape(b.reduce_sum(b.mul(ctx.convert(grad, dtype), ctx.convert(v, dtype)), axes=axes), keep)
    grad_g = b.div(sums, norms)
    ratio = b.div(sums, b.mul(norms, norms))
    inner = b.sub(ctx.convert(grad, dtype), b.mul(ctx.convert(v, dtype), _expand(ctx, ratio, v.type.shape)))
    grad_v = b.mul(_expand(ctx, b.div(ctx.convert(g, dtype), norms), v.type.shape), inner)
    return ctx.convert(grad_v, ctx.out_type(0).dtype), ctx.convert(grad_g, ctx.out_type(1).dtype)


TABLE = {
    "native_layer_norm.default": native_layer_norm,
    "native_layer_norm_backward.default": native_layer_norm_backward,
    "_native_batch_norm_legit_functional.default": batch_norm_functional,
    "_native_batch_norm_legit_no_training.default": batch_norm_no_training,
    "_native_batch_norm_legit.no_stats": batch_norm_no_stats,
    "native_batch_norm.default": native_batch_norm,
    "_native_batch_norm_legit.default": native_batch_norm,
    "_weight_norm_interface.default": weight_norm,
    "_weight_norm_interface_backward.default": weight_norm_backward,
    "native_batch_norm_backward.default": batch_norm_backward,
    "native_group_norm.default": native_group_norm,
    "native_group_norm_backward.default": native_group_norm_backward,
}
