"""Pooling and resampling over the trailing spatial dims of ``x [N, C, *spatial]``:
``max_pool avg_pool adaptive_avg_pool interpolate``.

Window geometry follows torch exactly (``pooling_output_shape``, the avg_pool divisor,
adaptive pooling's ``floor(i*in/out) .. ceil((i+1)*in/out)`` windows, and
``upsample_*``'s source-index formulas computed in the kernel's own float type). The
geometry is static, so index and weight tables are computed here once and enter the
graph as constants; the data path is reduce_window, gather, select and arithmetic.
Averages and interpolation of float16/bfloat16 are computed in float32 and rounded once.

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, evaluate, f32
    >>> b = GraphBuilder()
    >>> x = b.input(f32[1, 1, 4])
    >>> g = b.build([b.avg_pool(x, kernel=(2,)), b.max_pool(x, kernel=(3,), stride=(1,), ceil_mode=True)])
    >>> [y.tolist() for y in evaluate(g, [np.array([[[1, 3, 2, 6]]], np.float32)])]
    [[[[2.0, 4.0]]], [[[3.0, 6.0]]]]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..dtypes import FLOAT_DTYPES, DType
from ..errors import TypeRuleError
from ..opdef import Accuracy, AttrKind, AttrSpec, Group, Kind, OpDef
from ..types import TensorType
from .compose import expand, full_like, narrow, widen, widened
from .reduction import NUMERIC
from .rules import check_dtype


def _spatial(op: str, x: TensorType, count: int, attr: str) -> tuple[int, ...]:
    """The static spatial sizes of x [N, C, *spatial], one per entry of ``attr``."""
    if x.rank != count + 2:
        raise TypeRuleError(op, f"x must be [N, C, *spatial] with {count} spatial dims (one per entry), "
                            f"got {x}", attr)
    sizes = x.shape[2:]
    if not all(isinstance(d, int) for d in sizes):
        raise TypeRuleError(op, f"spatial dims must be static, got {x}", 0)
    return sizes


def _constant(b, array: np.ndarray, dtype: DType, shape, dims):
    """A static table as a constant in ``dtype``, broadcast into ``shape`` at ``dims``."""
    return expand(b, b.constant(np.asarray(array).astype(dtype.numpy)), shape, dims)


# -- max_pool / avg_pool -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Window:
    """One spatial dim of a pooling window, in torch's terms."""

    size: int
    kernel: int
    stride: int
    pad: int
    dilation: int
    out: int

    @property
    def pad_high(self) -> int:
        """High padding that makes reduce_window produce exactly ``out`` windows (ceil_mode adds some)."""
        return max(self.pad, (self.out - 1) * self.stride + self.dilation * (self.kernel - 1) + 1 - self.size - self.pad)

    def divisor(self, count_include_pad: bool) -> np.ndarray:
        """torch's avg_pool divisor per output position along this dim."""
        start = np.arange(self.out) * self.stride - self.pad
        end = np.minimum(start + self.kernel, self.size + self.pad)
        if count_include_pad:
            return end - start
        return np.minimum(end, self.size) - np.maximum(start, 0)


def _windows(op: str, x: TensorType, attrs) -> list[_Window]:
    kernel = attrs["kernel"]
    sizes = _spatial(op, x, len(kernel), "kernel")
    d = len(kernel)
    stride = attrs["stride"] or kernel  # torch: stride defaults to the kernel size
    padding = attrs["padding"] or (0,) * d
    dilation = attrs.get("dilation") or (1,) * d
    for name, value in (("stride", stride), ("padding", padding), ("dilation", dilation)):
        if len(value) != d:
            raise TypeRuleError(op, f"lists {len(value)} entries for {d} spatial dims", name)
    windows = []
    for size, k, s, p, dil in zip(sizes, kernel, stride, padding, dilation):
        if k < 1 or s < 1 or dil < 1 or p < 0:
            raise TypeRuleError(op, f"kernel {kernel}, stride {stride}, dilation {dilation} must be ≥ 1 and "
                                f"padding {padding} ≥ 0", "kernel")
        if p > k // 2:  # torch: "pad should be at most half of kernel size" (dilation aside)
            raise TypeRuleError(op, f"{p} exceeds half the kernel size {k}", "padding")
        span = dil * (k - 1) + 1
        # torch's pooling_output_shape: floor (or ceil) division, and a last window must
        # start inside the input or the low padding.
        out = (size + 2 * p - span + (s - 1 if attrs["ceil_mode"] else 0)) // s + 1
        if attrs["ceil_mode"] and (out - 1) * s >= size + p:
            out -= 1
        if out < 1:
            raise TypeRuleError(op, f"the window ({span} wide with padding {p}) does not fit spatial size {size}",
                                "kernel")
        windows.append(_Window(size, k, s, p, dil, out))
    return windows


def _pool_infer(op: str, dtypes):
    def infer(types, attrs):
        (x,) = types
        check_dtype(op, x, dtypes)
        return (x.with_shape(x.shape[:2] + tuple(w.out for w in _windows(op, x, attrs))),)

    return infer


