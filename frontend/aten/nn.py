"""Contractions and neural-network aten ops: matmuls, convolution (forward and backward),
pooling (forward and backward), layer/batch/group norm (forward and backward), embedding.

Backward ops follow the transposition rules of the forward (as in JAX's
``conv_general_dilated`` transpose), written with IR primitives.
"""

from __future__ import annotations

import math

from ...ir.dtypes import DType
from ...ir.types import Symbol
from ..translate import Lowering, unsupported


def _dot(ctx: Lowering, a, b, contract, batch=((), ())):
    return ctx.b.dot_general(a, b, lhs_contracting_dims=contract[0], rhs_contracting_dims=contract[1],
                             lhs_batch_dims=batch[0], rhs_batch_dims=batch[1])


def mm(ctx: Lowering, a, b):
    return _dot(ctx, a, b, ((1,), (0,)))


def bmm(ctx: Lowering, a, b):
    return _dot(ctx, a, b, ((2,), (1,)), ((0,), (0,)))


def mv(ctx: Lowering, a, b):
    return _dot(ctx, a, b, ((1,), (0,)))


def dot(ctx: Lowering, a, b):
    return _dot(ctx, a, b, ((0,), (0,)))


def addmm(ctx: Lowering, bias, a, b, *, beta=1, alpha=1):
    out = ctx.out
    product = mm(ctx, a, b)
    if alpha != 1:
        product = ctx.b.mul(product, ctx.full(alpha, out.dtype, out.shape))
    if beta == 0:
        return product
    bias = ctx.broadcast(ctx.convert(bias, out.dtype), out.shape)
    if beta != 1:
        bias = ctx.b.mul(bias, ctx.full(beta, out.dtype, out.shape))
    return ctx.b.add(bias, product)


def matmul(ctx: Lowering, a, b):
    return ctx.b.matmul(a, b)


def linear(ctx: Lowering, x, w, bias=None):
    if bias is None:
        bias = ctx.full(0, x.type.dtype, (w.type.shape[0],))
    return ctx.b.linear(x, w, bias)


# -- convolution ------------------------------------------------------------------------


def _ints(values, n: int) -> tuple[int, ...]:
    values = (values,) if isinstance(values, int) else tuple(values)
    return values * n if len(values) == 1 else values


def _spatial(x) -> tuple:
    dims = tuple(x.type.shape[2:])
    if any(isinstance(d, Symbol) for d in dims):
        unsupported("convolution and pooling need static spatial sizes")
    return dims


def _conv(ctx: Lowering, x, w, stride, padding, dilation, groups, lhs_dilation=None):
    n = x.type.rank - 2
    return ctx.b.convolution(
        x, w, window_strides=stride, padding=padding, lhs_dilation=lhs_dilation or (1,) * n,
        rhs_dilation=dilation, feature_group_count=groups)


def _add_channel_bias(ctx: Lowering, y, bias):
    bias = ctx.convert(bias, y.type.dtype)
    full = ctx.b.broadcast_in_dim(bias, shape=y.type.shape, broadcast_dimensions=(1,))
    return ctx.b.add(y, full)


