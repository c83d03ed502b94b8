"""Complex arithmetic that rounds: mul, div, exp, log, sqrt, complex_abs and angle.

Every rule computes in float64 (a complex64 operand's parts are cast up, exactly) and
rounds each part once to the result's part dtype, as the reference does (complex128, then
rounded). The formulas, part by part:

- ``mul``: ``(ac - bd) + (ad + bc)i``, numpy's plain product (f32 parts multiply exactly in f64).
- ``div``: numpy's own Smith's algorithm, step for step (its zero divisor included: each
  part divided by +0.0), so that quotients match the reference bit for bit in float64.
- ``complex_abs``: ``sqrt(a² + b²)`` after scaling by a power of two (exact) when the
  larger part is beyond 2^±500, so nothing overflows or underflows; inf if a part is inf.
- ``log``: ``log|z|`` as ``log1p((m - 1)(m + 1) + n²) / 2`` for the larger part m in
  [0.5, 2] (accurate near |z| = 1, where log of a rounded |z| loses everything), else
  ``log`` of the scaled hypot plus the scale's log; the imaginary part is ``atan2(b, a)``.
- ``atan2``: onnxruntime has no float64 Atan. The float32 Atan of the reduced ratio
  ``r = min/max`` in [0, 1] seeds one Newton step in float64, ``θ + (r cos θ - sin θ) /
  (cos θ + r sin θ)`` (the seed's error, ~1e-7, leaves ~1e-22 after the step), then the
  quadrant: ``π/2 - θ`` where |y| > |x|, ``π - θ`` for x < 0 or -0.0, y's sign, and C's
  ±0 / ±inf corners.
- ``exp``: ``e^a (cos b + i sin b)``; ``e^(a/2)`` twice past a = 709 (e^a overflows, the
  product may not); an imaginary part b = ±0 stays ±0 (no inf·0).
- ``sqrt``: ``t = sqrt((|a| + |z|) / 2)``, then ``(t, b / 2t)`` for a >= 0 and
  ``(|b| / 2t, ±t)`` otherwise, on the scaled operand (a power of four: the root scales by two).

Operands with an infinite or NaN part are implementation-defined for exp/log/sqrt/div (the
IR masks them); log and sqrt still give C99's values where a part is infinite.

Example::

    >>> from parity.ir import GraphBuilder, c64
    >>> from .backend import OnnxBackend
    >>> import numpy as np
    >>> b = GraphBuilder(); z = b.input(c64[2])
    >>> run = OnnxBackend().compile(b.build([b.mul(z, z)]), "cpu")
    >>> run(np.array([1 + 2j, 3j], np.complex64))[0].tolist()
    [(-3+4j), (-9+0j)]
"""

from __future__ import annotations

import math

from ...ir.dtypes import DType
from .complex_numbers import Parts
from .context import OnnxNodeContext

_F64 = DType.float64
_SCALE_AT = 2.0 ** 500  # beyond it (or below its inverse) parts are scaled by 2^-600 (2^600) first


