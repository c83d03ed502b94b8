"""Windowed reductions (pooling), max-pooling's gradient, ``select_and_scatter_add``, and its
forward-mode derivative, ``select_and_gather_add``.

The IR's ``reduce_window`` takes max and sum; min is max of the negation. The IR has no
select-and-scatter, so its gradient is built from primitives: one strided slice per window
offset picks every window's candidate at that offset, a running choice keeps XLA's rule
(the first element the select comparison does not beat, ``ge`` for max-pooling: the first
maximum; padding is never chosen), and each offset's share goes back to its positions,
summed per residue class of the stride and woven back (:func:`_scattered`).
"""

from __future__ import annotations

import functools
import itertools

import numpy as np

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
    out_shape = tuple(source.type.shape)
    offsets = list(itertools.product(*(range(w) for w in window)))

    def at(x: Value, offset) -> Value:
        limits = tuple(k + s * (n - 1) + 1 for k, s, n in zip(offset, strides, out_shape))
        return b.slice(x, start_indices=tuple(offset), limit_indices=limits, strides=strides)

    def where(mask: np.ndarray, value: Value, otherwise: bool) -> Value:
        """``value`` where the (constant, broadcast) ``mask`` holds; no node where it always does."""
        if mask.all():
            return value
        return b.select(b.broadcast_in_dim(b.constant(mask), shape=out_shape, broadcast_dimensions=tuple(range(rank))),
                        value, ctx.full(otherwise, DType.bool, out_shape))

    # Which windows' elements at each offset are the operand's, not padding: known while
    # translating (a constant over the padded dims only), so XLA gets no mask to compute.
    keep = b.ge if p["select_prim"] == "ge" else b.le
    best, best_valid = at(padded, offsets[0]), _inside(offsets[0], strides, out_shape, padding, operand.type.shape)
    chosen = ctx.full(0, DType.int32, out_shape)
    for k, offset in enumerate(offsets[1:], start=1):
        candidate = at(padded, offset)
        candidate_valid = _inside(offset, strides, out_shape, padding, operand.type.shape)
        # the candidate beats the best so far if the best is padding or the select comparison fails
        beaten = where(best_valid, b.logical_not(keep(best, candidate)), True)
        take = where(candidate_valid, beaten, False)
        best = b.select(take, candidate, best)
        chosen = b.select(take, ctx.full(k, DType.int32, out_shape), chosen)
        best_valid = best_valid | candidate_valid
    zeros = ctx.full(0, dtype, out_shape)
    shares = {offset: b.select(b.eq(chosen, ctx.full(k, DType.int32, out_shape)), source, zeros)
              for k, offset in enumerate(offsets)}
    total = _scattered(ctx, shares, tuple(padded.type.shape), strides)
    limits = tuple(size - hi for size, (_, hi) in zip(padded.type.shape, padding))
    return b.slice(total, start_indices=tuple(lo for lo, _ in padding), limit_indices=limits, strides=(1,) * rank)


def select_and_gather_add(ctx: JaxContext, tangents: Value, operand: Value):
    """Max-pooling's forward-mode derivative (jax.jvp, jax.jacfwd): per window, the tangent where
    the operand is chosen. XLA reduces (operand, tangent) pairs from the init (∓inf, 0) over the
    window in order, padding being init pairs, the pair ``select_prim(acc, next)`` holds for
    kept: so a window of -infs (or padding) alone gives 0, ties the first, NaN the last NaN's."""
    p = ctx.params
    if p["select_prim"] not in ("ge", "le"):
        refuse(f"select_prim={p['select_prim']} (parity builds the ge and le forms: max and min pooling)")
    if any(d != 1 for d in p["base_dilation"]):
        refuse(f"base_dilation={tuple(p['base_dilation'])} (a window over a dilated operand)")
    if not operand.type.dtype.is_float:
        refuse(f"select_and_gather_add of {operand.type.dtype.short} (parity builds it for floats: the init is ∓inf)")
    b, dtype = ctx.b, operand.type.dtype
    window, strides = tuple(p["window_dimensions"]), tuple(p["window_strides"])
    dilation = tuple(p["window_dilation"])
    padding = tuple((int(lo), int(hi)) for lo, hi in p["padding"])
    keep = b.ge if p["select_prim"] == "ge" else b.le
    init = -np.inf if p["select_prim"] == "ge" else np.inf
    out_shape = tuple(ctx.out.shape)

    def padded(x: Value, value: float) -> Value:
        return b.pad(x, b.constant(value, dtype), edge_padding_low=tuple(lo for lo, _ in padding),
                     edge_padding_high=tuple(hi for _, hi in padding), interior_padding=(0,) * len(window))

    values, slopes = padded(operand, init), padded(tangents, 0.0)
    best, slope = ctx.full(init, dtype, out_shape), ctx.full(0.0, dtype, out_shape)
    for offset in itertools.product(*(range(w) for w in window)):
        starts = tuple(k * d for k, d in zip(offset, dilation))
        limits = tuple(k + s * (n - 1) + 1 for k, s, n in zip(starts, strides, out_shape))
        candidate, candidate_slope = (b.slice(x, start_indices=starts, limit_indices=limits, strides=strides)
                                      for x in (values, slopes))
        take = b.logical_not(keep(best, candidate))
        best, slope = b.select(take, candidate, best), b.select(take, candidate_slope, slope)
    return slope