def _flip_swap(ctx: Lowering, w, groups: int):
    """[O, C/G, *k] → [C, O/G, *k] reversed spatially: the kernel of the input gradient."""
    o, cg, *kernel = w.type.shape
    n = len(kernel)
    w = ctx.b.reverse(w, dimensions=tuple(range(2, 2 + n))) if n else w
    w = ctx.reshape(w, (groups, o // groups, cg, *kernel))
    w = ctx.b.transpose(w, permutation=(0, 2, 1, *range(3, 3 + n)))
    return ctx.reshape(w, (groups * cg, o // groups, *kernel))


def conv_input_grad(ctx: Lowering, grad, w, in_spatial, stride, padding, dilation, groups):
    """The gradient of a convolution with respect to its input (a dilated transposed conv)."""
    kernel = tuple(w.type.shape[2:])
    out_spatial = tuple(grad.type.shape[2:])
    pads = []
    for size, k, s, p, d, o in zip(in_spatial, kernel, stride, padding, dilation, out_spatial):
        span = d * (k - 1) + 1
        before = span - p - 1
        after = size + span - 1 - ((o - 1) * s + 1) - before
        pads.append((before, after))
    return _conv(ctx, grad, _flip_swap(ctx, w, groups), (1,) * len(kernel), pads, dilation, groups, stride)


def conv_weight_grad(ctx: Lowering, x, grad, kernel, stride, padding, dilation, groups):
    """The gradient with respect to the weight: correlate the input with the output gradient."""
    n = x.type.rank - 2
    in_spatial, out_spatial = tuple(x.type.shape[2:]), tuple(grad.type.shape[2:])
    pads = []
    for size, k, s, p, d, o in zip(in_spatial, kernel, stride, padding, dilation, out_spatial):
        span = d * (k - 1) + 1
        pads.append((p, (o - 1) * s + 1 - size + span - p - 1))
    swap = (1, 0, *range(2, 2 + n))
    parts = []
    c_in, c_out = x.type.shape[1], grad.type.shape[1]
    for g in range(groups):
        xg = _channel_slice(ctx, x, g * c_in // groups, (g + 1) * c_in // groups)
        gg = _channel_slice(ctx, grad, g * c_out // groups, (g + 1) * c_out // groups)
        # lhs [C, N, *in] (batch = channels), rhs [O, N, *out] (kernel = output positions)
        y = _conv(ctx, ctx.b.transpose(xg, permutation=swap), ctx.b.transpose(gg, permutation=swap),
                  dilation, pads, stride, 1)
        parts.append(ctx.b.transpose(y, permutation=swap))  # [O/G, C/G, *kernel]
    return parts[0] if groups == 1 else ctx.b.concatenate(*parts, dimension=0)


def _channel_slice(ctx: Lowering, x, start: int, stop: int):
    if (start, stop) == (0, x.type.shape[1]):
        return x
    limits = list(x.type.shape)
    limits[1] = stop
    starts = [0] * x.type.rank
    starts[1] = start
    return ctx.b.slice(x, start_indices=starts, limit_indices=limits, strides=[1] * x.type.rank)


def convolution(ctx: Lowering, x, w, bias, stride, padding, dilation, transposed, output_padding, groups):
    n = x.type.rank - 2
    stride, padding, dilation = _ints(stride, n), _ints(padding, n), _ints(dilation, n)
    _spatial(x)
    w = ctx.convert(w, x.type.dtype)
    if transposed:
        # a transposed conv is the input gradient of the conv whose weight is w ([C_in, C_out/G, *k])
        y = conv_input_grad(ctx, x, w, tuple(ctx.out.shape[2:]), stride, padding, dilation, groups)
    else:
        pads = tuple((p, p) for p in padding)
        y = _conv(ctx, x, w, stride, pads, dilation, groups)
    return y if bias is None else _add_channel_bias(ctx, y, bias)


def convolution_backward(ctx: Lowering, grad, x, w, bias_sizes, stride, padding, dilation, transposed,
                         output_padding, groups, output_mask):
    if transposed:
        unsupported("the backward of a transposed convolution is not translated yet")
    n = x.type.rank - 2
    stride, padding, dilation = _ints(stride, n), _ints(padding, n), _ints(dilation, n)
    in_spatial = _spatial(x)
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        grad_input = conv_input_grad(ctx, grad, w, in_spatial, stride, padding, dilation, groups)
    if output_mask[1]:
        grad_weight = conv_weight_grad(ctx, x, grad, tuple(w.type.shape[2:]), stride, padding, dilation, groups)
    if output_mask[2]:
        grad_bias = ctx.b.reduce_sum(grad, axes=(0, *range(2, 2 + n)))
    return grad_input, grad_weight, grad_bias


# -- pooling ----------------------------------------------------------------------------
# Pooling ops act on the trailing ``n`` dims (n = 2 for *2d, 3 for *3d); the leading
# dims (batch, channels, or channels only) are carried along.


def _pool_args(x, n, kernel_size, stride, padding, dilation):
    kernel = _ints(kernel_size, n)
    stride = _ints(stride, n) if stride else kernel
    spatial = tuple(x.type.shape[-n:])
    if any(isinstance(d, Symbol) for d in spatial):
        unsupported("pooling needs static spatial sizes")
    return kernel, stride, _ints(padding, n), _ints(dilation, n), spatial


def _high_pad(size, k, s, p, d, o):
    """Padding past the end so that all ``o`` windows (ceil_mode included) fit."""
    return max((o - 1) * s + d * (k - 1) + 1 - size - p, 0)


def _offsets(kernel):
    if not kernel:
        return [()]
    return [(k,) + rest for k in range(kernel[0]) for rest in _offsets(kernel[1:])]


def _max_pool_with_indices(n: int):
    def translate(ctx: Lowering, x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
        """Window maxima and their flat input indices (first maximum wins, like torch's CPU kernel)."""
        kernel, stride, padding, dilation, spatial = _pool_args(x, n, kernel_size, stride, padding, dilation)
        b, i64, rank = ctx.b, DType.int64, x.type.rank
        out_shape = ctx.out_type(0).shape
        out_spatial = tuple(out_shape[-n:])
        lead = rank - n
        low = [0] * lead + list(padding)
        high = [0] * lead + [_high_pad(*g) for g in zip(spatial, kernel, stride, padding, dilation, out_spatial)]
        lowest = -math.inf if x.type.dtype.is_float else x.type.dtype.iinfo.min
        padded = b.pad(x, ctx.const(lowest, x.type.dtype), edge_padding_low=low, edge_padding_high=high,
                       interior_padding=[0] * rank)
        patches = []
        for offset in _offsets(kernel):
            starts = [0] * lead + [o * d for o, d in zip(offset, dilation)]
            limits = list(out_shape[:lead]) + [st + (o - 1) * s + 1 for st, o, s in zip(starts[lead:], out_spatial, stride)]
            patch = b.slice(padded, start_indices=starts, limit_indices=limits, strides=[1] * lead + list(stride))
            patches.append(ctx.reshape(patch, (*out_shape, 1)))
        stacked = b.concatenate(*patches, dimension=rank) if len(patches) > 1 else patches[0]
        if rank == n + 2:
            # The values as the max_pool composite, which backends claim natively (ORT MaxPool,
            # XLA reduce_window) where the stacked patches would be copied; unused indices
            # (inference) then vanish with their patches.
            values = b.max_pool(x, kernel=kernel, stride=stride, padding=padding, dilation=dilation,
                                ceil_mode=ceil_mode)
        else:  # [C, *spatial]: max_pool takes [N, C, *spatial]
            values = b.reduce_max(stacked, axes=(rank,))
        which = b.argmax(stacked, axis=rank)  # the kernel offset number, i64
        index, row = None, 1
        for axis in reversed(range(n)):
            inner = math.prod(kernel[axis + 1:])
            k_pos = b.rem(b.div(which, ctx.full(inner, i64, out_shape)), ctx.full(kernel[axis], i64, out_shape))
            start = b.mul(b.iota(dtype=i64, shape=out_shape, dimension=lead + axis), ctx.full(stride[axis], i64, out_shape))
            pos = b.add(b.sub(start, ctx.full(padding[axis], i64, out_shape)),
                        b.mul(k_pos, ctx.full(dilation[axis], i64, out_shape)))
            term = b.mul(pos, ctx.full(row, i64, out_shape)) if row != 1 else pos
            index = term if index is None else b.add(index, term)
            row *= spatial[axis]
        return values, index

    return translate


def _max_pool_backward(n: int):
    def translate(ctx: Lowering, grad, x, kernel_size, stride, padding, dilation, ceil_mode, indices):
        """Scatter-add the output gradient to the recorded argmax positions."""
        spatial = _pool_args(x, n, kernel_size, stride, padding, dilation)[-1]
        lead = tuple(x.type.shape[:-n])
        out_size = math.prod(grad.type.shape[-n:])
        flat_grad = ctx.reshape(grad, (*lead, out_size))
        flat_index = ctx.reshape(indices, (*lead, out_size))
        zeros = ctx.full(0, x.type.dtype, (*lead, math.prod(spatial)))
        result = ctx.b.scatter(zeros, flat_index, flat_grad, axis=len(lead), reduce="add")
        return ctx.reshape(result, x.type.shape)

    return translate


def _avg_divisor(ctx: Lowering, dtype, geometry, count_include_pad, divisor_override):
    """Per-window divisors, shaped like the output's spatial dims (torch's rules)."""
    kernel, stride, padding, spatial, out_spatial = geometry
    if divisor_override:
        return ctx.full(divisor_override, dtype, out_spatial)
    if count_include_pad:  # window elements inside the padded input (ceil_mode windows may reach past it)
        extent = tuple(s + 2 * p for s, p in zip(spatial, padding))
        pads = tuple((0, max((o - 1) * st + k - e, 0)) for k, st, e, o in zip(kernel, stride, extent, out_spatial))
    else:  # window elements inside the input itself
        extent = spatial
        pads = tuple((p, _high_pad(s, k, st, p, 1, o)) for s, k, st, p, o in zip(spatial, kernel, stride, padding, out_spatial))
    counts = ctx.b.reduce_window(ctx.full(1, dtype, extent), kind="sum", window_dimensions=kernel,
                                 window_strides=stride, padding=pads, window_dilations=(1,) * len(kernel))
    return _crop(ctx, counts, out_spatial)


def _crop(ctx: Lowering, x, out_spatial):
    n = len(out_spatial)
    if tuple(x.type.shape[-n:]) == tuple(out_spatial):
        return x
    limits = list(x.type.shape[:-n]) + list(out_spatial)
    return ctx.b.slice(x, start_indices=[0] * x.type.rank, limit_indices=limits, strides=[1] * x.type.rank)


def _spread(ctx: Lowering, divisor, shape):
    n = divisor.type.rank
    return ctx.b.broadcast_in_dim(divisor, shape=shape, broadcast_dimensions=tuple(range(len(shape) - n, len(shape))))


def _avg_pool(n: int):
    def translate(ctx: Lowering, x, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
                  divisor_override=None):
        kernel, stride, padding, _, spatial = _pool_args(x, n, kernel_size, stride, padding, 1)
        out = ctx.out
        out_spatial = tuple(out.shape[-n:])
        lead = x.type.rank - n
        pads = ((0, 0),) * lead + tuple((p, _high_pad(s, k, st, p, 1, o))
                                        for s, k, st, p, o in zip(spatial, kernel, stride, padding, out_spatial))
        sums = ctx.b.reduce_window(x, kind="sum", window_dimensions=(1,) * lead + kernel,
                                   window_strides=(1,) * lead + stride, padding=pads,
                                   window_dilations=(1,) * x.type.rank)
        sums = _crop(ctx, sums, out_spatial)
        divisor = _avg_divisor(ctx, x.type.dtype, (kernel, stride, padding, spatial, out_spatial),
                               count_include_pad, divisor_override)
        return ctx.b.div(sums, _spread(ctx, divisor, out.shape))

    return translate


def _avg_pool_backward(n: int):
    def translate(ctx: Lowering, grad, x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                  divisor_override):
        """Spread grad / divisor over each window: a per-channel transposed convolution with ones."""
        kernel, stride, padding, _, spatial = _pool_args(x, n, kernel_size, stride, padding, 1)
        out_spatial = tuple(grad.type.shape[-n:])
        divisor = _avg_divisor(ctx, x.type.dtype, (kernel, stride, padding, spatial, out_spatial),
                               count_include_pad, divisor_override)
        scaled = ctx.b.div(grad, _spread(ctx, divisor, grad.type.shape))
        channels = math.prod(x.type.shape[:-n])
        scaled = ctx.reshape(scaled, (1, channels, *out_spatial))
        ones = ctx.full(1, x.type.dtype, (channels, 1, *kernel))
        result = conv_input_grad(ctx, scaled, ones, spatial, stride, padding, (1,) * n, channels)
        return ctx.reshape(result, x.type.shape)

    return translate


def adaptive_avg_pool(ctx: Lowering, x, output_size):
    return ctx.b.adaptive_avg_pool(x, output_size=tuple(output_size))


# -- normalization --------------------------------------------------------------------------


def _moments(ctx: Lowering, x, axes, dtype):
    """mean and biased variance over ``axes`` (kept as size-1 dims), in ``dtype``."""
    b = ctx.b
    x = ctx.convert(x, dtype)
    count = math.prod(x.type.shape[a] for a in axes)
    keep_shape = tuple(1 if d in axes else s for d, s in enumerate(x.type.shape))
    mean = ctx.reshape(b.div(b.reduce_sum(x, axes=axes), ctx.full(count, dtype, _drop(x.type.shape, axes))), keep_shape)
    centered = b.sub(x, _expand(ctx, mean, x.type.shape))
    var = b.div(b.reduce_sum(b.mul(centered, centered), axes=axes), ctx.full(count, dtype, _drop(x.type.shape, axes)))
    return mean, ctx.reshape(var, keep_shape), centered, count


def _drop(shape, axes):
    return tuple(s for d, s in enumerate(shape) if d not in axes)


def _expand(ctx: Lowering, x, shape):
    """Broadcast a keepdim-shaped value (size-1 dims) to ``shape``."""
    if x.type.shape == tuple(shape):
        return x
    keep = tuple(d for d, s in enumerate(x.type.shape) if not (s == 1 and shape[d] != 1))
    squeezed = ctx.reshape(x, tuple(x.type.shape[d] for d in keep))
    return ctx.b.broadcast_in_dim(squeezed, shape=tuple(shape), broadcast_dimensions=keep)


def _affine(ctx: Lowering, y, weight, bias, dims):
    """y * weight + bias, with weight/bias laid along ``dims`` of y."""
    shape = y.type.shape
    if weight is not None:
        y = ctx.b.mul(y, ctx.b.broadcast_in_dim(ctx.convert(weight, y.type.dtype), shape=shape, broadcast_dimensions=dims))
    if bias is not None:
        y = ctx.b.add(y, ctx.b.broadcast_in_dim(ctx.convert(bias, y.type.dtype), shape=shape, broadcast_dimensions=dims))
    return y


def native_layer_norm(ctx: Lowering, x, normalized_shape, weight, bias, eps):
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


def native_layer_norm_backward(ctx: Lowering, grad, x, normalized_shape, mean, rstd, weight, bias, output_mask):
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


def _batch_norm_train(ctx: Lowering, x, weight, bias, eps):
    axes = (0, *range(2, x.type.rank))
    stat_dtype = ctx.out_type(1).dtype
    mean, var, centered, count = _moments(ctx, x, axes, stat_dtype)
    invstd = ctx.b.rsqrt(ctx.b.add(var, ctx.full(eps, stat_dtype, var.type.shape)))
    y = ctx.b.mul(centered, _expand(ctx, invstd, x.type.shape))
    y = _affine(ctx, ctx.convert(y, ctx.out_type(0).dtype), weight, bias, (1,))
    channels = (x.type.shape[1],)
    return y, ctx.reshape(mean, channels), ctx.reshape(invstd, channels), ctx.reshape(var, channels), count


def batch_norm_functional(ctx: Lowering, x, weight, bias, running_mean, running_var, training, momentum, eps):
    if not training:
        out, _, _ = batch_norm_no_training(ctx, x, weight, bias, running_mean, running_var, momentum, eps)
        return out, ctx.full(0, ctx.out_type(1).dtype, (0,)), ctx.full(0, ctx.out_type(2).dtype, (0,)), running_mean, running_var
    y, mean, invstd, var, count = _batch_norm_train(ctx, x, weight, bias, eps)
    b = ctx.b
    rdt = running_mean.type.dtype
    shape = running_mean.type.shape
    m = ctx.full(momentum, rdt, shape)
    keep = ctx.full(1 - momentum, rdt, shape)
    unbiased = b.mul(ctx.convert(var, rdt), ctx.full(count / max(count - 1, 1), rdt, shape))
    new_mean = b.add(b.mul(running_mean, keep), b.mul(ctx.convert(mean, rdt), m))
    new_var = b.add(b.mul(running_var, keep), b.mul(unbiased, m))
    return y, mean, invstd, new_mean, new_var


def native_batch_norm(ctx: Lowering, x, weight, bias, running_mean, running_var, training, momentum, eps):
    """The mutating form (graphs captured without functionalization): only when nothing mutates."""
    if training and running_mean is not None:
        unsupported("native_batch_norm updates running stats in place; capture through AOTAutograd "
                    "(parity.compile) so the update is functional")
    if training:
        return batch_norm_no_stats(ctx, x, weight, bias, training, momentum, eps)
    out, _, _ = batch_norm_no_training(ctx, x, weight, bias, running_mean, running_var, momentum, eps)
    return out, ctx.full(0, ctx.out_type(1).dtype, ctx.out_type(1).shape), ctx.full(0, ctx.out_type(2).dtype, ctx.out_type(2).shape)


def batch_norm_no_stats(ctx: Lowering, x, weight, bias, training, momentum, eps):
    y, mean, invstd, _, _ = _batch_norm_train(ctx, x, weight, bias, eps)
    return y, mean, invstd


def batch_norm_no_training(ctx: Lowering, x, weight, bias, running_mean, running_var, momentum, eps):
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


def batch_norm_backward(ctx: Lowering, grad, x, weight, running_mean, running_var, save_mean, save_invstd,
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
            proj = b.mul(dot, b.mul(b.mul(invstd, invstd), ctx.full(1 / count, dtype, invstd.type.shape)))
            gmean = b.mul(sum_g, ctx.full(1 / count, dtype, sum_g.type.shape))
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


def native_group_norm(ctx: Lowering, x, weight, bias, n, c, hw, group, eps):
    shape = x.type.shape
    stat_dtype = ctx.out_type(1).dtype
    grouped = ctx.reshape(x, (shape[0], group, math.prod(shape[1:]) // group))
    mean, var, centered, _ = _moments(ctx, grouped, (2,), stat_dtype)
    rstd = ctx.b.rsqrt(ctx.b.add(var, ctx.full(eps, stat_dtype, var.type.shape)))
    y = ctx.reshape(ctx.b.mul(centered, _expand(ctx, rstd, grouped.type.shape)), shape)
    y = _affine(ctx, ctx.convert(y, ctx.out_type(0).dtype), weight, bias, (1,))
    return y, ctx.reshape(mean, (shape[0], group)), ctx.reshape(rstd, (shape[0], group))


def native_group_norm_backward(ctx: Lowering, grad, x, mean, rstd, weight, n, c, hw, group, output_mask):
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


def _upsample(mode: str):
    def translate(ctx: Lowering, x, output_size, *args):
        """.vec: (size, [align_corners,] scale_factors); .default: (size, [align_corners,] *scales)."""
        align_corners = bool(args[0]) if mode == "bilinear" and args else False
        rest = args[1:] if mode == "bilinear" else args
        scales = [f for a in rest for f in (a if isinstance(a, (list, tuple)) else [a]) if f is not None]
        out_spatial = tuple(ctx.out.shape[2:])
        if scales and any(o != s * f for o, s, f in zip(out_spatial, x.type.shape[2:], scales)):
            unsupported("upsampling with a scale factor that does not divide the sizes exactly")
        attrs = {"align_corners": align_corners} if mode == "bilinear" else {}
        return ctx.b.interpolate(x, size=out_spatial, mode=mode, **attrs)

    return translate


# -- embedding ----------------------------------------------------------------------------


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


def _table():
    table = {
        "mm.default": mm, "bmm.default": bmm, "mv.default": mv, "dot.default": dot, "addmm.default": addmm,
        "matmul.default": matmul, "linear.default": linear,
        "convolution.default": convolution, "convolution_backward.default": convolution_backward,
        "embedding.default": embedding, "embedding_dense_backward.default": embedding_dense_backward,
        "native_layer_norm.default": native_layer_norm,
        "native_layer_norm_backward.default": native_layer_norm_backward,
        "_native_batch_norm_legit_functional.default": batch_norm_functional,
        "_native_batch_norm_legit_no_training.default": batch_norm_no_training,
        "_native_batch_norm_legit.no_stats": batch_norm_no_stats,
        "native_batch_norm.default": native_batch_norm,
        "native_batch_norm_backward.default": batch_norm_backward,
        "native_group_norm.default": native_group_norm,
        "native_group_norm_backward.default": native_group_norm_backward,
        "upsample_nearest2d.vec": _upsample("nearest"),
        "upsample_bilinear2d.vec": _upsample("bilinear"),
        "upsample_nearest2d.default": _upsample("nearest"),
        "upsample_bilinear2d.default": _upsample("bilinear"),
        "_adaptive_avg_pool2d.default": adaptive_avg_pool,
        "_adaptive_avg_pool3d.default": adaptive_avg_pool,
    }
    for n in (2, 3):
        table[f"max_pool{n}d_with_indices.default"] = _max_pool_with_indices(n)
        table[f"max_pool{n}d_with_indices_backward.default"] = _max_pool_backward(n)
        table[f"avg_pool{n}d.default"] = _avg_pool(n)
        table[f"avg_pool{n}d_backward.default"] = _avg_pool_backward(n)
    return table


TABLE = _table()