class _Wide:
    """float64 arithmetic on ONNX names (short names keep the formulas readable)."""

    def __init__(self, ctx: OnnxNodeContext):
        self.ctx = ctx
        self.part = ctx.out.dtype.real_dtype if ctx.out.dtype.is_complex else ctx.out.dtype  # the result's (part) dtype

    def c(self, value) -> str:
        return self.ctx.scalar(value, _F64)

    def __getattr__(self, op_type):  # w.Add(a, b) -> an ONNX Add node
        return lambda *xs, **attrs: self.ctx.op(op_type, *xs, **attrs)

    def where(self, cond, a, b):
        return self.ctx.where(cond, a, b, _F64)

    def up(self, z: Parts) -> Parts:
        dtype = self.ctx.in_types[0].dtype.real_dtype
        return z if dtype is _F64 else Parts(*(self.ctx.cast(p, _F64) for p in z))

    def down(self, x: str) -> str:
        return x if self.part is _F64 else self.ctx.cast(x, self.part)

    def signbit(self, v):
        """v < 0 or v is -0.0 (false for NaN)."""
        return self.Or(self.Less(v, self.c(0.0)), self.Less(self.Reciprocal(v), self.c(0.0)))

    def scaled(self, z: Parts) -> tuple[Parts, str, str]:
        """``z`` times an exact power of two s (2^-600 past 2^500, 2^600 below 2^-500) so that
        squares neither overflow nor underflow to nothing; returns (z·s, s, log2(1/s) as f64)."""
        m = self.Max(self.Abs(z.re), self.Abs(z.im))
        big, small = self.Greater(m, self.c(_SCALE_AT)), self.Less(m, self.c(1 / _SCALE_AT))
        s = self.where(big, self.c(2.0 ** -600), self.where(small, self.c(2.0 ** 600), self.c(1.0)))
        k = self.where(big, self.c(600.0), self.where(small, self.c(-600.0), self.c(0.0)))
        return Parts(self.Mul(z.re, s), self.Mul(z.im, s)), s, k

    def hypot(self, z: Parts) -> str:
        return self.Sqrt(self.Add(self.Mul(z.re, z.re), self.Mul(z.im, z.im)))

    def any_inf(self, z: Parts) -> str:
        return self.Or(self.IsInf(z.re), self.IsInf(z.im))

    def log1p(self, x):
        """Kahan's log1p: log(u) * x / (u - 1) for u = 1 + x (x where u rounds to 1)."""
        u = self.Add(self.c(1.0), x)
        d = self.Sub(u, self.c(1.0))
        same = self.Equal(d, self.c(0.0))
        ratio = self.Div(x, self.where(same, self.c(1.0), d))
        return self.where(same, x, self.Mul(self.Log(u), ratio))

    def atan2(self, y, x):
        ax, ay = self.Abs(x), self.Abs(y)
        r = self.Div(self.Min(ax, ay), self.Max(ax, ay))  # [0, 1]; NaN for 0/0, inf/inf and NaN parts
        seed = self.ctx.cast(self.Atan(self.ctx.cast(r, DType.float32)), _F64)
        cos, sin = self.Cos(seed), self.Sin(seed)
        step = self.Div(self.Sub(self.Mul(r, cos), sin), self.Add(cos, self.Mul(r, sin)))
        t = self.Add(seed, step)
        t = self.where(self.Greater(ay, ax), self.Sub(self.c(math.pi / 2), t), t)
        x_neg = self.signbit(x)
        t = self.where(x_neg, self.Sub(self.c(math.pi), t), t)
        # the corners where r is NaN: atan2(±0, +0) = ±0, (±0, -0) = ±π, (±inf, ±inf) = ±π/4, ±3π/4
        zero, inf = self.c(0.0), self.c(math.inf)
        both_zero = self.And(self.Equal(ax, zero), self.Equal(ay, zero))
        both_inf = self.And(self.Equal(ax, inf), self.Equal(ay, inf))
        on_axes = self.where(x_neg, self.c(math.pi), zero)
        diagonal = self.where(x_neg, self.c(3 * math.pi / 4), self.c(math.pi / 4))
        t = self.where(both_zero, on_axes, self.where(both_inf, diagonal, t))
        return self.where(self.signbit(y), self.Neg(t), t)


def _mul(ctx: OnnxNodeContext, x: Parts, y: Parts) -> Parts:
    w = _Wide(ctx)
    (a, b), (c, d) = w.up(x), w.up(y)
    return Parts(w.down(w.Sub(w.Mul(a, c), w.Mul(b, d))), w.down(w.Add(w.Mul(a, d), w.Mul(b, c))))


def _div(ctx: OnnxNodeContext, x: Parts, y: Parts) -> Parts:
    """numpy's complex division (loops.c.src), in float64."""
    w = _Wide(ctx)
    (a, b), (c, d) = w.up(x), w.up(y)
    ac, ad = w.Abs(c), w.Abs(d)
    wide = w.GreaterOrEqual(ac, ad)  # |c| >= |d| (false for NaN: the else branch, NaN anyway)
    one = w.c(1.0)
    # |c| >= |d|: rat = d / c, scl = 1 / (c + d·rat), ((a + b·rat)·scl, (b - a·rat)·scl)
    rat1 = w.Div(d, c)
    scl1 = w.Div(one, w.Add(c, w.Mul(d, rat1)))
    re1, im1 = w.Mul(w.Add(a, w.Mul(b, rat1)), scl1), w.Mul(w.Sub(b, w.Mul(a, rat1)), scl1)
    # else: rat = c / d, scl = 1 / (d + c·rat), ((a·rat + b)·scl, (b·rat - a)·scl)
    rat2 = w.Div(c, d)
    scl2 = w.Div(one, w.Add(d, w.Mul(c, rat2)))
    re2, im2 = w.Mul(w.Add(w.Mul(a, rat2), b), scl2), w.Mul(w.Sub(w.Mul(b, rat2), a), scl2)
    # a zero divisor: each part divided by |c| = +0.0
    zero = w.And(w.Equal(ac, w.c(0.0)), w.Equal(ad, w.c(0.0)))
    re0, im0 = w.Div(a, ac), w.Div(b, ac)
    re = w.where(zero, re0, w.where(wide, re1, re2))
    im = w.where(zero, im0, w.where(wide, im1, im2))
    return Parts(w.down(re), w.down(im))


