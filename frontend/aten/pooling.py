"""Pooling aten ops, forward and backward: max pooling (with indices), average pooling,
adaptive average pooling, and ``col2im`` (``F.fold``).

Pooling ops act on the trailing ``n`` dims (n = 2 for *2d, 3 for *3d); the leading
dims (batch, channels, or channels only) are carried along.
"""

from __future__ import annotations

import math

import numpy as np

from ...ir.dtypes import DType
from ..context import TranslationContext, unsupported
from .contraction import conv_input_grad, expand_ints


def _pool_args(x, n, kernel_size, stride, padding, dilation):
    kernel = expand_ints(kernel_size, n)
    stride = expand_ints(stride, n) if stride else kernel
    spatial = tuple(x.type.shape[-n:])
    if not all(isinstance(d, int) for d in spatial):
        unsupported("pooling needs static spatial sizes")
    return kernel, stride, expand_ints(padding, n), expand_ints(dilation, n), spatial


def _high_pad(size, k, s, p, d, o):
    """Padding past the end so that all ``o`` windows (ceil_mode included) fit."""
    return max((o - 1) * s + d * (k - 1) + 1 - size - p, 0)


def _offsets(kernel):
    if not kernel:
        return [()]
    return [(k,) + rest for k in range(kernel[0]) for rest in _offsets(kernel[1:])]


