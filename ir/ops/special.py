"""Special functions: ``lgamma`` and ``digamma``, composites computed in float64.

Both take float16, bfloat16 and float32 operands, compute in float64 from the IR's
elementwise primitives, and round once to the operand's dtype. float64 operands are not
accepted: no wider dtype is left to absorb the cancellations below (a float64 lgamma within
a few ULP needs a hand-tuned rational approximation per interval, which no backend's ops
give). The formulas, in float64 on the widened operand ``x``: each evaluates one core per element at a >= 1: a = x for x >= 1, x + 1 on (0, 1), 1 − x for
x <= 0 (the reflection), so a graph holds one copy of the series.

- **lgamma** (log|Γ(x)|): the core is the Taylor series of lgamma about 1 or about 2 for
  |a − 1|, |a − 2| <= 1/32 (its zeros: coefficients ζ(k)/k and (ζ(k) − 1)/k, so results near
  0 keep their relative accuracy), else a shifted up to z >= 8 (lgamma(a) = lgamma(z) −
  log(a(a+1)…(z−1))) and Stirling's series with 9 Bernoulli terms. On (0, 1),
  lgamma(x) = lgamma(x + 1) − log x; for x <= 0, log(π / |sin(π r)|) − lgamma(1 − x) with
  r = x − round(x) (exact), so the sine is of a small argument. Poles (x <= 0 an integer)
  and ±inf → +inf; NaN → NaN; lgamma(1) = lgamma(2) = +0.
- **digamma** (ψ = Γ'/Γ): the core shifts a up to z >= 8 (ψ(a) = ψ(z) − Σ 1/(a+i)) and sums
  the asymptotic series with 9 Bernoulli terms. About ψ's zero x₀ = 1.4616… that costs
  ~6e-16 of cancellation, and no float32 lies nearer x₀ than ~1e-8: measured within 0.5 ULP
  there with no series about x₀. On (0, 1), ψ(x) = ψ(x + 1) − 1/x; for x < 0,
  ψ(1 − x) − π / tan(π r). ψ(±0) = ∓inf (PyTorch's and SciPy's convention), negative
  integers and −inf → NaN, +inf → +inf.

Measured against ``math.lgamma`` and SciPy's ``psi`` (tests/ir/ops/test_special.py):
within 0.502 ULP of float32 (the one rounding, plus float64's error) over every tested float32
(a dense sweep of [−40, 40], the neighbours of every zero and pole, and magnitudes to 3e38).

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, evaluate, f32
    >>> b = GraphBuilder()
    >>> x = b.input(f32[3])
    >>> [round(v, 6) for v in evaluate(b.build([b.lgamma(x)]), [np.float32([1.0, 0.5, 10.0])])[0].tolist()]
    [0.0, 0.572365, 12.801827]
"""

from __future__ import annotations

import math
from fractions import Fraction

from ..dtypes import DType
from ..opdef import Group
from . import compose
from .rules import check_dtype

NARROW = (DType.float16, DType.bfloat16, DType.float32)
_F64 = DType.float64

EULER_GAMMA = 0.57721566490153286061
DIGAMMA_ZERO = 1.4616321449683623413  # the positive zero of ψ (tests and conformance cases probe around it)
SHIFT_TO = 8.0  # Stirling's and ψ's asymptotic series start at z >= SHIFT_TO (error ~1e-16 there)
TAYLOR_RADIUS = 1 / 32  # the series about 1 and 2 serve |x − 1|, |x − 2| <= this
_TAYLOR_TERMS = 14  # (1/32)^14 = 1e-21
# Bernoulli numbers B2 … B18 (exact rationals): at z >= 8 the first term left out, B20/(20 z^20),
# is 2e-17 (with B2 … B14 only, ψ's was 1.6e-15: 0.56 ULP of float32 next to ψ's zero)
_BERNOULLI = (Fraction(1, 6), Fraction(-1, 30), Fraction(1, 42), Fraction(-1, 30), Fraction(5, 66),
              Fraction(-691, 2730), Fraction(7, 6), Fraction(-3617, 510), Fraction(43867, 798))


