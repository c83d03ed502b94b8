"""Windowed reductions (pooling) and max-pooling's gradient, ``select_and_scatter_add``.

The IR's ``reduce_window`` takes max and sum; min is max of the negation. The IR has no
select-and-scatter, so its gradient is built from primitives: one strided slice per window
offset picks every window's candidate at that offset, a running choice keeps XLA's rule
(the first element the select comparison does not beat, ``ge`` for max-pooling: the first
maximum; padding is never chosen), and each offset's share goes back to its positions with
an interior pad, summed over the offsets.
"""

from __future__ import annotations

import itertools

from ....ir.dtypes import DType
from ....ir.graph import Value
from ..context import JaxContext, refuse


def _window_attrs(ctx: JaxContext) -> dict:
    p = ctx.params
    if any(d != 1 for d in p["base_dilation"]):
        refuse(f"base_dilation={tuple(p['base_dilation'])} (a window over a dilated operand)")
    return dict(window_dimensions=tuple(p["window_dimensions"]), window_strides=tuple(p["window_strides"]),
                padding=tuple((int(lo), int(hi)) for lo, hi in p["padding"]),
                window_dilations=tuple(p["window_dilation"]))


def reduce_window_max(ctx: JaxContext, x: Value):
    return ctx.b.reduce_window(x, kind="max", **_window_attrs(ctx))


def reduce_window_sum(ctx: JaxContext, x: Value):
    return ctx.b.reduce_window(x, kind="sum", **_window_attrs(ctx))


def reduce_window_min(ctx: JaxContext, x: Value):
    return ctx.b.neg(ctx.b.reduce_window(ctx.b.neg(x), kind="max", **_window_attrs(ctx)))


def select_and_scatter_add(ctx: JaxContext, source: Value, operand: Value):
    p = ctx.params
    if p["select_prim"] not in ("ge", "le"):
        refuse(f"select_prim={p['select_prim']} (parity builds the ge and le forms: max and min pooling)")
    b = ctx.b
    window, strides = tuple(p["window_dimensions"]), tuple(p["window_strides"])
    padding = tuple((int(lo), int(hi)) for lo, hi in p["padding"])
    dtype, rank = operand.type.dtype, operand.type.rank
    zero = b.constant(0, dtype)
    padded = b.pad(operand, zero, edge_padding_low=tuple(lo for lo, _ in padding),
                   edge_padding_high=tuple(hi for _, hi in padding), interior_padding=(0,) * rank)
    valid = b.pad(ctx.full(True, DType.bool, operand.type.shape), b.constant(False, DType.bool),
                  edge_padding_low=tuple(lo for lo, _ in padding), edge_padding_high=tuple(hi for _, hi in padding),
                  interior_padding=(0,) * rank)
    out_shape = tuple(source.type.shape)
    offsets = list(itertools.product(*(range(w) for w in window)))

    def at(x: Value, offset) -> Value:
        limits = tuple(k + s * (n - 1) + 1 for k, s, n in zip(offset, strides, out_shape))
        return b.slice(x, start_indices=tuple(offset), limit_indices=limits, strides=strides)

    keep = b.ge if p["select_prim"] == "ge" else b.le
    best, best_valid = at(padded, offsets[0]), at(valid, offsets[0])
    chosen = ctx.full(0, DType.int32, out_shape)
    for k, offset in enumerate(offsets[1:], start=1):
        candidate, candidate_valid = at(padded, offset), at(valid, offset)
        beaten = b.logical_or(b.logical_not(best_valid), b.logical_not(keep(best, candidate)))
        take = b.logical_and(candidate_valid, beaten)
        best = b.select(take, candidate, best)
        chosen = b.select(take, ctx.full(k, DType.int32, out_shape), chosen)
        best_valid = b.logical_or(best_valid, candidate_valid)
    total = None
    zeros = ctx.full(0, dtype, out_shape)
    for k, offset in enumerate(offsets):
        share = b.select(b.eq(chosen, ctx.full(k, DType.int32, out_shape)), source, zeros)
        high = tuple(size - (o + s * (n - 1) + 1)
                     for size, o, s, n in zip(padded.type.shape, offset, strides, out_shape))
        placed = b.pad(share, zero, edge_padding_low=tuple(offset), edge_padding_high=high,
                       interior_padding=tuple(s - 1 for s in strides))
        total = placed if total is None else b.add(total, placed)
    limits = tuple(size - hi for size, (_, hi) in zip(padded.type.shape, padding))
    return b.slice(total, start_indices=tuple(lo for lo, _ in padding), limit_indices=limits, strides=(1,) * rank)


TABLE = {
    "reduce_window_max": reduce_window_max,
    "reduce_window_sum": reduce_window_sum,
    "reduce_window_min": reduce_window_min,
    "select_and_scatter_add": select_and_scatter_add,
}
