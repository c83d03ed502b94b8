"""Special functions the IR has no op for, built from its ops where the result stays within
half an ULP (plus a thousandth) of the true value: ``erfc`` and ``cbrt`` of float16, bfloat16
and float32, computed in float64 and rounded once. float64 operands are refused: no wider
dtype is left to absorb the cancellation (erfc's 1 - erf) or the rounded exponent (cbrt's
pow(x, 1/3)).

Example::

    >>> import jax.numpy as jnp
    >>> from jax import lax
    >>> from parity.frontend.jax import capture
    >>> counts = capture(lax.erfc, jnp.ones(3)).op_counts()
    >>> counts["exp"], counts["convert"], "erf" in counts
    (1, 2, False)
"""

from __future__ import annotations

import math

from ....ir.dtypes import DType
from ....ir.graph import Value
from ..context import JaxContext, refuse

_NARROW = (DType.float16, DType.bfloat16, DType.float32)
# With E = exp(-x²) (exact x² in float64 for a narrow x), for x >= 0: erfc(x) = 1 - 2x/√π·E·S(2x²),
# S(a) = 1 + a/3·(1 + a/5·(1 + ...)) (positive terms: no cancellation inside S), below CF_FROM; at
# and above it, Laplace's continued fraction E/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))).
# Both evaluated backward from the terms below: against math.erfc on 4e5 points of [0, 11] their
# float64 relative error is at most 1.2e-13 (the series' 1 - erf cancellation at x = 2; the
# fraction's truncation 5e-14), 0.002 ULP of float32. erfc(-x) = 2 - erfc(x).
CF_FROM, SERIES_TERMS, CF_TERMS = 2.0, 30, 40


def _widened(ctx: JaxContext, x: Value, name: str) -> Value:
    dtype = x.type.dtype
    if dtype not in _NARROW:
        refuse(f"{name} of {dtype.short}: parity computes {name} of float16, bfloat16 and float32 in float64 "
               f"and rounds once, and no wider dtype is left for {dtype.short}; compute it in float32, or "
               "outside parity.jax.jit")
    return ctx.convert(x, DType.float64)


def erfc(ctx: JaxContext, x: Value):
    """The series below CF_FROM, the continued fraction at and above it, on |x|; no erf op (the
    onnx backend has none in float64)."""
    b, w = ctx.b, _widened(ctx, x, "erfc")
    shape = tuple(x.type.shape)

    def const(v):
        return ctx.full(v, DType.float64, shape)

    ax = b.abs(w)
    square = b.mul(ax, ax)
    e = b.exp(b.neg(square))
    a, s = b.add(square, square), const(1.0)
    for n in range(SERIES_TERMS, 0, -1):
        s = b.add(const(1.0), b.mul(b.div(a, const(2 * n + 1)), s))
    near = b.sub(const(1.0), b.mul(b.mul(const(2 / math.sqrt(math.pi)), ax), b.mul(e, s)))
    t = ax
    for k in range(CF_TERMS, 0, -1):
        t = b.add(ax, b.div(const(k / 2), t))
    far = b.div(e, b.mul(const(math.sqrt(math.pi)), t))
    positive = b.select(b.lt(ax, const(CF_FROM)), near, far)
    return ctx.convert(b.select(b.lt(w, const(0.0)), b.sub(const(2.0), positive), positive), x.type.dtype)


def cbrt(ctx: JaxContext, x: Value):
    """sign(x)·|x|^(1/3) in float64: the rounding of 1/3 moves the power by at most |ln|x||·2^-54
    (4e-15 relative over float32's range), far below the final rounding; ±0 stays itself."""
    b, w = ctx.b, _widened(ctx, x, "cbrt")
    shape = tuple(x.type.shape)
    zero = ctx.full(0.0, DType.float64, shape)
    root = b.pow(b.abs(w), ctx.full(1 / 3, DType.float64, shape))
    signed = b.select(b.lt(w, zero), b.neg(root), root)
    return ctx.convert(b.select(b.eq(w, zero), w, signed), x.type.dtype)


def _ir_special(name: str):
    """lgamma and digamma: the IR's ops of the same name (ir/ops/special.py: float16, bfloat16,
    float32, computed in float64 and rounded once); float64 operands refused, as erfc's."""
    def rule(ctx: JaxContext, x: Value):
        if x.type.dtype not in _NARROW:
            _widened(ctx, x, name)  # refuses, naming the dtype and the fix
        return ctx.b.op(name, x)

    return rule


TABLE = {"erfc": erfc, "cbrt": cbrt, "lgamma": _ir_special("lgamma"), "digamma": _ir_special("digamma")}