def _inside(offset, strides, out_shape, padding, size) -> np.ndarray:
    """Per window, whether its element at ``offset`` lies in the operand (not its padding): a
    bool array with the windows' shape on padded dims and 1 elsewhere (always inside there)."""
    axes = []
    for k, s, n, (lo, hi), length in zip(offset, strides, out_shape, padding, size):
        if lo == 0 and hi == 0:
            axes.append(np.ones(1, bool))
            continue
        if not isinstance(n, int):
            refuse("a padded window over a symbolic size (the choice of max-pooling's gradient is "
                   "built with the padding's place known)")
        position = k + s * np.arange(n) - lo  # in the unpadded operand
        axes.append((position >= 0) & (position < length))
    rank = len(axes)
    shaped = [a.reshape([-1 if d == i else 1 for d in range(rank)]) for i, a in enumerate(axes)]
    return functools.reduce(np.logical_and, shaped)


def _scattered(ctx: JaxContext, shares: dict, size: tuple[int, ...], strides: tuple[int, ...]) -> Value:
    """Each window offset's share (on the window grid) added at its place in the padded operand
    of shape ``size``: window ``i`` of offset ``k`` lands on ``i * stride + k``.

    A position ``p`` only receives the offsets ``k`` with ``k ≡ p`` (mod stride), per dim. So the
    positions of one residue class form a coarse grid (``j = (p - r) / stride``) on which offset
    ``k = r + m * stride`` is its share shifted by ``m``: each class is summed on its coarse grid
    with edge pads alone (XLA fuses them into one loop), from +0 as XLA's select-and-scatter
    starts, in increasing offset order, and the classes are interleaved into the padded grid by
    stacking and a reshape. The first version padded every share to the whole grid with
    interior padding and summed all of them: nine full-size loops for a 3×3 window, 1.4× jax.jit's
    time on a small CNN's gradients (bench/results/jax_zoo.md)."""
    b = ctx.b
    some = next(iter(shares.values()))
    dtype, window_shape = some.type.dtype, tuple(some.type.shape)
    coarse = tuple(-(-n // s) for n, s in zip(size, strides))  # ceil(size / stride) per dim
    classes: dict[tuple[int, ...], Value] = {}
    for residue in itertools.product(*(range(s) for s in strides)):
        total = ctx.full(0, dtype, coarse)
        for offset, share in shares.items():  # dict order: increasing offsets
            if any(k % s != r for k, s, r in zip(offset, strides, residue)):
                continue
            shift = tuple((k - r) // s for k, s, r in zip(offset, strides, residue))
            placed = b.pad(share, b.constant(0, dtype), edge_padding_low=shift,
                           edge_padding_high=tuple(c - n - m for c, n, m in zip(coarse, window_shape, shift)),
                           interior_padding=(0,) * len(size))
            total = b.add(total, placed)
        classes[residue] = total
    grid = _interleaved(b, classes, strides)
    return b.slice(grid, start_indices=(0,) * len(size), limit_indices=size, strides=(1,) * len(size))


def _interleaved(b, classes: dict, strides: tuple[int, ...]) -> Value:
    """The residue classes' coarse grids (keyed by residue per dim) woven into one grid of
    ``coarse * stride`` per dim: ``out[j * s + r] = classes[r][j]``, one dim at a time from the last."""
    for d in reversed(range(len(strides))):
        s, merged = strides[d], {}
        for key in classes:  # residues of dims 0..d
            prefix = key[:d]
            if prefix in merged:
                continue
            parts = [classes[(*prefix, r)] for r in range(s)]
            if s == 1:
                merged[prefix] = parts[0]
                continue
            here = tuple(parts[0].type.shape)
            stacked = b.concatenate(*(b.reshape(p, shape=(*here[:d + 1], 1, *here[d + 1:])) for p in parts),
                                    dimension=d + 1)
            merged[prefix] = b.reshape(stacked, shape=(*here[:d], here[d] * s, *here[d + 1:]))
        classes = merged
    return classes[()]

TABLE = {
    "reduce_window_max": reduce_window_max,
    "reduce_window_sum": reduce_window_sum,
    "reduce_window_min": reduce_window_min,
    "select_and_scatter_add": select_and_scatter_add,
    "select_and_gather_add": select_and_gather_add,
}