def _max_pool_with_indices(n: int):
    def translate(ctx: TranslationContext, x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
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
    def translate(ctx: TranslationContext, grad, x, kernel_size, stride, padding, dilation, ceil_mode, indices):
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


def _avg_divisor(ctx: TranslationContext, dtype, geometry, count_include_pad, divisor_override):
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


def _crop(ctx: TranslationContext, x, out_spatial):
    n = len(out_spatial)
    if tuple(x.type.shape[-n:]) == tuple(out_spatial):
        return x
    limits = list(x.type.shape[:-n]) + list(out_spatial)
    return ctx.b.slice(x, start_indices=[0] * x.type.rank, limit_indices=limits, strides=[1] * x.type.rank)


def _spread(ctx: TranslationContext, divisor, shape):
    n = divisor.type.rank
    return ctx.b.broadcast_in_dim(divisor, shape=shape, broadcast_dimensions=tuple(range(len(shape) - n, len(shape))))


def _avg_pool(n: int):
    def translate(ctx: TranslationContext, x, kernel_size, stride=(), padding=0, ceil_mode=False,
                  count_include_pad=True, divisor_override=None):
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
    def translate(ctx: TranslationContext, grad, x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                  divisor_override):
        """Spread grad / divisor over each window: a per-channel transposed convolution with ones."""
        kernel, stride, padding, _, spatial = _pool_args(x, n, kernel_size, stride, padding, 1)
        out_spatial = tuple(grad.type.shape[-n:])
        divisor = _avg_divisor(ctx, x.type.dtype, (kernel, stride, padding, spatial, out_spatial),
                               count_include_pad, divisor_override)
        scaled = ctx.b.div(grad, _spread(ctx, divisor, grad.type.shape))
        # [batch, C, *out] (a symbolic batch stays the convolution's batch; the channels are its groups)
        *leading, channels = x.type.shape[:-n]
        batch = math.prod(leading) if leading else 1
        scaled = ctx.reshape(scaled, (batch, channels, *out_spatial))
        ones = ctx.full(1, x.type.dtype, (channels, 1, *kernel))
        result = conv_input_grad(ctx, scaled, ones, spatial, stride, padding, (1,) * n, channels)
        return ctx.reshape(result, x.type.shape)

    return translate


def adaptive_avg_pool(ctx: TranslationContext, x, output_size):
    if x.type.rank == len(output_size) + 1:  # unbatched [C, *spatial]: the composite takes [N, C, *spatial]
        pooled = ctx.b.adaptive_avg_pool(ctx.reshape(x, (1, *x.type.shape)), output_size=tuple(output_size))
        return ctx.reshape(pooled, ctx.out.shape)
    return ctx.b.adaptive_avg_pool(x, output_size=tuple(output_size))



def _adaptive_windows(size: int, out: int) -> list[tuple[int, int]]:
    """torch's adaptive pooling windows: [floor(j·size/out), ceil((j+1)·size/out))."""
    return [((j * size) // out, -((-(j + 1) * size) // out)) for j in range(out)]


def adaptive_avg_pool_backward(ctx: TranslationContext, grad, x):
    """grad / kh / kw (torch's order), then each input element sums the windows holding it.

    Per spatial axis, the k-th window that holds position h is a gather (a zero slot for
    positions held by fewer windows), so only real contributions are added, in window order.
    """
    b, dtype = ctx.b, grad.type.dtype
    dims = _spatial_dims(ctx, grad, x)
    lead = grad.type.rank - len(dims)
    for axis, (size, out) in enumerate(dims):
        lengths = np.array([e - s for s, e in _adaptive_windows(size, out)], np.float64)
        divisor = ctx.b.constant(lengths.astype(dtype.numpy))
        grad = b.div(grad, b.broadcast_in_dim(divisor, shape=grad.type.shape, broadcast_dimensions=(lead + axis,)))
    for axis, (size, out) in enumerate(dims):
        grad = _spread_windows(ctx, grad, lead + axis, _adaptive_windows(size, out), size)
    return grad


def _spatial_dims(ctx: TranslationContext, grad, x):
    n = 3 if ctx.name.startswith("aten._adaptive_avg_pool3d") else 2
    pairs = list(zip(x.type.shape[-n:], grad.type.shape[-n:]))
    if not all(isinstance(d, int) for pair in pairs for d in pair):
        unsupported("adaptive pooling needs static spatial sizes")
    return pairs


def _spread_windows(ctx: TranslationContext, grad, axis: int, windows, size: int):
    """Along ``axis``: input position h gets the sum of grad over the windows that hold h."""
    b, shape = ctx.b, list(grad.type.shape)
    holders = [[j for j, (s, e) in enumerate(windows) if s <= h < e] for h in range(size)]
    zero_slot = len(windows)
    low, high = [0] * len(shape), [0] * len(shape)
    high[axis] = 1
    padded = b.pad(grad, ctx.const(0, grad.type.dtype), edge_padding_low=low, edge_padding_high=high,
                   interior_padding=[0] * len(shape))
    shape[axis] = size
    total = None
    for k in range(max(len(h) for h in holders)):
        index = np.array([h[k] if k < len(h) else zero_slot for h in holders], np.int64)
        index = b.broadcast_in_dim(b.constant(index), shape=tuple(shape), broadcast_dimensions=(axis,))
        term = b.gather(padded, index, axis=axis)
        total = term if total is None else b.add(total, term)
    return total


def col2im(ctx: TranslationContext, x, output_size, kernel_size, dilation, padding, stride):
    """F.fold: each kernel offset's column block, spread with the stride and summed in torch's order."""
    b = ctx.b
    out = ctx.out
    kernel, dilation, padding, stride = (expand_ints(v, 2) for v in (kernel_size, dilation, padding, stride))
    size = tuple(out.shape[-2:])
    lead = tuple(out.shape[:-2])  # [N, C] or [C]
    blocks = [(o + 2 * p - d * (k - 1) - 1) // s + 1 for o, p, d, k, s in zip(size, padding, dilation, kernel, stride)]
    cols = ctx.reshape(ctx.convert(x, out.dtype), (*lead, kernel[0] * kernel[1], *blocks))
    rank, total = len(lead) + 2, None
    for offset in range(kernel[0] * kernel[1]):
        starts = [0] * (rank + 1)
        starts[len(lead)] = offset
        limits = [*lead, offset + 1, *blocks]
        block = ctx.reshape(b.slice(cols, start_indices=starts, limit_indices=limits, strides=[1] * (rank + 1)),
                            (*lead, *blocks))
        low, high, interior = [0] * rank, [0] * rank, [0] * rank
        for axis, k_pos in enumerate(divmod(offset, kernel[1])):
            d = len(lead) + axis
            low[d] = k_pos * dilation[axis] - padding[axis]
            interior[d] = stride[axis] - 1
            high[d] = size[axis] - low[d] - ((blocks[axis] - 1) * stride[axis] + 1)
        placed = b.pad(block, ctx.const(0, out.dtype), edge_padding_low=low, edge_padding_high=high,
                       interior_padding=interior)
        total = placed if total is None else b.add(total, placed)
    return total


def _table():
    table = {
        "_adaptive_avg_pool2d.default": adaptive_avg_pool,
        "_adaptive_avg_pool3d.default": adaptive_avg_pool,
        "adaptive_avg_pool1d.default": adaptive_avg_pool,
        "avg_pool1d.default": _avg_pool(1),
        "_adaptive_avg_pool2d_backward.default": adaptive_avg_pool_backward,
        "_adaptive_avg_pool3d_backward.default": adaptive_avg_pool_backward,
        "col2im.default": col2im,
    }
    for n in (2, 3):
        table[f"max_pool{n}d_with_indices.default"] = _max_pool_with_indices(n)
        table[f"max_pool{n}d_with_indices_backward.default"] = _max_pool_backward(n)
        table[f"avg_pool{n}d.default"] = _avg_pool(n)
        table[f"avg_pool{n}d_backward.default"] = _avg_pool_backward(n)
    return table


TABLE = _table()
