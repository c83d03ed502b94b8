"""Contraction rules: ``dot_general`` and ``convolution`` at full precision, with the IR's NaN semantics.

Example::

    >>> import numpy as np
    >>> from parity.ir import f32
    >>> from .context import XlaNodeContext
    >>> attrs = {"lhs_contracting_dims": (1,), "rhs_contracting_dims": (0,), "lhs_batch_dims": (), "rhs_batch_dims": ()}
    >>> ctx = XlaNodeContext(attrs, (f32[1, 2], f32[2, 1]), (f32[1, 1],))
    >>> np.asarray(RULES["dot_general"](ctx, np.ones((1, 2), np.float32), np.ones((2, 1), np.float32))).tolist()
    [[2.0]]
"""

from __future__ import annotations

import math

import numpy as np
from jax import lax

from ...ir.dtypes import DType
from .context import Rule, full, np_dtype


def _dot_general(ctx, lhs, rhs):
    a = ctx.attrs
    dims = ((a["lhs_contracting_dims"], a["rhs_contracting_dims"]), (a["lhs_batch_dims"], a["rhs_batch_dims"]))
    return lax.dot_general(lhs, rhs, dims, precision=lax.Precision.HIGHEST,
                           preferred_element_type=np_dtype(ctx.out.dtype))


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
        return full(0, ctx.out)
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
    padding = a["padding"]
    zeros = [(max(lo, 0), max(hi, 0), d - 1) for (lo, hi), d in zip(padding, a["lhs_dilation"])]
    explicit = (ctx.out.dtype.is_float and ctx.zero is not None and any(any(z) for z in zeros)
                and not any(d for _, _, d in zeros) and _macs(ctx) <= EXPLICIT_PAD_MACS)
    if explicit:
        # The IR multiplies padding zeros; XLA skips them. Padded beforehand by a zero XLA only
        # sees at run time (its simplifier folds a pad by a constant 0 into the window), the
        # convolution multiplies them (0 * inf = NaN, as the IR says) and needs no NaN gate
        # (below), whose reduction and conditional cost more than these small convolutions
        # (conformance/jax_zoo's CNN and ConvNeXt: docs/jax.md, "Speed").
        x = lax.pad(x, _run_time_zero(ctx.zero, x.dtype), [(0, 0, 0)] * 2 + [(lo, hi, 0) for lo, hi, _ in zeros])
        padding = [(min(lo, 0), min(hi, 0)) for lo, hi in padding]
    out = lax.conv_general_dilated(
        x, w, a["window_strides"], padding, a["lhs_dilation"], a["rhs_dilation"],
        dimension_numbers=numbers, feature_group_count=groups, precision=lax.Precision.HIGHEST,
        preferred_element_type=np_dtype(ctx.out.dtype))
    if explicit or not ctx.out.dtype.is_float or not any(any(z) for z in zeros):
        return out
    # XLA skips the zeros of padding and lhs dilation; the IR multiplies them (as torch's
    # padded conv does), so a non-finite kernel tap over one makes the output NaN (fuzz
    # regression xla-convolution-f32: 0 instead of 0 * inf). Dilating explicitly made a
    # stride-2 transposed conv several times slower (measured), padding explicitly a large
    # one (above), and an export has no run-time zero to pad by; instead one single-channel
    # conv of the zeros' mask with the kernel's non-finite taps finds the outputs to set to NaN.
    # Behind a conditional on "any kernel tap non-finite": with finite kernels (training,
    # inference) the mask's kernels never run (conformance/jax_zoo's CNN, same process: forward
    # 1.27x -> 1.11x jax.jit's time, gradients 1.51x -> 1.37x).
    f32 = np.float32

    def poisoned(out, rhs):
        holes = lax.pad(np.zeros((1, 1, *ctx.in_types[0].shape[2:]), f32), np.array(1, f32),
                        [(0, 0, 0)] * 2 + [(lo, hi, d) for lo, hi, d in zeros])
        bad = lax.convert_element_type(lax.bitwise_not(lax.is_finite(rhs)), f32)
        bad = lax.expand_dims(lax.reduce_max(bad, (1,)), (1,))
        crop = [(min(lo, 0), min(hi, 0)) for lo, hi in a["padding"]]
        hit = lax.conv_general_dilated(holes, bad, a["window_strides"], crop, None, a["rhs_dilation"],
                                       dimension_numbers=numbers, precision=lax.Precision.HIGHEST)
        return lax.select(lax.broadcast_in_dim(lax.gt(hit, np.array(0, f32)), out.shape, tuple(range(out.ndim))),
                          lax.full_like(out, np.nan), out)

    any_bad = lax.reduce_or(lax.bitwise_not(lax.is_finite(rhs)), tuple(range(rhs.ndim)))
    return lax.cond(any_bad, poisoned, lambda out, rhs: out, out, rhs)


# Above this many multiply-adds the explicit pad costs more than the gate: XLA:CPU runs a
# dense convolution without window padding on a slower path (8x32x28x28 by 64x32x3x3, 14.5M:
# 1.3x the gated time; 2x8x8x8 by 16x8x3x3, 147K: the same; measured 2026-12-07).
EXPLICIT_PAD_MACS = 1 << 20


def _macs(ctx) -> int:
    """Multiply-adds of a convolution: each output element sums input channels per group x window."""
    rhs = ctx.in_types[1]
    return ctx.out.numel * math.prod(rhs.shape[1:])


def _run_time_zero(zero, dtype):
    """+0.0 of a float ``dtype`` from the executable's run-time int32 ``zero``: a value XLA
    cannot fold, so a pad by it stays in the graph."""
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[np.dtype(dtype).itemsize]
    return lax.bitcast_convert_type(lax.convert_element_type(zero, bits), dtype)


RULES: dict[str, Rule] = {"dot_general": _dot_general, "convolution": _convolution}