def _complex_abs(ctx: OnnxNodeContext, z: Parts) -> str:
    w = _Wide(ctx)
    z = w.up(z)
    zs, s, _ = w.scaled(z)
    h = w.Div(w.hypot(zs), s)
    return w.down(w.where(w.any_inf(z), w.c(math.inf), h))  # |inf + NaN·i| = inf (C's hypot)


def _angle(ctx: OnnxNodeContext, z: Parts) -> str:
    w = _Wide(ctx)
    a, b = w.up(z)
    return w.down(w.atan2(b, a))


def _log(ctx: OnnxNodeContext, z: Parts) -> Parts:
    w = _Wide(ctx)
    z = w.up(z)
    ax, ay = w.Abs(z.re), w.Abs(z.im)
    m, n = w.Max(ax, ay), w.Min(ax, ay)
    one = w.c(1.0)
    near = w.And(w.GreaterOrEqual(m, w.c(0.5)), w.LessOrEqual(m, w.c(2.0)))
    # near |z| = 1: (m - 1)(m + 1) is exact-ish (m - 1 is exact for m in [0.5, 2])
    close = w.Mul(w.c(0.5), w.log1p(w.Add(w.Mul(w.Sub(m, one), w.Add(m, one)), w.Mul(n, n))))
    zs, _, k = w.scaled(z)
    far = w.Add(w.Log(w.hypot(zs)), w.Mul(k, w.c(math.log(2))))
    re = w.where(w.any_inf(z), w.c(math.inf), w.where(near, close, far))  # C99: log(NaN ± inf·i) = inf + NaN·i
    return Parts(w.down(re), w.down(w.atan2(z.im, z.re)))


def _exp(ctx: OnnxNodeContext, z: Parts) -> Parts:
    w = _Wide(ctx)
    a, b = w.up(z)
    cos, sin = w.Cos(b), w.Sin(b)
    big = w.Greater(a, w.c(709.0))
    half = w.Exp(w.Mul(a, w.c(0.5)))
    e = w.Exp(a)
    re = w.where(big, w.Mul(w.Mul(half, cos), half), w.Mul(e, cos))
    im = w.where(big, w.Mul(w.Mul(half, sin), half), w.Mul(e, sin))
    im = w.where(w.Equal(b, w.c(0.0)), b, im)  # exp(a ± 0i) = e^a ± 0i, e^a = inf included
    return Parts(w.down(re), w.down(im))


def _sqrt(ctx: OnnxNodeContext, z: Parts) -> Parts:
    w = _Wide(ctx)
    z = w.up(z)
    zs, s, _ = w.scaled(z)  # s is 4^k: sqrt(z) = sqrt(z·s) / 2^k
    root_s = w.Sqrt(s)
    a, b = zs
    t = w.Sqrt(w.Mul(w.Add(w.Abs(a), w.hypot(zs)), w.c(0.5)))
    q = w.Div(b, w.Mul(t, w.c(2.0)))  # b / 2t
    q = w.where(w.Equal(t, w.c(0.0)), b, q)  # sqrt(±0 ± 0i) = +0 ± 0i
    neg = w.Less(a, w.c(0.0))
    re = w.where(neg, w.Abs(q), t)
    im = w.where(neg, w.where(w.signbit(b), w.Neg(t), t), q)
    inf_im = w.IsInf(b)  # C99: sqrt(x ± inf·i) = inf ± inf·i for every x, NaN included
    re, im = w.where(inf_im, w.c(math.inf), re), w.where(inf_im, b, im)
    return Parts(w.down(w.Div(re, root_s)), w.down(w.Div(im, root_s)))


RULES = {"mul": _mul, "div": _div, "complex_abs": _complex_abs, "angle": _angle, "log": _log, "exp": _exp,
         "sqrt": _sqrt}
