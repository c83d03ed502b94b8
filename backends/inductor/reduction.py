"""Reductions, scans, sorting and windows, on torch's reductions.

What differs from torch and is fixed here: torch's sum/prod promote small integers to
int64 (the IR wraps in the operand's dtype: ``dtype=`` keeps it), ``amax`` of an empty
axis raises (the IR gives the identity), a sum over no axes is the whole sum in torch
(the identity in the IR), and ``topk`` is not stable (a stable sort, cut at k, is).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ...ir.dtypes import DType
from .context import U32_MASK, InductorNodeContext
from .shape import pad_zeros


def _lowest(dtype: DType):
    if dtype.is_float:
        return -math.inf
    return 0 if dtype is DType.uint32 else int(dtype.iinfo.min)


def _highest(dtype: DType):
    if dtype.is_float:
        return math.inf
    return U32_MASK if dtype is DType.uint32 else int(dtype.iinfo.max)


def _empty(ctx: InductorNodeContext) -> bool:
    shape = ctx.in_types[0].shape
    return any(shape[a] == 0 for a in ctx.attrs["axes"])


def reduce_sum(ctx: InductorNodeContext, x):
    axes = ctx.attrs["axes"]
    return torch.sum(x, dim=axes, dtype=x.dtype) if axes else x.clone()


def _wide_product(x):
    """Products run in float64 (rounded once) or int64 (wrapped once): Inductor multiplies in a
    tree whose partial products overflow to inf, or underflow to 0, where the IR's sequential
    product in float64 does not (f32 measured: NaN from inf · 0 where the product is -3.1e7), and
    its int8 product gave 0 where the wrapped product is -128."""
    return x.to(torch.float64 if x.dtype.is_floating_point else torch.int64)


def reduce_prod(ctx: InductorNodeContext, x):
    wide = _wide_product(x)
    for axis in sorted(ctx.attrs["axes"], reverse=True):
        wide = torch.prod(wide, dim=axis)
    return wide.to(x.dtype)


def _extreme(fn, identity):
    def rule(ctx: InductorNodeContext, x):
        axes = ctx.attrs["axes"]
        if not axes:
            return x.clone()
        if _empty(ctx):
            return torch.full(ctx.out.shape, identity(ctx.dtype), dtype=x.dtype)
        if x.dtype == torch.uint8:  # Inductor's uint8 amin gave 0 where the minimum is 29: in int16
            return fn(x.to(torch.int16), dim=axes).to(x.dtype)
        return fn(x, dim=axes)

    return rule


def _logical(fn):
    def rule(ctx: InductorNodeContext, x):
        axes = ctx.attrs["axes"]
        return fn(x, dim=axes) if axes else x.clone()

    return rule


def _arg(fn):
    def rule(ctx: InductorNodeContext, x):
        return fn(x, dim=ctx.attrs["axis"]).to(ctx.out_dtype)  # first index of ties and of NaN

    return rule


def _scan(fn, *, wide: bool = False, values: bool = False):
    def rule(ctx: InductorNodeContext, x):
        axis, reverse = ctx.attrs["axis"], ctx.attrs["reverse"]
        if reverse:
            x = torch.flip(x, (axis,))
        if values:
            y = fn(x, axis).values
        elif wide:
            y = fn(_wide_product(x), axis).to(x.dtype)
        else:
            y = fn(x, axis, dtype=x.dtype)
        return torch.flip(y, (axis,)) if reverse else y

    return rule


def _stable_order(x, axis: int, descending: bool):
    # torch sorts NaN above +inf and -0.0 equal to 0.0, as the IR does; stable keeps ties in order
    return torch.sort(x, dim=axis, descending=descending, stable=True)


def sort(ctx: InductorNodeContext, x):
    values, order = _stable_order(x, ctx.attrs["axis"], ctx.attrs["descending"])
    return values, order


def top_k(ctx: InductorNodeContext, x):
    k = ctx.attrs["k"]
    values, order = _stable_order(x, -1, ctx.attrs["largest"])
    return values[..., :k], order[..., :k]


def reduce_window(ctx: InductorNodeContext, x):
    a = ctx.attrs
    dtype = ctx.dtype
    is_max = a["kind"] == "max"
    if 0 in ctx.out.shape:
        return torch.zeros(ctx.out.shape, dtype=x.dtype)
    low = [lo for lo, _ in a["padding"]]
    high = [hi for _, hi in a["padding"]]
    if is_max:
        pads = []
        for lo, hi in zip(reversed(low), reversed(high)):
            pads += [lo, hi]
        x = F.pad(x, pads, value=_lowest(dtype)) if any(pads) else x
    else:
        x = pad_zeros(x, low, high, [0] * len(low))
    rank = x.dim()
    for d, (w, s, dil) in enumerate(zip(a["window_dimensions"], a["window_strides"], a["window_dilations"])):
        span = (w - 1) * dil + 1
        x = x.unfold(d, span, s)  # appends the window as the last dim
        if dil > 1:
            x = x[..., ::dil]
    window_dims = tuple(range(rank, x.dim()))
    if is_max:
        return torch.amax(x, dim=window_dims)
    return torch.sum(x, dim=window_dims, dtype=x.dtype)


RULES = {
    "reduce_sum": reduce_sum,
    "reduce_prod": reduce_prod,
    "reduce_max": _extreme(torch.amax, _lowest),
    "reduce_min": _extreme(torch.amin, _highest),
    "reduce_and": _logical(torch.all),
    "reduce_or": _logical(torch.any),
    "argmax": _arg(torch.argmax),
    "argmin": _arg(torch.argmin),
    "cumsum": _scan(torch.cumsum),  # Inductor's scan starts from +0.0, as the IR's (a test checks)
    "cumprod": _scan(torch.cumprod, wide=True),
    "cummax": _scan(torch.cummax, values=True),
    "cummin": _scan(torch.cummin, values=True),
    "sort": sort,
    "top_k": top_k,
    "reduce_window": reduce_window,
}