def hurwitz_zeta(s: int, a: float, n: int = 40) -> float:
    """ζ(s, a) = Σ_{k≥0} (a + k)^-s for an integer s ≥ 2, by Euler–Maclaurin: the first
    ``n`` terms summed exactly (math.fsum), the tail from its integral and 9 Bernoulli
    corrections (their error at n = 40 is below 1e-30 of the sum)."""
    head = math.fsum((a + k) ** -s for k in range(n))
    m = a + n
    tail = m ** (1 - s) / (s - 1) + m ** -s / 2
    rising = float(s)  # s (s+1) … (s+2j-2), the derivative's factor
    for j, b2j in enumerate(_BERNOULLI, start=1):
        tail += float(b2j) / math.factorial(2 * j) * rising * m ** (-s - 2 * j + 1)
        rising *= (s + 2 * j - 1) * (s + 2 * j)
    return head + tail


def _taylor_coefficients() -> dict[str, tuple[float, ...]]:
    zeta = [hurwitz_zeta(k, 1.0) for k in range(2, _TAYLOR_TERMS + 2)]
    about_1 = (-EULER_GAMMA, *((-1) ** k * z / k for k, z in enumerate(zeta, start=2)))
    # ζ(k) − 1 as the sum from 2: subtracting 1 from ζ(k) would cancel ~13 digits by k = 40
    about_2 = (1 - EULER_GAMMA, *((-1) ** k * hurwitz_zeta(k, 2.0) / k for k in range(2, _TAYLOR_TERMS + 2)))
    return {"lgamma_1": about_1[:_TAYLOR_TERMS], "lgamma_2": about_2[:_TAYLOR_TERMS]}


# Coefficients of ε, ε², … (index 0 is ε's)
TAYLOR = _taylor_coefficients()


class _Constants:
    """Each float64 constant once per decomposition (a constant and its broadcast are two nodes:
    the series alone would repeat dozens)."""

    def __init__(self, b, like):
        self.b, self.like, self.made = b, like, {}

    def __call__(self, value: float):
        if value not in self.made:
            self.made[value] = compose.full_like(self.b, value, self.like)
        return self.made[value]


def _series(b, c, coefficients, e):
    """Σ coefficients[k] e^(k+1), Horner's scheme from the last term."""
    acc = c(coefficients[-1])
    for k in reversed(coefficients[:-1]):
        acc = b.add(c(k), b.mul(e, acc))
    return b.mul(e, acc)


def _shifted(b, c, a, step, start: float, combine):
    """(z, total): z = a + k with k the steps that bring a >= 1 to SHIFT_TO or above, and
    total = combine over those steps of step(a + i), from ``start`` (the product a(a+1)… for
    lgamma, the sum of 1/(a+i) for ψ)."""
    z, total = a, c(start)
    for _ in range(int(SHIFT_TO) - 1):
        below = b.lt(z, c(SHIFT_TO))
        total = b.select(below, combine(total, step(z)), total)
        z = b.select(below, b.add(z, c(1.0)), z)
    return z, total


def _asymptotic(b, c, z, coefficients):
    """Σ coefficients[j] z^(-2j), j from 0, by Horner in 1/z²."""
    inv = b.div(c(1.0), z)
    inv2 = b.mul(inv, inv)
    acc = c(coefficients[-1])
    for k in reversed(coefficients[:-1]):
        acc = b.add(c(k), b.mul(inv2, acc))
    return inv, inv2, acc


def _lgamma_core(b, c, a):
    """lgamma(a) for a >= 1: the series about 1 and 2 in their windows, else shift and Stirling:
    (z − 1/2) log z − z + log(2π)/2 + Σ B2j / (2j(2j−1) z^(2j−1))."""
    z, product = _shifted(b, c, a, lambda z: z, 1.0, b.mul)
    inv, _, acc = _asymptotic(b, c, z, [float(bj) / (2 * j * (2 * j - 1)) for j, bj in enumerate(_BERNOULLI, 1)])
    stirling = b.add(b.add(b.sub(b.mul(b.sub(z, c(0.5)), b.log(z)), z), c(0.5 * math.log(2 * math.pi))),
                     b.mul(inv, acc))
    far = b.sub(stirling, b.log(product))
    # one series serves both windows: its variable is a − 1 or a − 2, and its coefficients
    # are selected per element (each window's k-th coefficient, broadcast)
    near_2 = b.ge(a, c(1.5))
    e = b.sub(a, b.select(near_2, c(2.0), c(1.0)))
    acc = None
    for k1, k2 in reversed(list(zip(TAYLOR["lgamma_1"], TAYLOR["lgamma_2"]))):
        coefficient = b.select(near_2, c(k2), c(k1))
        acc = coefficient if acc is None else b.add(coefficient, b.mul(e, acc))
    return b.select(b.le(b.abs(e), c(TAYLOR_RADIUS)), b.mul(e, acc), far)


