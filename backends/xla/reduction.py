"""Reduction rules: reductions, windows, scans and sorting, NaN and signed zeros as the IR says.

Float max/min spell the NaN check out (XLA:CPU's vectorized reduce drops NaN), sums
start from -0.0 (the identity of IEEE addition), and sorting is stable with the
reference's order.

Example::

    >>> import numpy as np
    >>> from parity.ir import f32
    >>> from .context import XlaNodeContext
    >>> ctx = XlaNodeContext({"axes": (0,)}, (f32[3],), (f32[()],))
    >>> float(RULES["reduce_max"](ctx, np.array([1, np.nan, 3], np.float32)))
    nan
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
from jax import lax

from ...ir.dtypes import DType
from .context import Rule, full, np_dtype
from .widening import HALF_IN_F32


def _nan_max(a, b):
    return lax.select(lax.ne(a, a), a, lax.select(lax.ne(b, b), b, lax.max(a, b)))


def _nan_min(a, b):
    return lax.select(lax.ne(a, a), a, lax.select(lax.ne(b, b), b, lax.min(a, b)))


def extreme(dtype: DType, high: bool):
    if dtype.is_float:
        return np.array(np.inf if high else -np.inf, np_dtype(dtype))
    info = dtype.iinfo
    return np.array(info.max if high else info.min, np_dtype(dtype))


# name -> (combiner for floats, combiner for ints/bools, init(dtype)). XLA CPU's reduce
# with a plain max drops NaN on long rows, so float max/min spell the NaN check out.
_REDUCERS = {
    "reduce_sum": (lax.add, lax.add, lambda d: np.array(-0.0 if d.is_float else 0, np_dtype(d))),
    "reduce_prod": (lax.mul, lax.mul, lambda d: np.array(1, np_dtype(d))),
    "reduce_max": (_nan_max, lax.max, lambda d: extreme(d, high=False)),
    "reduce_min": (_nan_min, lax.min, lambda d: extreme(d, high=True)),
    "reduce_and": (None, lax.bitwise_and, lambda d: np.array(True)),
    "reduce_or": (None, lax.bitwise_or, lambda d: np.array(False)),
}


def _reducer(name: str) -> Rule:
    on_float, on_int, init = _REDUCERS[name]

    def rule(ctx, x):
        dtype = ctx.in_types[0].dtype
        return lax.reduce(x, init(dtype), on_float if dtype.is_float else on_int, ctx.attrs["axes"])

    return rule


def _arg(name: str) -> Rule:
    fn = lax.argmax if name == "argmax" else lax.argmin

    def rule(ctx, x):
        # lax's variadic reduce compares with NaN as the extreme and keeps the first index.
        return fn(x, ctx.attrs["axis"], np_dtype(ctx.attrs["index_dtype"]))

    return rule



_SCANS = {"cumsum": lax.cumsum, "cumprod": lax.cumprod, "cummax": lax.cummax, "cummin": lax.cummin}


def _scan(name: str) -> Rule:
    fn = _SCANS[name]

    def rule(ctx, x):
        return fn(x, ctx.attrs["axis"], reverse=ctx.attrs["reverse"])

    return rule


def _stable_sort(x, axis: int, descending: bool):
    """(values, i64 indices) sorted stably; lax's order puts NaN last and -0.0 == 0.0."""
    n = x.shape[axis]
    if descending:
        # Mirror of the reference: sort the reversed line ascending, read it backwards.
        x = lax.rev(x, (axis,))
    idx = lax.broadcasted_iota(np.int64, x.shape, axis)
    values, order = lax.sort((x, idx), dimension=axis, is_stable=True, num_keys=1)
    if descending:
        values = lax.rev(values, (axis,))
        order = lax.sub(lax.full_like(order, n - 1), lax.rev(order, (axis,)))
    return values, order


def _sort(ctx, x):
    return _stable_sort(x, ctx.attrs["axis"], ctx.attrs["descending"])


def _top_k(ctx, x):
    # A full stable sort, cut to k: lax.top_k's tie and NaN order is not the IR's.
    axis, k = x.ndim - 1, ctx.attrs["k"]
    values, order = _stable_sort(x, axis, ctx.attrs["largest"])
    return lax.slice_in_dim(values, 0, k, axis=axis), lax.slice_in_dim(order, 0, k, axis=axis)




# Float max windows up to this many taps are a max of strided slices: XLA:CPU runs a
# reduce_window whose combiner checks NaN as a scalar loop (convnet b16: 29 ms against
# jax.jit's 18), while elementwise lax.max propagates NaN with fast min/max off and fuses.
_UNROLLED_WINDOW = 64


def _window_taps(x, a, out_shape):
    """One strided slice of the (padded) ``x`` per window offset: tap k of every window."""
    for offset in itertools.product(*(range(w) for w in a["window_dimensions"])):
        start = [o * d for o, d in zip(offset, a["window_dilations"])]
        limit = [s + (n - 1) * st + 1 for s, n, st in zip(start, out_shape, a["window_strides"])]
        yield lax.slice(x, start, limit, a["window_strides"])


def _reduce_window(ctx, x):
    a = ctx.attrs
    dtype = ctx.in_types[0].dtype
    if ctx.out.numel == 0:
        return full(0, ctx.out)
    is_max = a["kind"] == "max"
    # Pad explicitly with the reference's values (-inf / +0.0), then reduce from the true
    # identity (-inf / -0.0) so the sign of zero sums matches too.
    fill = extreme(dtype, high=False) if is_max else np.array(0, np_dtype(dtype))
    x = lax.pad(x, fill, [(lo, hi, 0) for lo, hi in a["padding"]])
    if is_max and dtype.is_float and math.prod(a["window_dimensions"]) <= _UNROLLED_WINDOW:
        return functools.reduce(lax.max, _window_taps(x, a, ctx.out.shape))
    init = fill if is_max else _REDUCERS["reduce_sum"][2](dtype)
    combine = (_nan_max if dtype.is_float else lax.max) if is_max else lax.add
    wide = None if is_max else HALF_IN_F32.get(dtype)  # f16/bf16 window sums add in f32, as reduce_sum
    if wide is not None:
        x, init = lax.convert_element_type(x, wide), np.array(init, wide)
    out = lax.reduce_window(x, init, combine, a["window_dimensions"], a["window_strides"],
                            [(0, 0)] * x.ndim, window_dilation=a["window_dilations"])
    return out if wide is None else lax.convert_element_type(out, np_dtype(dtype))


RULES: dict[str, Rule] = {
    **{name: _reducer(name) for name in _REDUCERS},
    "argmax": _arg("argmax"), "argmin": _arg("argmin"),
    **{name: _scan(name) for name in _SCANS},
    "sort": _sort, "top_k": _top_k,
    "reduce_window": _reduce_window,
}
