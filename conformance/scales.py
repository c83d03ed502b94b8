"""The per-element scale ``S`` of each ``scaled`` bound (see :mod:`.bounds`).

Every function receives a :class:`ScaleContext` (the op's operands in float64, its
attributes, the oracle outputs) and returns an array that broadcasts to the output.
The custom formulas are the magnitudes the error analysis of each decomposition
runs on: no cancellation can make them small while the error stays large.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..ir.graph import Graph
from ..ir.interpreter import evaluate
from ..ir.ops.spectral import frame_indices, istft_span
from .bounds import FFT_OPS, IN_OUT_CAP, Scale

_BOX_MULLER_RADIUS = 8.5  # sqrt(-2 log(2**-53)) < 8.6; float32 draws stay below 5.7


@dataclass
class ScaleContext:
    op: str
    attrs: Mapping[str, Any]
    operands: Sequence[np.ndarray]  # the op's operands as the oracle sees them (floats in float64)
    oracle: Sequence[np.ndarray]
    output: int
    graph: Graph
    arrays: Sequence[np.ndarray]
    eps: float  # of the compute dtype


def scale(kind: Scale, ctx: ScaleContext) -> np.ndarray:
    o = np.abs(np.asarray(ctx.oracle[ctx.output])).astype(np.float64)  # complex: |o|
    if kind is Scale.ORACLE:
        return o
    if kind is Scale.IN_OUT:  # |x| only up to where the decomposition can still cancel
        x = np.abs(np.asarray(ctx.operands[0], dtype=np.float64))
        return np.maximum(o, np.minimum(x, IN_OUT_CAP[ctx.op]))
    if kind is Scale.OPERANDS:
        floats = [np.abs(np.asarray(x, dtype=np.float64)) for x in ctx.operands if np.asarray(x).dtype.kind in "fV"]
        return np.maximum.reduce([o, *floats]) if floats else o
    if kind is Scale.UNIT:
        return np.ones_like(o)
    if kind is Scale.ROW:
        axis = ctx.attrs["axis"]
        return np.max(o, axis=axis, keepdims=True, initial=0.0) if o.size else o
    if kind is Scale.TERMS:
        return terms_scale(ctx)
    return CUSTOM[ctx.op](ctx)


def terms_scale(ctx: ScaleContext) -> np.ndarray:
    """The graph evaluated in oracle mode on |inputs| (integer inputs unchanged; a complex
    input becomes |z| + 0i, so a complex sum of products is scaled by Σ|a||b|)."""
    arrays = [np.abs(a.astype(np.float64)).astype(a.dtype) if a.dtype.kind == "f" or _is_bf16(a)
              else np.abs(a).astype(a.dtype) if a.dtype.kind == "c" else a for a in ctx.arrays]
    return np.abs(evaluate(ctx.graph, arrays, oracle=True)[ctx.output]).astype(np.float64)


def _is_bf16(a: np.ndarray) -> bool:
    return a.dtype.name == "bfloat16"


def _f(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


def _group_stats(x: np.ndarray, axes: tuple[int, ...]):
    """(max |x|, mean, biased variance) over ``axes``, kept for broadcasting."""
    with np.errstate(all="ignore"):
        return (np.max(np.abs(x), axis=axes, keepdims=True, initial=0.0), np.mean(x, axis=axes, keepdims=True),
                np.var(x, axis=axes, keepdims=True))


def _var_scale(x: np.ndarray, axes, correction: int) -> np.ndarray:
    """Σ(|x| + max|x|)² / max(n - correction, 1) over ``axes`` (removed)."""
    n = int(np.prod([x.shape[a] for a in axes]))
    big = np.max(np.abs(x), axis=axes, keepdims=True, initial=0.0)
    return np.sum((np.abs(x) + big) ** 2, axis=axes) / max(n - correction, 1)


def _var(ctx):
    return _var_scale(_f(ctx.operands[0]), ctx.attrs["axes"], ctx.attrs["correction"])


def _std(ctx):
    s_var = _var(ctx)
    std = np.abs(_f(ctx.oracle[0]))
    with np.errstate(all="ignore"):
        return s_var / np.maximum(2 * np.nan_to_num(std, nan=0.0), np.sqrt(ctx.eps * s_var))


def _layer_norm(ctx):
    x, w, b = (_f(a) for a in ctx.operands)
    axes = tuple(range(x.ndim - ctx.attrs["normalized_ndim"], x.ndim))
    big, _, var = _group_stats(x, axes)
    return big / np.sqrt(var + ctx.attrs["eps"]) * np.abs(w) + np.abs(b)


def _rms_norm(ctx):
    x, w = (_f(a) for a in ctx.operands)
    axes = tuple(range(x.ndim - ctx.attrs["normalized_ndim"], x.ndim))
    big = np.max(np.abs(x), axis=axes, keepdims=True, initial=0.0)
    return big / np.sqrt(np.mean(x * x, axis=axes, keepdims=True) + ctx.attrs["eps"]) * np.abs(w)


def _channel(v: np.ndarray, rank: int) -> np.ndarray:
    """A per-channel [C] vector shaped to broadcast over x [N, C, *spatial]."""
    return v.reshape((1, -1) + (1,) * (rank - 2))


def _group_norm(ctx):
    x, w, b = (_f(a) for a in ctx.operands)
    grouped = x.reshape(x.shape[0], ctx.attrs["groups"], -1)
    big, _, var = _group_stats(grouped, (2,))
    core = np.broadcast_to(big / np.sqrt(var + ctx.attrs["eps"]), grouped.shape).reshape(x.shape)
    return core * np.abs(_channel(w, x.ndim)) + np.abs(_channel(b, x.ndim))


def _batch_norm(ctx):
    x, w, b, rm, rv = (_f(a) for a in ctx.operands)
    a = ctx.attrs
    axes = (0,) + tuple(range(2, x.ndim))
    training, mom = a["training"], a["momentum"]
    if ctx.output == 0:
        if training:
            big, _, var = _group_stats(x, axes)
            core = big / np.sqrt(var + a["eps"])
        else:
            core = (np.abs(x) + np.abs(_channel(rm, x.ndim))) / np.sqrt(_channel(rv, x.ndim) + a["eps"])
        return core * np.abs(_channel(w, x.ndim)) + np.abs(_channel(b, x.ndim))
    running = rm if ctx.output == 1 else rv
    if not training:
        return np.abs(running)
    stat = np.mean(np.abs(x), axis=axes) if ctx.output == 1 else _var_scale(x, axes, 1)
    return mom * stat + (1 - mom) * np.abs(running)


def _attention(ctx):
    q, k, v, mask = ctx.operands
    q, k, v = _f(q), _f(k), _f(v)
    scores = ctx.attrs["scale"] * np.abs(q) @ np.swapaxes(np.abs(k), -1, -2)
    if ctx.attrs["has_mask"] and mask.dtype.kind == "f":
        m = np.abs(_f(mask))
        scores = scores + np.where(np.isfinite(m), m, 0.0)
    row = np.max(scores, axis=-1, keepdims=True, initial=0.0)  # [..., L, 1]
    vmax = np.max(np.abs(v), axis=-2, keepdims=True, initial=0.0)  # [..., 1, Ev]
    return vmax * (1.0 + row)


def _cross_entropy(ctx):
    logits, target = ctx.operands
    x = _f(logits)
    c = 1 if x.ndim >= 2 else 0
    with np.errstate(all="ignore"):
        top = np.max(x, axis=c, keepdims=True)
        logp = x - top - np.log(np.sum(np.exp(x - top), axis=c, keepdims=True))
        row = 2.0 * np.max(np.abs(logp), axis=c)  # the smoothing term adds at most one more row maximum
    return _reduce_like_loss(row, target != ctx.attrs["ignore_index"], ctx.attrs["reduction"])


def _reduce_like_loss(per_element: np.ndarray, valid: np.ndarray, reduction: str) -> np.ndarray:
    if reduction == "none":
        return per_element
    total = np.sum(np.where(valid, per_element, 0.0))
    return total if reduction == "sum" else total / max(int(valid.sum()), 1)


def _mse_loss(ctx):
    x, y = (_f(a) for a in ctx.operands)
    with np.errstate(over="ignore"):
        sq = (np.abs(x) + np.abs(y)) ** 2
    return _reduce_like_loss(sq, np.ones(sq.shape, bool), ctx.attrs["reduction"])


def _transform_norm(ctx: ScaleContext) -> np.ndarray:
    """‖o‖₂ over the transformed (last ``ndims``) axes: the normwise scale of an FFT's error."""
    o = np.abs(np.asarray(ctx.oracle[ctx.output])).astype(np.float64)
    axes = tuple(range(o.ndim - ctx.attrs["ndims"], o.ndim))
    with np.errstate(all="ignore"):
        return np.sqrt(np.sum(o * o, axis=axes, keepdims=True))


