"""Library kernels: ops the Triton backend runs as torch ops on the tensors' own device.

These are the ops not worth generating (sorting networks, convolution, scatter with
atomics, scans); the backend declares each ``extern=True`` in its claims, so ``parity
ops`` and the conformance matrix show them as such. Each function takes the operands as
torch tensors plus the node's attributes and returns a tuple of tensors with the IR's
semantics (docs/ir.md); where torch's differ (integer widths torch lacks, promotion of
integer scans, float16 convolution on CPU) the operands are widened exactly and the
result narrowed back.
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

from .extern_complex import TABLE as COMPLEX_TABLE
from .extern_complex import complex_exp, complex_log, complex_sqrt, fft, ifft, irfft, rfft  # noqa: F401 (X.fft, ...)

# torch lacks most operations on uint32; int64 holds every uint32 exactly.
_WIDE_INT = {torch.uint32: torch.int64}


def _dense(fn):
    """Kernels read their operands as dense row-major buffers: make every result one
    (a torch view such as top_k's ``[..., :k]`` slice keeps its parent's strides)."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        return tuple(t.contiguous() for t in fn(*args, **kwargs))

    return run


def _widen(x: torch.Tensor) -> torch.Tensor:
    return x.to(_WIDE_INT[x.dtype]) if x.dtype in _WIDE_INT else x


def _stable_order(x: torch.Tensor, axis: int, descending: bool) -> torch.Tensor:
    # torch sorts NaN above +inf and -0.0 equal to 0.0, as the IR does; stable keeps ties in order.
    key = _widen(x)
    if key.dtype in (torch.float16, torch.bfloat16):
        key = key.float()
    return torch.sort(key, dim=axis, descending=descending, stable=True).indices


def _take(x: torch.Tensor, order: torch.Tensor, axis: int) -> torch.Tensor:
    return torch.take_along_dim(_widen(x), order, axis).to(x.dtype)


@_dense
def sort(x, *, axis, descending):
    order = _stable_order(x, axis, descending)
    return _take(x, order, axis), order


@_dense
def top_k(x, *, k, largest):
    order = _stable_order(x, -1, largest)[..., :k]
    return _take(x, order, -1), order


def _scan(fn):
    def scan(x, *, axis, reverse):
        if x.numel() == 0:
            return (x.clone(),)
        wide = x.to(torch.float64) if x.is_floating_point() else x.to(torch.int64)
        if reverse:
            wide = wide.flip(axis)
        out = fn(wide, axis)
        if fn is torch.cumsum:
            out = out + 0  # a running sum starts at +0.0
        if reverse:
            out = out.flip(axis)
        # int64 arithmetic wraps mod 2**64, so narrowing gives the IR's wrapped results
        return (out.to(x.dtype),)

    return _dense(scan)


def _cumextreme(fn):
    def run(x, axis):
        return fn(x, axis).values  # torch's cummax/cummin propagate NaN, as the IR does

    return run


cumsum = _scan(torch.cumsum)
cumprod = _scan(torch.cumprod)
cummax = _scan(_cumextreme(torch.cummax))
cummin = _scan(_cumextreme(torch.cummin))


@_dense
def scatter(x, indices, updates, *, axis, reduce, include_self):
    out = _widen(x).clone()
    if x.shape[axis] == 0 or updates.numel() == 0:
        return (x.clone(),)
    # out-of-range indices are implementation-defined: clamp like the reference
    index = indices.to(torch.int64).clamp(0, x.shape[axis] - 1)
    src = _widen(updates)
    if reduce == "replace":
        out.scatter_(axis, index, src)
    else:  # torch's amax/amin propagate NaN, as the IR's max/min do
        out.scatter_reduce_(axis, index, src, _TORCH_REDUCE[reduce], include_self=include_self)
    return (out.to(x.dtype),)


_TORCH_REDUCE = {"add": "sum", "mul": "prod", "max": "amax", "min": "amin"}


_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


@_dense
def convolution(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation, feature_group_count, out_shape):
    spatial = lhs.dim() - 2
    if 0 in out_shape:
        return (lhs.new_zeros(out_shape),)
    conv = _CONV.get(spatial)
    if conv is None:
        raise NotImplementedError(f"the triton backend's extern convolution handles 1-3 spatial dims, not {spatial}")
    # CPU torch has no float16/bfloat16 convolution everywhere; float32 products of them are exact
    wide = torch.float32 if lhs.dtype in (torch.float16, torch.bfloat16) else lhs.dtype
    x, w = lhs.to(wide), rhs.to(wide)
    if any(f > 1 for f in lhs_dilation):
        shape = list(x.shape[:2]) + [(n - 1) * f + 1 if n else 0 for n, f in zip(x.shape[2:], lhs_dilation)]
        dilated = x.new_zeros(shape)
        dilated[(slice(None), slice(None)) + tuple(slice(None, None, f) for f in lhs_dilation)] = x
        x = dilated
    pads = []
    for lo, hi in reversed(padding):  # F.pad lists the last dim first; negative crops
        pads += [lo, hi]
    x = F.pad(x, pads)
    out = conv(x, w, stride=tuple(window_strides), dilation=tuple(rhs_dilation), groups=feature_group_count)
    return (out.to(lhs.dtype),)


TABLE = {
    "sort": sort, "top_k": top_k, "cumsum": cumsum, "cumprod": cumprod, "cummax": cummax, "cummin": cummin,
    "scatter": scatter, "convolution": convolution, **COMPLEX_TABLE,
}
