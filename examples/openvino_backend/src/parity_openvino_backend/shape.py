"""Creation, shape and indexing rules: constant, iota, reshape, broadcast, transpose, slices, pad,
reverse, gather, scatter, dynamic slices.

Shapes are concrete (``lowering.to_model`` resolves symbolic ones first), so shapes, axes and
iota become constants.
"""

from __future__ import annotations

import numpy as np
import openvino as ov
import openvino.opset15 as ops

from .ov_types import dims, i64s, output_of, ov_type, typed_const

_INT64_MIN = np.iinfo(np.int64).min


def _constant(attrs, outs):
    return typed_const(np.asarray(attrs["value"]).reshape(outs[0].shape), ov_type(outs[0].dtype))


def _iota(attrs, outs):
    """A constant: 0, 1, ... along ``dimension``, in the result dtype (integers wrap)."""
    t = outs[0]
    axis_shape = [1] * len(t.shape)
    axis_shape[attrs["dimension"]] = -1
    line = np.arange(t.shape[attrs["dimension"]], dtype=np.int64).reshape(axis_shape)
    values = np.broadcast_to(line, t.shape)
    return typed_const(values if t.dtype.name == "bfloat16" else values.astype(t.dtype.numpy), ov_type(t.dtype))


def reshape(x, shape):
    if not shape and dims(x):  # to a scalar: Squeeze. A MatMul reshaped to rank 0 kills compile_model (a
        return ops.squeeze(x).output(0)  # SIGSEGV in a CPU-plugin graph pass): dot_general[f32]:vector
    return ops.reshape(x, i64s(shape), special_zero=False).output(0)


def _broadcast(attrs, outs, x):
    shape = list(outs[0].shape)
    kept = [1] * len(shape)
    for i, d in enumerate(attrs["broadcast_dimensions"]):
        kept[d] = dims(x)[i]
    return ops.broadcast(reshape(x, kept), i64s(shape))


def slice_axes(x, starts, stops, steps, axes):
    return ops.slice(x, i64s(starts), i64s(stops), i64s(steps), i64s(axes)).output(0)


def _slice(attrs, outs, x):
    rank = len(attrs["start_indices"])
    return slice_axes(x, attrs["start_indices"], attrs["limit_indices"], attrs["strides"], range(rank))


def _interior(x, dim, inner, value):
    """``inner`` copies of ``value`` between the elements of ``x`` along ``dim``."""
    shape = dims(x)
    n = shape[dim]
    if inner == 0 or n == 0:
        return x
    spread = ops.unsqueeze(x, i64s([dim + 1]))
    begins, ends = [0] * (len(shape) + 1), [0] * (len(shape) + 1)
    ends[dim + 1] = inner
    spread = _padded(spread, begins, ends, value)
    joined = reshape(spread, shape[:dim] + [n * (inner + 1)] + shape[dim + 1:])
    return slice_axes(joined, [0], [(n - 1) * (inner + 1) + 1], [1], [dim])


def _padded(x, low, high, value):
    """``x`` with ``low``/``high`` (>= 0) elements of ``value`` around it. OpenVINO's CPU Pad
    ignores a pad value that is not a constant (it pads 0; measured: pad[f32]:mixed): the
    padding is chosen by a mask padded alongside."""
    shape = dims(x)
    zeros = ops.pad(x, i64s(low), i64s(high), "constant").output(0)
    inside = ops.pad(ops.constant(np.ones(shape, np.uint8)), i64s(low), i64s(high), "constant")
    return ops.select(ops.not_equal(inside, ops.constant(np.uint8(0))), zeros, value).output(0)


def pad_or_crop(x, low, high, value):
    """Edge padding with ``value`` (an OpenVINO scalar); negative amounts crop."""
    rank = len(low)
    grow_low, grow_high = [max(v, 0) for v in low], [max(v, 0) for v in high]
    if any(grow_low) or any(grow_high):
        x = _padded(x, grow_low, grow_high, value)
    if any(v < 0 for v in (*low, *high)):
        shape = dims(x)
        x = slice_axes(x, [max(-v, 0) for v in low], [n - max(-v, 0) for n, v in zip(shape, high)],
                       [1] * rank, range(rank))
    return x