def _stft(ctx: ScaleContext) -> np.ndarray:
    """√2·‖o‖₂ over each frame's frequencies (axis -2): the full spectrum's norm bounds
    the transform's and the window product's error, and a half spectrum holds ≥ half its energy."""
    o = np.abs(np.asarray(ctx.oracle[ctx.output])).astype(np.float64)
    with np.errstate(all="ignore"):
        return np.sqrt(2.0 * np.sum(o * o, axis=-2, keepdims=True))


def _istft(ctx: ScaleContext) -> np.ndarray:
    """Σ over the frames covering each sample of |window|·‖frame‖₂ (the frame's irfft in
    float64), divided by the envelope there: what bounds every error term of the overlap-add."""
    spec, window = (np.asarray(a) for a in ctx.operands)
    a, frames = ctx.attrs, spec.shape[-1]
    n_fft, half = a["n_fft"], a["n_fft"] // 2 + 1
    cols = np.swapaxes(spec, -1, -2)[..., :half].astype(np.complex128)
    with np.errstate(all="ignore"):
        z = np.fft.irfft(cols, n=n_fft, axis=-1, norm="ortho" if a["normalized"] else "backward")
        norms = np.sqrt(np.sum(z * z, axis=-1, keepdims=True))  # [..., frames, 1]
        left = (n_fft - window.shape[0]) // 2
        w = np.zeros(n_fft)
        w[left:left + window.shape[0]] = np.asarray(window, np.float64)
        full, start, end = istft_span(a, frames)
        index = frame_indices(full, n_fft, a["hop_length"], frames)
        terms = (np.abs(w) * norms).reshape(*spec.shape[:-2], -1)
        summed = np.zeros((*spec.shape[:-2], full))
        np.add.at(summed, (..., index), terms)
        envelope = np.zeros(full)
        np.add.at(envelope, index, np.tile(w * w, frames))
        stop = min(end, full)
        s = summed[..., start:stop] / envelope[start:stop]
    return np.concatenate([s, np.zeros((*s.shape[:-1], end - stop))], axis=-1)


CUSTOM: dict[str, Callable[[ScaleContext], np.ndarray]] = {
    **dict.fromkeys(FFT_OPS, _transform_norm),
    "stft": _stft,
    "istft": _istft,
    "logsumexp": lambda ctx: np.maximum(np.abs(_f(ctx.oracle[0])), 1.0),
    "var": _var,
    "std": _std,
    "layer_norm": _layer_norm,
    "rms_norm": _rms_norm,
    "group_norm": _group_norm,
    "batch_norm": _batch_norm,
    "scaled_dot_product_attention": _attention,
    "cross_entropy": _cross_entropy,
    "mse_loss": _mse_loss,
    "uniform": lambda ctx: np.array(max(abs(ctx.attrs["low"]), abs(ctx.attrs["high"]))),
    "normal": lambda ctx: np.array(_BOX_MULLER_RADIUS),
}