def _reduce_windows(b, x, windows: list[_Window], kind: str):
    return b.reduce_window(
        x, kind=kind,
        window_dimensions=(1, 1) + tuple(w.kernel for w in windows),
        window_strides=(1, 1) + tuple(w.stride for w in windows),
        padding=((0, 0), (0, 0)) + tuple((w.pad, w.pad_high) for w in windows),
        window_dilations=(1, 1) + tuple(w.dilation for w in windows),
    )


def _max_pool(b, attrs, x):
    return _reduce_windows(b, x, _windows("max_pool", x.type, attrs), "max")


@widened
def _avg_pool(b, attrs, x):
    windows = _windows("avg_pool", x.type, attrs)
    total = _reduce_windows(b, x, windows, "sum")
    divisor = math.prod(np.ix_(*(w.divisor(attrs["count_include_pad"]) for w in windows)))
    spatial = tuple(range(2, x.rank))
    return b.div(total, _constant(b, divisor, x.dtype, total.shape, spatial))


# -- adaptive_avg_pool --------------------------------------------------------------------------


def _adaptive_infer(types, attrs):
    (x,) = types
    check_dtype("adaptive_avg_pool", x, FLOAT_DTYPES)
    sizes = _spatial("adaptive_avg_pool", x, len(attrs["output_size"]), "output_size")
    if any(o < 1 for o in attrs["output_size"]) or any(s < 1 for s in sizes):
        raise TypeRuleError("adaptive_avg_pool", f"output and input sizes must be ≥ 1 (x is {x})", "output_size")
    return (x.with_shape(x.shape[:2] + attrs["output_size"]),)