def pad(x, value, low, high, interior):
    for dim, inner in enumerate(interior):
        x = _interior(x, dim, inner, value)
    return pad_or_crop(x, low, high, value)


def _pad(attrs, outs, x, value):
    return pad(x, value, attrs["edge_padding_low"], attrs["edge_padding_high"], attrs["interior_padding"])


def _reverse(attrs, outs, x):
    dims = list(attrs["dimensions"])
    if not dims:
        return ops.convert(x, x.get_element_type())
    return slice_axes(x, [-1] * len(dims), [_INT64_MIN] * len(dims), [-1] * len(dims), dims)


def _clamped_indices(idx, size):
    """Out-of-range indices are implementation-defined in the IR; clamping keeps the runtime in bounds.
    GatherElements takes int32 or int64 indices only: narrower ones are widened (gather[i64]:axis0, u8)."""
    if output_of(idx).get_element_type() not in (ov.Type.i32, ov.Type.i64):
        idx = ops.convert(idx, ov.Type.i32)
    low, high = typed_const(0, idx.get_element_type()), typed_const(max(size - 1, 0), idx.get_element_type())
    return ops.minimum(ops.maximum(idx, low), high)


def _size(x, axis):
    return dims(x)[axis]


def _gather(attrs, outs, x, idx):
    """GatherElements; boolean data through uint8 (the CPU plugin rejects boolean: gather[bool]:axis0)."""
    axis = attrs["axis"]
    if output_of(x).get_element_type() == ov.Type.boolean:
        picked = ops.gather_elements(ops.convert(x, ov.Type.u8), _clamped_indices(idx, _size(x, axis)), axis)
        return ops.not_equal(picked, ops.constant(np.uint8(0)))
    return ops.gather_elements(x, _clamped_indices(idx, _size(x, axis)), axis)


_SCATTER_REDUCTIONS = {"replace": "none", "add": "sum", "mul": "prod", "max": "max", "min": "min"}


def _scatter(attrs, outs, x, idx, updates):
    axis = attrs["axis"]
    return ops.scatter_elements_update(x, _clamped_indices(idx, _size(x, axis)), updates, i64s([axis]),
                                       _SCATTER_REDUCTIONS[attrs["reduce"]], attrs["include_self"])


def _starts(x, starts, sizes):
    """The clamped start of each dim (into [0, n - size]), as one int64 vector."""
    clamped = []
    for axis, (s, k) in enumerate(zip(starts, sizes)):
        s = ops.convert(s, "i64")
        high = typed_const(max(_size(x, axis) - k, 0), s.get_element_type())
        clamped.append(ops.unsqueeze(ops.minimum(ops.maximum(s, typed_const(0, s.get_element_type())), high),
                                     i64s([0])))
    return ops.concat(clamped, 0).output(0)


def _dynamic_slice(attrs, outs, x, *starts):
    sizes = list(attrs["slice_sizes"])
    begin = _starts(x, starts, sizes)
    rank = len(sizes)
    return ops.slice(x, begin, ops.add(begin, i64s(sizes)), i64s([1] * rank), i64s(range(rank)))


def _dynamic_update_slice(attrs, outs, x, update, *starts):
    """ScatterNDUpdate at the clamped start plus every index of ``update``."""
    sizes = dims(update)
    if not sizes:
        return ops.convert(update, update.get_element_type())
    begin = _starts(x, starts, sizes)
    offsets = np.stack(np.indices(sizes), axis=-1).astype(np.int64)
    return ops.scatter_nd_update(x, ops.add(ops.constant(offsets), begin), update)


RULES = {
    "constant": _constant,
    "iota": _iota,
    "reshape": lambda attrs, outs, x: reshape(x, outs[0].shape),
    "broadcast_in_dim": _broadcast,
    "transpose": lambda attrs, outs, x: ops.transpose(x, i64s(attrs["permutation"])),
    "slice": _slice,
    "concatenate": lambda attrs, outs, *xs: ops.concat(list(xs), attrs["dimension"]),
    "pad": _pad,
    "reverse": _reverse,
    "gather": _gather,
    "scatter": _scatter,
    "dynamic_slice": _dynamic_slice,
    "dynamic_update_slice": _dynamic_update_slice,
}
