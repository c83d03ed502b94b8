"""Windowed reductions: ``reduce_window`` (max or sum), the primitive under pooling.

Every dimension of the operand is listed in every attribute (batch and channel dims get
size-1 windows). The operand is padded (negative padding crops) with the reduction's
identity: -inf for max (ints: the dtype's min), 0 for sum. The window geometry helpers
here are shared with ``convolution`` (contraction.py).

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, f32, evaluate
    >>> b = GraphBuilder()
    >>> x = b.input(f32[5])
    >>> y = b.reduce_window(x, kind="max", window_dimensions=(2,), window_strides=(2,),
    ...                     padding=((0, 1),), window_dilations=(1,))
    >>> evaluate(b.build([y]), [np.array([1, 3, 2, -1, 7], np.float32)])[0].tolist()
    [3.0, 2.0, 7.0]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..errors import TypeRuleError
from ..opdef import Accuracy, AttrKind, AttrSpec, Group, Kind, OpDef
from ..types import Dim
from .reduction import NUMERIC, lowest
from .rules import check_dtype


def check_lengths(op: str, rank: int, attrs: Mapping[str, Sequence], what: str) -> None:
    """Every named attribute lists exactly ``rank`` entries (one per ``what``)."""
    for name, value in attrs.items():
        if len(value) != rank:
            raise TypeRuleError(op, f"lists {len(value)} entries, expected {rank} (one per {what})", name)


def check_positive(op: str, attrs: Mapping[str, Sequence[int]]) -> None:
    """Window sizes, strides and dilations are all >= 1."""
    for name, value in attrs.items():
        if any(v < 1 for v in value):
            raise TypeRuleError(op, f"entries must be >= 1, got {list(value)}", name)


def windowed_size(size: int, window: int, stride: int, pad: tuple[int, int], dilation: int,
                  base_dilation: int = 1) -> int:
    """Number of window positions along one dimension (0 when the window does not fit)."""
    dilated = (size - 1) * base_dilation + 1 if size > 0 else 0
    padded = dilated + pad[0] + pad[1]
    span = (window - 1) * dilation + 1
    return (padded - span) // stride + 1 if padded >= span else 0


def pad_or_crop(x: np.ndarray, padding: Sequence[tuple[int, int]], value) -> np.ndarray:
    """Pad each axis by (low, high) with ``value``; negative amounts crop instead."""
    grown = np.pad(x, [(max(lo, 0), max(hi, 0)) for lo, hi in padding], constant_values=value)
    crop = tuple(slice(max(-lo, 0), n - max(-hi, 0)) for (lo, hi), n in zip(padding, grown.shape))
    return grown[crop]


def strided_windows(x: np.ndarray, window: Sequence[int], strides: Sequence[int],
                    dilations: Sequence[int]) -> np.ndarray:
    """A view of shape ``[*positions, *window]``: every window of every axis of ``x``."""
    spans = [(w - 1) * d + 1 for w, d in zip(window, dilations)]
    positions = [windowed_size(n, w, s, (0, 0), d) for n, w, s, d in zip(x.shape, window, strides, dilations)]
    if 0 in positions:  # the view cannot be made when a window does not fit
        return np.zeros(tuple(positions) + tuple(window), x.dtype)
    view = sliding_window_view(x, spans)
    picks = tuple(slice(None, None, s) for s in strides) + tuple(slice(None, None, d) for d in dilations)
    return view[picks]


_ATTRS = ("window_dimensions", "window_strides", "window_dilations")


def _reduce_window_infer(types, attrs):
    x = types[0]
    op = "reduce_window"
    check_dtype(op, x, NUMERIC)
    check_lengths(op, x.rank, {name: attrs[name] for name in _ATTRS + ("padding",)}, "dimension of x")
    check_positive(op, {name: attrs[name] for name in _ATTRS})
    shape: list[Dim] = []
    geometry = zip(x.shape, attrs["window_dimensions"], attrs["window_strides"], attrs["padding"],
                   attrs["window_dilations"])
    for i, (n, w, s, p, d) in enumerate(geometry):
        if isinstance(n, int):
            shape.append(windowed_size(n, w, s, p, d))
        elif (w, s, p) == (1, 1, (0, 0)):  # a trivial window keeps a symbolic dim as it is
            shape.append(n)
        else:
            raise TypeRuleError(op, f"dimension {i} of {x} is symbolic; only a size-1, stride-1, "
                                    "unpadded window may cover it", 0)
    return (x.with_shape(shape),)


def _reduce_window_ref(ctx, x):
    a = ctx.attrs
    dtype = ctx.in_types[0].dtype
    is_max = a["kind"] == "max"
    padded = pad_or_crop(x, a["padding"], lowest(dtype) if is_max else 0)
    windows = strided_windows(padded, a["window_dimensions"], a["window_strides"], a["window_dilations"])
    window_axes = tuple(range(x.ndim, windows.ndim))
    if is_max:
        return np.max(windows, axis=window_axes)
    with np.errstate(all="ignore"):  # inf - inf is NaN by IEEE rules
        return np.sum(windows, axis=window_axes, dtype=x.dtype)  # ints wrap, floats sum in float64


OPS = (
    OpDef(
        name="reduce_window",
        kind=Kind.PRIMITIVE,
        operands=("x",),
        attrs=(
            AttrSpec("kind", AttrKind.STR, choices=("max", "sum"), doc="the reduction applied to each window"),
            AttrSpec("window_dimensions", AttrKind.INTS, doc="window size per dimension (>= 1)"),
            AttrSpec("window_strides", AttrKind.INTS, doc="step between windows per dimension (>= 1)"),
            AttrSpec("padding", AttrKind.PAIRS, doc="(low, high) per dimension; negative crops"),
            AttrSpec("window_dilations", AttrKind.INTS, doc="step between window elements (>= 1)"),
        ),
        infer=_reduce_window_infer,
        dtypes=NUMERIC,
        # One class for both kinds: max is exact and so meets the accumulation bound too.
        accuracy=Accuracy.ACCUMULATION,
        groups=frozenset({Group.REDUCTION}),
        reference=_reduce_window_ref,
        doc="max or sum over sliding windows; padding holds -inf (max; ints: the dtype's min) or 0 "
            "(sum); integer sums wrap; max propagates NaN",
        implementation_defined=("sign of a zero max when -0.0 and 0.0 compete",),
    ),
)
