"""IR → ``jax.lax``: one lowering rule per op, in one table.

A graph becomes a Python function of ``jax.lax`` calls (:func:`graph_function`) that
``jax.jit`` traces and XLA compiles. Each rule takes a :class:`LowerCtx` (the node's
attributes and its operand/result types with symbolic dims bound) and the operands as
JAX values. Elementwise ops whose IR semantics equal a ``lax`` function come from small
name → callable tables; the rest have a short rule each. Composites without a rule are
expanded by their decomposition while tracing.

Rules are written for the IR's semantics, not lax's defaults: float max/min reductions
propagate NaN (XLA CPU's vectorized reduce drops it), dynamic slices never wrap negative
starts, sums start from -0.0 (the identity of IEEE addition), conversions that XLA
rounds twice go through round-to-odd, and contractions ask for full precision.

Example::

    >>> import numpy as np, jax
    >>> from parity.ir import GraphBuilder, f32
    >>> b = GraphBuilder(); x = b.input(f32[3])
    >>> fn = graph_function(b.build([b.exp(x)]))
    >>> [round(float(v), 4) for v in fn(np.zeros(3, np.float32))[0]]
    [1.0, 1.0, 1.0]
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from jax import lax

from ...ir.dtypes import DType
from ...ir.errors import UnsupportedOpError
from ...ir.graph import Graph, Node
from ...ir.opdef import Kind
from ...ir.types import Symbol, TensorType
from .products import opaque, products_summed
from .sharding import constraint_rule


@dataclass(frozen=True)
class LowerCtx:
    """What a rule sees besides its operands: attributes and types, symbols bound."""

    attrs: Mapping[str, Any]
    in_types: tuple[TensorType, ...]
    out_types: tuple[TensorType, ...]
    zero: Any = None  # the executable's run-time zero (see products.opaque), None when not compiling for a run

    @property
    def out(self) -> TensorType:
        return self.out_types[0]


Rule = Callable[..., Any]


def _np(dtype: DType) -> np.dtype:
    return dtype.numpy


def _full(value, t: TensorType):
    return lax.full(t.shape, np.array(value, _np(t.dtype)))


# -- elementwise: lax functions whose semantics are the IR's ---------------------------

_UNARY = {
    "neg": lax.neg, "abs": lax.abs, "sign": lax.sign,
    "exp": lax.exp, "expm1": lax.expm1, "log": lax.log,
    "sqrt": lax.sqrt, "rsqrt": lax.rsqrt, "sin": lax.sin, "cos": lax.cos, "tan": lax.tan,
    "acos": lax.acos, "atan": lax.atan,
    "asinh": lax.asinh, "acosh": lax.acosh,
    "floor": lax.floor, "ceil": lax.ceil, "logistic": lax.logistic,
    "is_finite": lax.is_finite, "logical_not": lax.bitwise_not, "bitwise_not": lax.bitwise_not,
}

# Integer div/rem truncate like C (lax.div/rem); max/min propagate NaN elementwise (with
# fast min/max off, see backend.COMPILER_OPTIONS); shifts by >= the width give 0 / sign.
_BINARY = {
    "add": lax.add, "sub": lax.sub, "mul": lax.mul, "rem": lax.rem,
    "max": lax.max, "min": lax.min,
    "eq": lax.eq, "ne": lax.ne, "lt": lax.lt, "le": lax.le, "gt": lax.gt, "ge": lax.ge,
    "logical_and": lax.bitwise_and, "logical_or": lax.bitwise_or, "logical_xor": lax.bitwise_xor,
    "bitwise_and": lax.bitwise_and, "bitwise_or": lax.bitwise_or, "bitwise_xor": lax.bitwise_xor,
    "shift_left": lax.shift_left, "shift_right_logical": lax.shift_right_logical,
}


# Computed in a wider type and rounded once (docs/ir.md: "floats are computed in float64
# and rounded once"). XLA expands many f16/bf16 functions in the narrow type itself
# (measured: acosh bf16 1.6 ulp, exp2 f16 13.7 ulp); f32 sinh/cosh lose 24 ulp near
# overflow, expm1 4.7 ulp, atan 5.3 ulp near 2**-10 and exp2 64 ulp (exp(x ln 2)): all
# fixed by one more width.
_HALF = {DType.float16: np.float32, DType.bfloat16: np.float32}
_WIDEN_ALL = {**_HALF, DType.float32: np.float64}
_PRODUCTS = {DType.float16: np.float64, DType.bfloat16: np.float64, DType.float32: np.float64}
_TRANSCENDENTAL = ("exp exp2 expm1 log log1p rsqrt sin cos tan asin acos atan sinh cosh tanh asinh acosh "
                   "atanh erf logistic pow atan2").split()
WIDEN: dict[str, Mapping[DType, Any]] = {
    **{name: _HALF for name in _TRANSCENDENTAL + ["log2"]},
    **{name: _WIDEN_ALL for name in ("sinh", "cosh", "expm1", "exp2", "atan")},
    # Products in the input type overflow (or reach inf · 0) in XLA's tree order where the
    # exact product is finite: f16/bf16/f32 full-range products measured inf and NaN. All
    # three go to float64: float32 has no more range than bfloat16, so a bf16 running
    # product computed in f32 underflowed to 0 and stayed there (cumprod bf16 full_range
    # returned 0.0 where the product was 0.407, 1.77e9, 8.7e28).
    **{name: _PRODUCTS for name in ("reduce_prod", "cumprod")},
    # Sums of float16/bfloat16 accumulate in float32 (the spec sums in f64 and rounds once):
    # lax.reduce/cumsum/scatter-add add in the input type (reduce_sum f16 of 7 terms was
    # 4 ulp off, bf16 under cancellation 0.0117 for 0.0039, cumsum f16 96 for 101.4).
    **{name: _HALF for name in ("reduce_sum", "cumsum", "scatter")},
}


def _elementwise(fn: Callable) -> Rule:
    def rule(ctx, *args):
        return fn(*args)

    return rule


def _widened(name: str, rule: Rule) -> Rule:
    """``rule`` computed in the wider dtype WIDEN[name] gives, then rounded once."""
    wider = WIDEN[name]

    def widened(ctx, *args):
        dtype = ctx.in_types[0].dtype
        if dtype not in wider:
            return rule(ctx, *args)
        wide = [lax.convert_element_type(a, wider[dtype]) if a.dtype == _np(dtype) else a for a in args]  # not indices
        return lax.convert_element_type(rule(ctx, *wide), _np(dtype))

    return widened


def _exp2(ctx, x):
    # XLA's exp2 is exp(x * ln 2), whose rounded product costs |x| ulps (671 in f64). Split
    # x = n + f with n integral: 2**f is accurate for |f| <= 0.5, and 2**n is exact, applied
    # in two halves so that neither overflows before the product does.
    n = lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)
    n = lax.clamp(lax.full_like(x, -2200), n, lax.full_like(x, 2200))
    frac = lax.exp(lax.mul(lax.sub(x, n), lax.full_like(x, math.log(2))))
    half = lax.floor(lax.mul(n, lax.full_like(x, 0.5)))
    scaled = lax.mul(lax.mul(frac, _pow2(half)), _pow2(lax.sub(n, half)))
    return lax.select(lax.eq(lax.abs(x), lax.full_like(x, np.inf)), lax.exp(x), scaled)


def _pow2(k):
    """2**k for integral float k in [-1100, 1100], built from exponent bits (0 below normal)."""
    kind = {np.dtype(np.float64): (np.int64, 52, 1023), np.dtype(np.float32): (np.int32, 23, 127)}
    ints, shift, bias = kind[np.dtype(k.dtype)]
    biased = lax.clamp(np.array(0, ints), lax.add(lax.convert_element_type(k, ints), np.array(bias, ints)),
                       np.array(2 * bias, ints))
    return lax.bitcast_convert_type(lax.shift_left(biased, np.array(shift, ints)), k.dtype)


def _is_f64(x) -> bool:
    return np.dtype(x.dtype) == np.float64


def _log1p(ctx, x):
    # XLA's f64 log1p loses 128 ulp near -0.41. Goldberg: log(u) * x / (u - 1) with u = 1 + x
    # cancels u's rounding error (u == 1: x itself, keeping -0.0; u = inf: inf). The barrier
    # stops XLA's simplifier from folding (1 + x) - 1 to x, which would undo the correction.
    if not _is_f64(x):
        return lax.log1p(x)
    one = lax.full_like(x, 1)
    u = lax.optimization_barrier(lax.add(one, x))
    goldberg = lax.mul(lax.log(u), lax.div(x, lax.sub(u, one)))
    return lax.select(lax.eq(u, one), x, lax.select(lax.eq(u, lax.full_like(x, np.inf)), u, goldberg))


def _atanh(ctx, x):
    # fdlibm's form on |x| over the accurate log1p (XLA's f64 atanh inherits its log1p's 128 ulp).
    if not _is_f64(x):
        return lax.atanh(x)
    a = lax.abs(x)
    two_a, one_minus = lax.add(a, a), lax.sub(lax.full_like(x, 1), a)
    small = lax.add(two_a, lax.div(lax.mul(two_a, a), one_minus))  # |x| < 0.5: 2a + 2a²/(1 - a)
    arg = lax.select(lax.lt(a, lax.full_like(x, 0.5)), small, lax.div(two_a, one_minus))
    y = lax.mul(lax.full_like(x, 0.5), _log1p(ctx, arg))
    return lax.select(lax.ne(x, x), x, _copysign(y, x))


def _copysign(magnitude, sign):
    bits = np.uint64 if _is_f64(magnitude) else np.uint32
    high = np.array(1 << (np.dtype(bits).itemsize * 8 - 1), bits)
    m = lax.bitwise_and(lax.bitcast_convert_type(magnitude, bits), lax.bitwise_not(high))
    return lax.bitcast_convert_type(lax.bitwise_or(m, lax.bitwise_and(lax.bitcast_convert_type(sign, bits), high)),
                                    magnitude.dtype)


# sinh(x) = x + x·z·P(z), z = x²: P's coefficients 1/3!, 1/5!, ..., 1/21!, highest first.
_SINH_TAYLOR = tuple(1 / math.factorial(k) for k in range(21, 2, -2))


def _hyperbolic(name: str) -> Rule:
    """f64 sinh/cosh/tanh from exp and expm1 of |x| (fdlibm's forms), sign restored.

    XLA's f64 sinh/cosh use exp(|x| + log 0.5), whose rounded sum costs ~|x| ulps (15 at 18,
    495 at 635), and its tanh reaches 6 ulp near 19. Above 20, e^-|x| is below half an ulp
    and sinh = cosh = (e/2)·e with e = exp(|x|/2): exact halving, and no overflow before the
    result's own. sinh: (t + t/(t + 1))/2 with t = expm1(|x|) on [1, 20], its Taylor series below
    (XLA's reaches 5 ulp near 0.24); tanh: 1 - 2/(e^2|x| + 1) from 0.55 on (no cancellation),
    XLA's own below (within 4 ulp there).
    """
    native = {"sinh": lax.sinh, "cosh": lax.cosh, "tanh": lax.tanh}[name]

    def rule(ctx, x):
        if not _is_f64(x):
            return native(x)
        a = lax.abs(x)
        c = lambda v: lax.full_like(x, v)  # noqa: E731 - a constant of x's type
        if name == "tanh":
            big = lax.sub(c(1), lax.div(c(2), lax.add(lax.exp(lax.add(a, a)), c(1))))
            y = lax.select(lax.ge(a, c(0.55)), big, lax.abs(native(x)))
        else:
            e = lax.exp(lax.mul(a, c(0.5)))
            large = lax.mul(lax.mul(e, c(0.5)), e)
            if name == "sinh":
                t = lax.expm1(a)
                mid = lax.mul(c(0.5), lax.add(t, lax.div(t, lax.add(t, c(1)))))
            else:
                ea = lax.exp(a)
                mid = lax.mul(c(0.5), lax.add(ea, lax.div(c(1), ea)))
            y = lax.select(lax.gt(a, c(20)), large, mid)
            if name == "sinh":  # below 1: Taylor to x**21 (the rest is < 2**-65 relative)
                z = lax.mul(a, a)
                series = c(_SINH_TAYLOR[0])
                for coef in _SINH_TAYLOR[1:]:
                    series = lax.add(lax.mul(series, z), c(coef))
                y = lax.select(lax.lt(a, c(1)), lax.add(a, lax.mul(lax.mul(a, z), series)), y)
        return y if name == "cosh" else lax.select(lax.ne(x, x), x, _copysign(y, x))

    return rule


def _flushed(x):
    """Subnormals as signed zeros, spelled out: what the CPU's DAZ does to arithmetic inputs,
    for the XLA expansions that read the exponent bits instead (and so miss it)."""
    tiny = np.finfo(x.dtype).tiny
    return lax.select(lax.lt(lax.abs(x), lax.full_like(x, tiny)), lax.mul(x, lax.full_like(x, 0)), x)


def _pow(ctx, x, y):
    # XLA's pow splits x by its exponent bits: a subnormal base gives garbage (pow(2**-126 - 2**-149,
    # 0.5) = 2.6e-23, not 1.08e-19, nor 0 as DAZ would say), and pow(0, -2**-149) = inf where
    # DAZ reads the exponent as 0 (result 1). Flushed first, both give what DAZ does.
    return lax.pow(_flushed(x), _flushed(y))


def _atan2(ctx, y, x):
    # Two subnormals gave NaN (f32) and y subnormal over x subnormal π/2 (f64): flushed, both
    # are atan2 of zeros, as everywhere else under DAZ.
    return lax.atan2(_flushed(y), _flushed(x))


def _asin(ctx, x):
    # XLA's asin flushes a tiny intermediate: asin(2**-126) came out 0. Below √ε, asin(x) = x
    # to within x²/6 < ε/6.
    small = lax.lt(lax.abs(x), lax.full_like(x, math.sqrt(np.finfo(x.dtype).eps)))
    return lax.select(small, x, lax.asin(x))


def _erf(ctx, x):
    # XLA's f32 erf reaches 5.6 ulp near ±3.72 (its polynomial's tail); 1 - erfc(|x|) above 1
    # has no cancellation (erfc < 0.16) and stays within 3.5 ulp overall, at no extra cost
    # (f64 erf would be 4x slower).
    if np.dtype(x.dtype) != np.float32:
        return lax.erf(x)
    a = lax.abs(x)
    tail = lax.sub(lax.full_like(x, 1), lax.erfc(a))
    tail = lax.select(lax.lt(x, lax.full_like(x, 0)), lax.neg(tail), tail)
    return lax.select(lax.gt(a, lax.full_like(x, 1)), tail, lax.erf(x))


def _div(ctx, x, y):
    # XLA's simplifier turns a / broadcast(b) into a * broadcast(1 / b), whatever the options
    # (1.1 ulp in f16, ~25% of f32/f64 quotients off by one ulp, measured); the barrier hides
    # the divisor's producer so the quotient stays correctly rounded. The dividend goes through
    # the barrier too: else (1 / c) / y is reassociated into 1 / (c * y), skipping the rounding
    # of the first quotient (fuzz regression xla-div-f32-9c4b15ff: logistic then div, 1.003 ULP).
    if ctx.out.dtype.is_float:
        x, y = lax.optimization_barrier((x, y))
    return lax.div(x, y)


def _shift_right_arithmetic(ctx, x, y):
    # Unsigned values have no sign to fill with: the IR's arithmetic shift is the logical one.
    fn = lax.shift_right_logical if ctx.in_types[0].dtype.is_unsigned else lax.shift_right_arithmetic
    return fn(x, y)


def _round(ctx, x):
    return lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)


def _trunc(ctx, x):
    # ceil for negatives keeps -0.0 (trunc(-0.5) = -0.0); NaN passes through either branch.
    return lax.select(lax.lt(x, lax.full_like(x, 0)), lax.ceil(x), lax.floor(x))


def _log2(ctx, x):
    # log(x) / ln 2 (as jnp.log2): measured within the contract in f32/f64; f16/bf16 widen.
    return lax.div(lax.log(x), lax.full_like(x, math.log(2)))


def _reciprocal(ctx, x):
    # Through _div's barrier: else XLA folds 1 / (a / b) into b / a and 1 / exp(u) into
    # exp(-u), skipping the rounding of x (fuzz regression xla-reciprocal-f32: 1.09 ULP).
    return _div(ctx, lax.full_like(x, 1), x)


def _is_nan(ctx, x):
    return lax.ne(x, x)


def _is_inf(ctx, x):
    return lax.eq(lax.abs(x), lax.full_like(x, np.inf))


def _clamp(ctx, lo, x, hi):
    return lax.min(lax.max(x, lo), hi)  # IR: min(max(x, lo), hi), NaN from any operand


def _select(ctx, pred, on_true, on_false):
    return lax.select(pred, on_true, on_false)


# -- conversion ------------------------------------------------------------------------

_F32_BITS = np.dtype(np.uint32)


def _to_odd_f32(x):
    """float64 → float32 rounded to odd, so that a second rounding to f16/bf16 is correct."""
    near = lax.convert_element_type(x, np.float32)
    back = lax.convert_element_type(near, np.float64)
    inexact = lax.bitwise_and(lax.ne(back, x), lax.eq(x, x))
    bits = lax.bitcast_convert_type(near, _F32_BITS)
    overshot = lax.bitwise_and(inexact, lax.gt(lax.abs(back), lax.abs(x)))
    bits = lax.select(overshot, lax.sub(bits, lax.full_like(bits, 1)), bits)  # one step toward zero
    bits = lax.select(inexact, lax.bitwise_or(bits, lax.full_like(bits, 1)), bits)
    return lax.bitcast_convert_type(bits, np.float32)


def _int64_to_odd_f64(x):
    """int64 → float64 rounded to odd: exact halves summed, TwoSum gives the sign of the error."""
    mask = lax.full_like(x, 0xFFFFFFFF)
    high = lax.convert_element_type(lax.bitwise_and(x, lax.bitwise_not(mask)), np.float64)
    low = lax.convert_element_type(lax.bitwise_and(x, mask), np.float64)
    total = lax.add(high, low)
    low_part = lax.sub(total, high)
    error = lax.add(lax.sub(high, lax.sub(total, low_part)), lax.sub(low, low_part))
    bits = lax.bitcast_convert_type(total, np.uint64)
    inexact = lax.ne(error, lax.full_like(error, 0))
    overshot = lax.bitwise_and(inexact, lax.ne(lax.sign(error), lax.sign(total)))
    bits = lax.select(overshot, lax.sub(bits, lax.full_like(bits, 1)), bits)
    bits = lax.select(inexact, lax.bitwise_or(bits, lax.full_like(bits, 1)), bits)
    return lax.bitcast_convert_type(bits, np.float64)


_NARROW = (DType.float16, DType.bfloat16)


def _convert(ctx, x):
    src, dst = ctx.in_types[0].dtype, ctx.attrs["dtype"]
    if dst.is_bool:
        return lax.ne(x, lax.full_like(x, 0))  # NaN != 0: true
    if dst in _NARROW and (src is DType.float64 or src in (DType.int32, DType.int64, DType.uint32)):
        # XLA rounds these through float32 (twice); round to odd first so the result is
        # rounded once, as the IR says.
        wide = _int64_to_odd_f64(x) if src is DType.int64 else lax.convert_element_type(x, np.float64)
        x = _to_odd_f32(wide)
    elif dst is DType.float32 and src is DType.int64:
        pass  # direct and correctly rounded
    return lax.convert_element_type(x, _np(dst))


def _bitcast(ctx, x):
    return lax.bitcast_convert_type(x, _np(ctx.attrs["dtype"]))


# -- creation and shape --------------------------------------------------------------------


def _constant(ctx):
    return lax.convert_element_type(np.asarray(ctx.attrs["value"]), ctx.attrs["value"].dtype)


def _iota(ctx):
    return lax.broadcasted_iota(_np(ctx.out.dtype), ctx.out.shape, ctx.attrs["dimension"])


def _reshape(ctx, x):
    return lax.reshape(x, ctx.out.shape)


def _broadcast_in_dim(ctx, x):
    return lax.broadcast_in_dim(x, ctx.out.shape, ctx.attrs["broadcast_dimensions"])


def _transpose(ctx, x):
    return lax.transpose(x, ctx.attrs["permutation"])


def _slice(ctx, x):
    a = ctx.attrs
    return lax.slice(x, a["start_indices"], a["limit_indices"], a["strides"])


def _concatenate(ctx, *xs):
    return lax.concatenate(xs, ctx.attrs["dimension"])


def _pad(ctx, x, value):
    a = ctx.attrs
    return lax.pad(x, value, list(zip(a["edge_padding_low"], a["edge_padding_high"], a["interior_padding"])))


def _reverse(ctx, x):
    return lax.rev(x, ctx.attrs["dimensions"])


# -- indexing ----------------------------------------------------------------------------------


def _clamped_indices(indices, dtype: DType, size: int):
    """Indices as i32/i64 clamped to [0, size - 1] (what the reference does out of range)."""
    wide = np.int64 if dtype in (DType.int64, DType.uint32) or size > 2**31 - 1 else np.int32
    idx = lax.convert_element_type(indices, wide)
    return lax.clamp(np.array(0, wide), idx, np.array(size - 1, wide))


def _along_axis(ctx, x, indices):
    """(x cut to indices' extent off the axis, batching dims, clamped [..., 1] indices).

    Take-along-axis is a batched gather/scatter: every dim but the axis is a batching
    dim, whose sizes must agree, so x is cut to indices' extent there (the IR allows
    indices to be smaller; nothing beyond them is read or written).
    """
    axis = ctx.attrs["axis"]
    x_t, i_t = ctx.in_types[:2]
    limits = [n if d == axis else m for d, (n, m) in enumerate(zip(x_t.shape, i_t.shape))]
    part = lax.slice(x, [0] * x_t.rank, limits)
    batch = tuple(d for d in range(x_t.rank) if d != axis)
    return part, batch, _clamped_indices(indices, i_t.dtype, x_t.shape[axis])[..., None]


def _gather(ctx, x, indices):
    axis = ctx.attrs["axis"]
    if ctx.in_types[0].shape[axis] == 0 or ctx.out.numel == 0:
        return _full(0, ctx.out)
    part, batch, idx = _along_axis(ctx, x, indices)
    dnums = lax.GatherDimensionNumbers(
        offset_dims=(), collapsed_slice_dims=(axis,), start_index_map=(axis,),
        operand_batching_dims=batch, start_indices_batching_dims=batch)
    return lax.gather(part, idx, dnums, slice_sizes=[1] * part.ndim, mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS)


def _scatter(ctx, x, indices, updates):
    axis = ctx.attrs["axis"]
    if ctx.in_types[0].shape[axis] == 0 or ctx.in_types[1].numel == 0:
        return x
    part, batch, idx = _along_axis(ctx, x, indices)
    dnums = lax.ScatterDimensionNumbers(
        update_window_dims=(), inserted_window_dims=(axis,), scatter_dims_to_operand_dims=(axis,),
        operand_batching_dims=batch, scatter_indices_batching_dims=batch)
    scatter = lax.scatter_add if ctx.attrs["reduce"] == "add" else lax.scatter
    part = scatter(part, idx, updates, dnums, mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS)
    return lax.dynamic_update_slice(x, part, [0] * x.ndim, allow_negative_indices=False)


def _starts(ctx, starts, first: int):
    # u32 starts above INT32_MAX must still clamp high, so widen them before XLA sees them.
    return [lax.convert_element_type(s, np.int64) if t.dtype is DType.uint32 else s
            for s, t in zip(starts, ctx.in_types[first:])]


def _dynamic_slice(ctx, x, *starts):
    return lax.dynamic_slice(x, _starts(ctx, starts, 1), ctx.out.shape, allow_negative_indices=False)


def _dynamic_update_slice(ctx, x, update, *starts):
    return lax.dynamic_update_slice(x, update, _starts(ctx, starts, 2), allow_negative_indices=False)


# -- reductions, scans, sorting --------------------------------------------------------------


def _nan_max(a, b):
    return lax.select(lax.ne(a, a), a, lax.select(lax.ne(b, b), b, lax.max(a, b)))


def _nan_min(a, b):
    return lax.select(lax.ne(a, a), a, lax.select(lax.ne(b, b), b, lax.min(a, b)))


def _extreme(dtype: DType, high: bool):
    if dtype.is_float:
        return np.array(np.inf if high else -np.inf, _np(dtype))
    info = dtype.iinfo
    return np.array(info.max if high else info.min, _np(dtype))


# name -> (combiner for floats, combiner for ints/bools, init(dtype)). XLA CPU's reduce
# with a plain max drops NaN on long rows, so float max/min spell the NaN check out.
_REDUCERS = {
    "reduce_sum": (lax.add, lax.add, lambda d: np.array(-0.0 if d.is_float else 0, _np(d))),
    "reduce_prod": (lax.mul, lax.mul, lambda d: np.array(1, _np(d))),
    "reduce_max": (_nan_max, lax.max, lambda d: _extreme(d, high=False)),
    "reduce_min": (_nan_min, lax.min, lambda d: _extreme(d, high=True)),
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
        return fn(x, ctx.attrs["axis"], _np(ctx.attrs["index_dtype"]))

    return rule


def _shift_invariant(name: str) -> Rule:
    """softmax/log_softmax: the IR's decomposition, with the row maximum taken by a plain max.

    The maximum only shifts the row. A row holding a NaN is NaN everywhere whatever the
    shift (x - m is NaN there, so the row's sum is NaN, and every output divides by it or
    subtracts its log); a row without NaN has the same maximum either way. So XLA's
    NaN-dropping max gives bit-identical results here, and unlike the NaN-checking combiner
    it fuses with the exp and the sum: 8192×1024 softmax + layer norm, 30.3 → 24.0 ms
    (jax.jit: 23.5 ms).
    """
    from ...ir.builder import GraphBuilder
    from ...ir.ops import OP_TABLE

    def rule(ctx, x):
        sub = GraphBuilder(name)
        (result,) = [OP_TABLE[name].decompose(sub, ctx.attrs, sub.input(ctx.in_types[0]))]
        return run_graph(sub.build([result]), [x], {"reduce_max": _plain_max}, ctx.zero)[0]

    return rule


def _plain_max(ctx, x):
    return lax.reduce(x, _extreme(ctx.in_types[0].dtype, high=False), lax.max, ctx.attrs["axes"])


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


# -- contractions and windows ------------------------------------------------------------------


def _dot_general(ctx, lhs, rhs):
    a = ctx.attrs
    dims = ((a["lhs_contracting_dims"], a["rhs_contracting_dims"]), (a["lhs_batch_dims"], a["rhs_batch_dims"]))
    return lax.dot_general(lhs, rhs, dims, precision=lax.Precision.HIGHEST,
                           preferred_element_type=_np(ctx.out.dtype))


def _apart_groups(lhs, rhs):
    """A depthwise operand pair with a zero channel beside each group's one: the same
    convolution (every added product is 0 · 0), but two input channels per group."""
    zero = np.array(0, lhs.dtype)
    lhs = lax.pad(lhs, zero, [(0, 0, 0), (0, 1, 1), *[(0, 0, 0)] * (lhs.ndim - 2)])
    rhs = lax.pad(rhs, zero, [(0, 0, 0), (0, 1, 0), *[(0, 0, 0)] * (rhs.ndim - 2)])
    return lhs, rhs


def _convolution(ctx, lhs, rhs):
    a = ctx.attrs
    if ctx.out.numel == 0:  # XLA rejects windows that do not fit; the IR gives empty dims
        return _full(0, ctx.out)
    spec = tuple(range(lhs.ndim))
    numbers = lax.ConvDimensionNumbers(spec, spec, spec)

    groups = a["feature_group_count"]
    x, w = lhs, rhs
    if groups > 1 and rhs.shape[1] == 1 and ctx.out.dtype is DType.float64:
        # XLA:CPU runs a float64 depthwise conv (one input channel per group) as a dense conv
        # whose kernel is zero outside each group, so a NaN or inf input reaches every group
        # (0 * NaN; fuzz regression xla-convolution-f64-2976eceb). With two input channels per
        # group it keeps groups apart, as it does for float16/bfloat16/float32 at any width
        # (tests/backends/xla/test_grouped_conv.py measures each). A runtime check with a
        # group-by-group lax.map fallback was exact too, but each such conv cost ~0.6 s of
        # compile (a while loop and a conditional), 34 of them in MobileNetV2's backward.
        x, w = _apart_groups(lhs, rhs)
    out = lax.conv_general_dilated(
        x, w, a["window_strides"], a["padding"], a["lhs_dilation"], a["rhs_dilation"],
        dimension_numbers=numbers, feature_group_count=groups, precision=lax.Precision.HIGHEST,
        preferred_element_type=_np(ctx.out.dtype))
    zeros = [(max(lo, 0), max(hi, 0), d - 1) for (lo, hi), d in zip(a["padding"], a["lhs_dilation"])]
    if not ctx.out.dtype.is_float or not any(any(z) for z in zeros):
        return out
    # XLA skips the zeros of padding and lhs dilation; the IR multiplies them (as torch's
    # padded conv does), so a non-finite kernel tap over one makes the output NaN (fuzz
    # regression xla-convolution-f32: 0 instead of 0 * inf). Padding explicitly made a
    # stride-2 transposed conv several times slower (measured); instead one single-channel
    # conv of the zeros' mask with the kernel's non-finite taps finds the outputs to set to NaN.
    f32 = np.float32
    holes = lax.pad(np.zeros((1, 1, *ctx.in_types[0].shape[2:]), f32), np.array(1, f32),
                    [(0, 0, 0)] * 2 + [(lo, hi, d) for lo, hi, d in zeros])
    bad = lax.convert_element_type(lax.bitwise_not(lax.is_finite(rhs)), f32)
    bad = lax.expand_dims(lax.reduce_max(bad, (1,)), (1,))
    crop = [(min(lo, 0), min(hi, 0)) for lo, hi in a["padding"]]
    hit = lax.conv_general_dilated(holes, bad, a["window_strides"], crop, None, a["rhs_dilation"],
                                   dimension_numbers=numbers, precision=lax.Precision.HIGHEST)
    return lax.select(lax.broadcast_in_dim(lax.gt(hit, np.array(0, f32)), out.shape, tuple(range(out.ndim))),
                      lax.full_like(out, np.nan), out)


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
        return _full(0, ctx.out)
    is_max = a["kind"] == "max"
    # Pad explicitly with the reference's values (-inf / +0.0), then reduce from the true
    # identity (-inf / -0.0) so the sign of zero sums matches too.
    fill = _extreme(dtype, high=False) if is_max else np.array(0, _np(dtype))
    x = lax.pad(x, fill, [(lo, hi, 0) for lo, hi in a["padding"]])
    if is_max and dtype.is_float and math.prod(a["window_dimensions"]) <= _UNROLLED_WINDOW:
        return functools.reduce(lax.max, _window_taps(x, a, ctx.out.shape))
    init = fill if is_max else _REDUCERS["reduce_sum"][2](dtype)
    combine = (_nan_max if dtype.is_float else lax.max) if is_max else lax.add
    wide = None if is_max else _HALF.get(dtype)  # f16/bf16 window sums add in f32, as reduce_sum
    if wide is not None:
        x, init = lax.convert_element_type(x, wide), np.array(init, wide)
    out = lax.reduce_window(x, init, combine, a["window_dimensions"], a["window_strides"],
                            [(0, 0)] * x.ndim, window_dilation=a["window_dilations"])
    return out if wide is None else lax.convert_element_type(out, _np(dtype))


# -- the table -------------------------------------------------------------------------------------

_RULES: dict[str, Rule] = {
    **{name: _elementwise(fn) for name, fn in {**_UNARY, **_BINARY}.items()},
    "round": _round, "trunc": _trunc, "exp2": _exp2, "log2": _log2, "log1p": _log1p, "atanh": _atanh,
    "sinh": _hyperbolic("sinh"), "cosh": _hyperbolic("cosh"), "tanh": _hyperbolic("tanh"), "div": _div,
    "pow": _pow, "atan2": _atan2, "asin": _asin, "erf": _erf, "reciprocal": _reciprocal,
    "is_nan": _is_nan, "is_inf": _is_inf, "shift_right_arithmetic": _shift_right_arithmetic,
    "select": _select, "clamp": _clamp, "convert": _convert, "bitcast_convert": _bitcast,
    "constant": _constant, "iota": _iota,
    "reshape": _reshape, "broadcast_in_dim": _broadcast_in_dim, "transpose": _transpose,
    "slice": _slice, "concatenate": _concatenate, "pad": _pad, "reverse": _reverse,
    "gather": _gather, "scatter": _scatter,
    "dynamic_slice": _dynamic_slice, "dynamic_update_slice": _dynamic_update_slice,
    **{name: _reducer(name) for name in _REDUCERS},
    "argmax": _arg("argmax"), "argmin": _arg("argmin"),
    **{name: _scan(name) for name in _SCANS},
    "sort": _sort, "top_k": _top_k,
    "dot_general": _dot_general, "convolution": _convolution, "reduce_window": _reduce_window,
    "softmax": _shift_invariant("softmax"), "log_softmax": _shift_invariant("log_softmax"),
    "sharding_constraint": constraint_rule,  # a composite claimed natively: the partitioner reads it
}
LOWERINGS: dict[str, Rule] = {name: _widened(name, rule) if name in WIDEN else rule for name, rule in _RULES.items()}


# -- graphs → functions ------------------------------------------------------------------------------


def _resolve(t: TensorType, bindings: Mapping[str, int]) -> TensorType:
    if t.is_static:
        return t
    return t.with_shape(bindings.get(d.name, d) if isinstance(d, Symbol) else d for d in t.shape)


def _resolve_attr(value, bindings: Mapping[str, int]):
    if isinstance(value, Symbol):
        return bindings[value.name]
    if isinstance(value, tuple):
        return tuple(_resolve_attr(v, bindings) for v in value)
    return value


def _bind(t: TensorType, shape: Sequence[int], bindings: dict[str, int]) -> None:
    for dim, size in zip(t.shape, shape):
        if isinstance(dim, Symbol):
            bindings.setdefault(dim.name, size)


def lower_node(node_op: str, attrs: Mapping[str, Any], in_types, out_types, args, bindings, loc=None,
               overrides: Mapping[str, Rule] | None = None, zero: Any = None):
    """Emit one op on traced operands; composites without a rule expand in place.
    ``overrides`` replaces rules by op name (a composite's rule may relax one of its parts)."""
    from ...ir.ops import OP_TABLE

    for t, a in zip(in_types, args):
        _bind(t, a.shape, bindings)
    in_types = tuple(_resolve(t, bindings) for t in in_types)
    out_types = tuple(_resolve(t, bindings) for t in out_types)
    rule = (overrides or {}).get(node_op) or LOWERINGS.get(node_op)
    if rule is not None:
        attrs = {k: _resolve_attr(v, bindings) for k, v in attrs.items()}
        result = rule(LowerCtx(attrs, in_types, out_types, zero), *args)
        return list(result) if isinstance(result, tuple) else [result]
    opdef = OP_TABLE.get(node_op)
    if opdef is None or opdef.kind is Kind.PRIMITIVE:
        where = f" at {loc}" if loc else ""
        raise UnsupportedOpError(
            f"the xla backend has no lowering for {node_op!r}{where}: it is a primitive added to the op "
            f"table after the backend; add a rule to backends/xla/lowering.py LOWERINGS or run with "
            f"backend='reference'")
    from ...ir.builder import GraphBuilder

    sub = GraphBuilder(node_op)
    params = [sub.input(t) for t in in_types]
    results = opdef.decompose(sub, attrs, *params)
    results = results if isinstance(results, tuple) else (results,)
    return run_graph(sub.build(list(results)), args, overrides, zero)


def run_graph(graph: Graph, args: Sequence[Any], overrides: Mapping[str, Rule] | None = None,
              zero: Any = None) -> list[Any]:
    """Trace ``graph`` on JAX values ``args``; return its outputs as JAX values.

    ``zero`` (an int32 scalar the executable receives at run time, always 0) keeps XLA
    from fusing products into sums: see :func:`.products.opaque`."""
    env: dict = dict(zip(graph.inputs, args))
    bindings: dict[str, int] = {}
    for value, array in zip(graph.inputs, args):
        _bind(value.type, array.shape, bindings)
    summed = products_summed(graph) if zero is not None else set()
    for node in graph.nodes:
        outs = lower_node(node.op, node.attrs, [v.type for v in node.inputs], [v.type for v in node.outputs],
                          [env[v] for v in node.inputs], bindings, node.loc, overrides, zero)
        if node in summed:
            outs = [opaque(o, zero) for o in outs]
        env.update(zip(node.outputs, outs))
    return [env[v] for v in graph.outputs]


def graph_function(graph: Graph, *, run_time_zero: bool = False, keep_products: bool = True) -> Callable[..., list[Any]]:
    """The graph as a Python function of ``lax`` calls, ready for ``jax.jit``.

    ``run_time_zero``: the function takes one more argument, an int32 scalar that must be 0
    at run time (:data:`RUN_TIME_ZERO`); with ``keep_products`` it keeps products out of
    fused sums (:func:`.products.opaque`), else it goes unused (jit prunes it).
    """
    if run_time_zero:
        def fn(*args):
            return run_graph(graph, args[:-1], zero=args[-1] if keep_products else None)
    else:
        def fn(*args):
            return run_graph(graph, args)

    fn.__name__ = graph.name or "graph"
    return fn


def unlowered_nodes(graph: Graph) -> list[Node]:
    """Primitive nodes with no rule (the backend refuses such graphs up front)."""
    from ...ir.ops import OP_TABLE

    return [n for n in graph.nodes if n.op not in LOWERINGS and OP_TABLE[n.op].kind is Kind.PRIMITIVE]