def _digamma_core(b, c, a):
    """ψ(a) for a >= 1: shift, then log z − 1/(2z) − Σ B2j / (2j z^(2j))."""
    z, reciprocals = _shifted(b, c, a, lambda z: b.div(c(1.0), z), 0.0, b.add)
    inv, inv2, acc = _asymptotic(b, c, z, [float(bj) / (2 * j) for j, bj in enumerate(_BERNOULLI, 1)])
    return b.sub(b.sub(b.sub(b.log(z), b.mul(c(0.5), inv)), b.mul(inv2, acc)), reciprocals)


def _argument(b, c, w):
    """(a, masks): the core's argument a >= 1 for each x, and the masks of the three ranges:
    x >= 1 (a = x), 0 < x < 1 (a = x + 1), x <= 0 (a = 1 − x, the reflection's)."""
    positive, small = b.ge(w, c(1.0)), b.gt(w, c(0.0))
    a = b.select(positive, w, b.select(small, b.add(w, c(1.0)), b.sub(c(1.0), w)))
    return b.select(b.is_nan(a), c(1.0), a), positive, small


def _widened(b, x, core):
    """(w, c, value of ``core`` at a, the masks, r): the operand in float64 and what both functions share."""
    w = b.convert(x, dtype=_F64)
    c = _Constants(b, w)
    a, positive, small = _argument(b, c, w)
    return w, c, core(b, c, a), positive, small, b.sub(w, b.round(w))


def _lgamma(b, attrs, x):
    dtype = x.dtype
    w, c, core, positive, small, r = _widened(b, x, _lgamma_core)
    # (0, 1): lgamma(x + 1) − log x; x <= 0: log(π / |sin(π r)|) − lgamma(1 − x), r = x − round(x)
    from_small = b.sub(core, b.log(b.max(w, c(1e-300))))
    sine = b.abs(b.sin(b.mul(c(math.pi), r)))
    reflected = b.sub(b.sub(c(math.log(math.pi)), b.log(sine)), core)
    result = b.select(positive, core, b.select(small, from_small, reflected))
    # lgamma(1) = lgamma(2) = +0 (the series about 1 gives −0 there)
    result = b.select(b.logical_or(b.eq(w, c(1.0)), b.eq(w, c(2.0))), c(0.0), result)
    infinite = b.logical_or(b.is_inf(w), b.logical_and(b.le(w, c(0.0)), b.eq(w, b.floor(w))))
    result = b.select(infinite, c(math.inf), result)
    result = b.select(b.is_nan(w), w, result)
    return b.convert(result, dtype=dtype)


def _digamma(b, attrs, x):
    dtype = x.dtype
    w, c, core, positive, small, r = _widened(b, x, _digamma_core)
    # (0, 1): ψ(x + 1) − 1/x; x < 0: ψ(1 − x) − π / tan(π r)
    from_small = b.sub(core, b.div(c(1.0), b.max(w, c(1e-300))))
    reflected = b.sub(core, b.div(c(math.pi), b.tan(b.mul(c(math.pi), r))))
    result = b.select(positive, core, b.select(small, from_small, reflected))
    # ψ(±0) = ∓inf: −1/x keeps the sign of the zero
    result = b.select(b.eq(w, c(0.0)), b.neg(b.div(c(1.0), w)), result)
    pole = b.logical_and(b.lt(w, c(0.0)), b.eq(w, b.floor(w)))  # −inf too
    result = b.select(pole, c(math.nan), result)
    result = b.select(b.eq(w, c(math.inf)), w, result)
    result = b.select(b.is_nan(w), w, result)
    return b.convert(result, dtype=dtype)


def _infer(name: str):
    def infer(types, attrs):
        check_dtype(name, types[0], NARROW)
        return (types[0],)

    return infer


def _special(*, name: str, decompose, doc: str):
    return compose.composite(name=name, operands=("x",), infer=_infer(name), decompose=decompose, dtypes=NARROW,
                             groups=(Group.ELEMENTWISE,), doc=doc)


OPS = (
    _special(name="lgamma", decompose=_lgamma,
             doc="log|Γ(x)|, computed in float64 and rounded once; poles and ±inf give +inf"),
    _special(name="digamma", decompose=_digamma,
             doc="ψ(x) = Γ'(x)/Γ(x), computed in float64 and rounded once; ψ(±0) = ∓inf, poles NaN"),
)