@widened
def _adaptive_avg_pool(b, attrs, x):
    counts = []
    for axis, out in enumerate(attrs["output_size"], start=2):
        size = x.shape[axis]
        start = np.arange(out) * size // out
        end = -(-(np.arange(out) + 1) * size // out)  # ceil division
        counts.append(end - start)
        if out == size:
            continue
        # Gather every window padded to the longest one, zero the padding taps (select, so an
        # inf outside the window cannot turn into NaN), and sum the window.
        taps = np.arange((end - start).max())
        index = np.minimum(start[:, None] + taps, end[:, None] - 1)
        shape = x.shape[:axis] + (index.size,) + x.shape[axis + 1:]
        gathered = b.gather(x, _constant(b, index.reshape(-1), DType.int64, shape, (axis,)), axis=axis)
        windows = b.reshape(gathered, shape=x.shape[:axis] + index.shape + x.shape[axis + 1:])
        valid = start[:, None] + taps < end[:, None]
        if not valid.all():
            zeros = full_like(b, 0, windows)
            mask = _constant(b, valid, DType.bool, windows.shape, (axis, axis + 1))
            windows = b.select(mask, windows, zeros)
        x = b.reduce_sum(windows, axes=(axis + 1,))
    divisor = math.prod(np.ix_(*counts))
    return b.div(x, _constant(b, divisor, x.dtype, x.shape, tuple(range(2, x.rank))))


# -- interpolate ----------------------------------------------------------------------------------

# mode -> number of spatial dims it takes (None: any), as in torch.nn.functional.interpolate
_MODES = {"nearest": None, "linear": 1, "bilinear": 2, "trilinear": 3}


def _interpolate_infer(types, attrs):
    (x,) = types
    op, mode, size = "interpolate", attrs["mode"], attrs["size"]
    check_dtype(op, x, FLOAT_DTYPES)
    _spatial(op, x, len(size), "size")
    if _MODES[mode] not in (None, len(size)):
        raise TypeRuleError(op, f"mode {mode!r} takes {_MODES[mode]} spatial dims, x {x} has {len(size)}", "mode")
    if mode == "nearest" and attrs["align_corners"]:
        raise TypeRuleError(op, "align_corners applies to the linear modes only (as in torch)", "align_corners")
    if any(s < 1 for s in size):
        raise TypeRuleError(op, f"sizes must be ≥ 1, got {list(size)}", "size")
    return (x.with_shape(x.shape[:2] + size),)


def _opmath(dtype: DType):
    """The float type torch's upsample kernels compute indices and weights in."""
    return np.float64 if dtype is DType.float64 else np.float32


def nearest_index(size: int, out: int, opmath) -> np.ndarray:
    """torch's nearest_idx: floor(i * (in / out)) computed in ``opmath``, clamped to the input."""
    if out == size:
        return np.arange(out)
    if out == 2 * size:
        return np.arange(out) >> 1
    scale = opmath(size) / opmath(out)
    return np.minimum(np.floor(np.arange(out).astype(opmath) * scale).astype(np.int64), size - 1)


def linear_taps(size: int, out: int, align_corners: bool, opmath) -> tuple[np.ndarray, ...]:
    """torch's (index0, index1, lambda0, lambda1) for linear resampling along one dim.

    Bit for bit as torch's CPU kernel computes them: in ``opmath``, with
    ``scale * (i + 0.5) - 0.5`` fused (one rounding, as the compiled kernel's FMA does) and
    the index taken with ``floorf`` (in float32 even for float64 input).
    """
    one = opmath(1)
    if align_corners:
        scale = opmath(size - 1) / opmath(out - 1) if out > 1 else opmath(0)
        src = scale * np.arange(out).astype(opmath)
    else:
        scale = Fraction(float(opmath(size) / opmath(out)))
        fused = [float(scale * (i + Fraction(1, 2)) - Fraction(1, 2)) for i in range(out)]
        src = np.maximum(np.array(fused).astype(opmath), opmath(0))
    i0 = np.minimum(np.floor(src.astype(np.float32)).astype(np.int64), size - 1)
    lambda1 = np.clip(src - i0.astype(opmath), opmath(0), one)
    i1 = i0 + (i0 < size - 1)
    return i0, i1, one - lambda1, lambda1


def _interpolate(b, attrs, x):
    dtype = x.dtype  # torch's index and weight arithmetic depends on the input's dtype
    x = widen(b, x)
    # torch nests the innermost dim deepest: resample the last spatial dim first.
    for axis in reversed(range(2, x.rank)):
        size, out = x.shape[axis], attrs["size"][axis - 2]
        if out == size:  # torch copies (nearest and linear alike)
            continue
        shape = x.shape[:axis] + (out,) + x.shape[axis + 1:]

        def take(index, source=x, shape=shape, axis=axis):
            return b.gather(source, _constant(b, index, DType.int64, shape, (axis,)), axis=axis)

        if attrs["mode"] == "nearest":
            # torch computes the index in float32, except its float64 kernels for 1 and 3
            # spatial dims, which use float64 (6 -> 74: sample 37 is source 2 vs 3).
            wide = dtype is DType.float64 and x.rank != 4
            x = take(nearest_index(size, out, np.float64 if wide else np.float32))
            continue
        i0, i1, w0, w1 = linear_taps(size, out, attrs["align_corners"], _opmath(dtype))
        x = b.add(b.mul(take(i0), _constant(b, w0, x.dtype, shape, (axis,))),
                  b.mul(take(i1), _constant(b, w1, x.dtype, shape, (axis,))))
    return narrow(b, x, dtype)


# -- the table --------------------------------------------------------------------------------------

_KERNEL = AttrSpec("kernel", AttrKind.INTS, doc="window size per spatial dim")
_STRIDE = AttrSpec("stride", AttrKind.INTS, (), doc="per spatial dim; empty means the kernel size")
_PADDING = AttrSpec("padding", AttrKind.INTS, (), doc="both sides, per spatial dim; at most kernel // 2")
_CEIL = AttrSpec("ceil_mode", AttrKind.BOOL, False, doc="round the window count up (torch's ceil_mode)")

# name -> (attrs, infer, decompose, dtypes, groups, doc)
_OPS = {
    "max_pool": ((_KERNEL, _STRIDE, _PADDING,
                  AttrSpec("dilation", AttrKind.INTS, (), doc="per spatial dim; empty means 1"), _CEIL),
                 _pool_infer("max_pool", NUMERIC), _max_pool, NUMERIC, {Group.REDUCTION},
                 "torch max_pool{1,2,3}d over [N, C, *spatial]; padding is -inf; NaN propagates."),
    "avg_pool": ((_KERNEL, _STRIDE, _PADDING, _CEIL,
                  AttrSpec("count_include_pad", AttrKind.BOOL, True, doc="count padding in the divisor")),
                 _pool_infer("avg_pool", FLOAT_DTYPES), _avg_pool, FLOAT_DTYPES, {Group.REDUCTION},
                 "torch avg_pool{1,2,3}d: window sum / divisor, the divisor counting the window clipped "
                 "to the padded input (or to the input when count_include_pad is false)."),
    "adaptive_avg_pool": ((AttrSpec("output_size", AttrKind.INTS, doc="per spatial dim"),),
                          _adaptive_infer, _adaptive_avg_pool, FLOAT_DTYPES, {Group.REDUCTION},
                          "torch adaptive_avg_pool{1,2,3}d: output i averages input "
                          "floor(i*in/out) .. ceil((i+1)*in/out) - 1 along each spatial dim."),
    "interpolate": ((AttrSpec("size", AttrKind.INTS, doc="output size per spatial dim (torch's size=)"),
                     AttrSpec("mode", AttrKind.STR, "nearest", choices=tuple(_MODES)),
                     AttrSpec("align_corners", AttrKind.BOOL, False, doc="linear modes only")),
                    _interpolate_infer, _interpolate, FLOAT_DTYPES, {Group.COMPUTES_WIDE},
                    "torch.nn.functional.interpolate(x, size=...) for nearest (source floor(i * in/out), "
                    "computed in torch's float type) and (bi/tri)linear with or without align_corners."),
}

OPS = tuple(
    OpDef(name=name, kind=Kind.COMPOSITE, operands=("x",), attrs=attrs, infer=infer, dtypes=dtypes,
          accuracy=Accuracy.COMPOSITE, groups=frozenset(groups), decompose=decompose, doc=doc)
    for name, (attrs, infer, decompose, dtypes, groups, doc) in _OPS.items()
)
