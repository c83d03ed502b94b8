"""Where JAX's own CPU results differ from the IR's spec, measured: the deviations of the
``jax/cpu`` column, judged as a backend's are (conformance/verdicts.py: a deviation that
explains nothing is stale, one without a number in ULPs explains nothing).

JAX on CPU is XLA:CPU, the runtime the xla backend compiles to, so the column declares the
xla backend's summation blocks (``Backend.summation``, probed per host) rather than its own.

Example::

    >>> sorted(d.dtype.short for d in DEVIATIONS if d.flush_to_zero)
    ['bf16', 'c64', 'f32', 'f64']
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...backends.base import Deviation
from ...ir.dtypes import DType

_FTZ = ("XLA:CPU, which jax.jit runs, computes with FTZ/DAZ set: subnormal operands read as ±0 and subnormal "
        "results are flushed (measured: sub, exp, reduce_window_max, cond, dot_general on their subnormal cases)")

_NARROW_SUMS = ("XLA:CPU accumulates a lax reduction of f16/bf16 in that dtype, each step rounded (the spec sums wider "
                "and rounds once; jnp.sum and jnp.prod widen to f32 first, lax.reduce_sum and friends do not)")
_FLUSHED_SUMS = "partial sums or products below the smallest normal are flushed to zero inside the accumulation"


_EXP2 = ("XLA:CPU computes exp2(x) as exp(x·ln 2): the rounding of x·ln 2 grows with |x| (not even exp2 of an "
         "integer is exact)")


def _ulps(op: str, dtype: DType, max_error: str, reason: str) -> Deviation:
    return Deviation(op, reason, max_error, dtype=dtype)


F16, BF16, F32, F64 = DType.float16, DType.bfloat16, DType.float32, DType.float64
_F = (BF16, F32, F64)
DEVIATIONS = (
    Deviation("*", _FTZ, "flush-to-zero", dtype=F32, flush_to_zero=True),
    Deviation("*", _FTZ, "flush-to-zero", dtype=BF16, flush_to_zero=True),
    Deviation("*", _FTZ, "flush-to-zero", dtype=F64, flush_to_zero=True),
    Deviation("*", _FTZ + "; a complex64's parts are f32s, flushed alike (measured: add, mul, sqrt, abs, eq on "
              "their c64 subnormal cases)", "flush-to-zero", dtype=DType.complex64, flush_to_zero=True),
    # transcendentals beyond the class bound, measured on the frontend's cases (2026-12-06, jax 0.10.2)
    _ulps("jax:exp2", F16, "4.2 ulp (measured 4.12)", "XLA:CPU's f16 exp2 is not rounded once from a wider result"),
    _ulps("jax:exp2", BF16, "52 ulp (measured 51.0 once subnormals are flushed; 34.5 on the specials)", _EXP2),
    _ulps("jax:exp2", F32, "21 ulp (measured 20.42; exp2(100) = 1.2676533e30, not 2**100)", _EXP2),
    _ulps("jax:exp2", F64, "36 ulp (measured 36.0)", _EXP2),
    _ulps("jax:expm1", F16, "1.4 ulp (measured 1.33)", "XLA:CPU's f16 expm1 is not rounded once from a wider result"),
    _ulps("jax:asin", F16, "1.2 ulp (measured 1.17)", "XLA:CPU's f16 asin is not rounded once from a wider result"),
    _ulps("jax:logistic", F16, "23 ulp (measured 22.47)", "XLA:CPU's f16 logistic gives 0 where the result is "
                                                         "below f16's smallest normal (1.34e-6 → 0)"),
    _ulps("jax:logistic", BF16, "1.2 ulp (measured 1.18)", "XLA:CPU's bf16 logistic is not rounded once"),
    _ulps("jax:cosh", F32, "14 ulp (measured 13.57)", "XLA:CPU's cosh near overflow (x ≈ 55.6: 1.39e24)"),
    _ulps("jax:cosh", F64, "10 ulp (measured 10.0)", "XLA:CPU's cosh near 1e43"),
    _ulps("jax:sinh", F64, "10 ulp (measured 10.0)", "XLA:CPU's sinh near 1e43"),
    _ulps("jax:atanh", F64, "9 ulp (measured 9.0)", "XLA:CPU's f64 atanh on ordinary arguments (-0.395)"),
    _ulps("jax:erf_inv", F32, "14 ulp (measured 13.73 on uniform draws in (-1, 1))",
          "XLA's float32 erf_inv, which the rule builds op for op (its results equal jax.jit's within 2 ulp), "
          "computes w = -log1p(-x*x): near |x| = 1, 1 - x*x cancels and the rounding of x*x is amplified, so "
          "the float32 steps stray from their float64 evaluation"),
    _ulps("jax:erf", F32, "5.7 ulp (measured 5.61)", "XLA:CPU's f32 erf polynomial near ±3.72 (as the xla "
                                                    "backend's, docs/conformance.md)"),
    _ulps("jax:erfc", F32, "54 ulp (measured 53.59 once subnormal results are flushed; 11.76 on normal draws)",
          "XLA's float32 erfc computes exp(-x*x) in float32 for |x| > 1: the rounding of x² is amplified by x² "
          "(the rule computes in float64, frontend/jax/rules/special.py)"),
    # lgamma, digamma (2026-12-08, jax 0.10.2; the spec is ir/ops/special.py, within 0.502 ulp of the true values)
    _ulps("jax:lgamma", F16, "1.2 ulp (measured 1.14)", "XLA:CPU's f16 lgamma is not rounded once from a wider result"),
    _ulps("jax:lgamma", F32, "5000 ulp (measured 4990: lgamma(2.0037594) = 1.5945e-3, spec 1.5940e-3)",
          "XLA:CPU's f32 lgamma has an absolute error of ~5e-7 near its zeros 1 and 2 (a Lanczos sum in float32), "
          "many ULPs of the small results there"),
    _ulps("jax:digamma", F16, "2 ulp (measured 1.93)", "XLA:CPU's f16 digamma is not rounded once from a wider result"),
    _ulps("jax:digamma", F32, "3500 ulp (measured 2503 on the sweep; 3474 at 1.462406: 7.4881e-4, spec 7.4861e-4)",
          "XLA:CPU's f32 digamma has an absolute error of ~2e-7 near its zero 1.4616 (float32 steps), many ULPs "
          "of the small results there"),
    # f16/bf16 accumulations in the narrow dtype
    _ulps("jax:reduce_sum", F16, "1 ulp (measured 1.0)", _NARROW_SUMS),
    _ulps("jax:reduce_sum", BF16, "90 ulp (measured 89.5)", _NARROW_SUMS + "; " + _FLUSHED_SUMS),
    _ulps("jax:cumsum", F16, "1.2 ulp (measured 1.17)", _NARROW_SUMS),
    _ulps("jax:cumsum", BF16, "183 ulp (measured 183.0)", _NARROW_SUMS + "; " + _FLUSHED_SUMS),
    _ulps("jax:reduce_prod", F16, "3.5 ulp (measured 3.48)", _NARROW_SUMS),
    _ulps("jax:reduce_prod", BF16, "2.6 ulp (measured 2.54)", _NARROW_SUMS),
    _ulps("jax:cumprod", F16, "2.1 ulp (measured 2.07)", _NARROW_SUMS),
    _ulps("jax:cumprod", BF16, "104 ulp (measured 104.0)", _NARROW_SUMS + "; " + _FLUSHED_SUMS),
    _ulps("jax:reduce_window_sum", BF16, "1 ulp (measured 0.97)", _NARROW_SUMS),
)


@dataclass
class JaxColumn:
    """What the matrix needs of the ``jax/cpu`` column: its name, deviations and summation."""

    name: str = "jax"
    deviations: tuple = DEVIATIONS
    summation: tuple = field(default_factory=tuple)


def jax_column() -> JaxColumn:
    """The column, with the xla backend's summation when it is installed (else the contract's)."""
    from ...backends.registry import BackendNotFound, get_backend

    try:
        summation = tuple(get_backend("xla").summation)
    except (BackendNotFound, ImportError):
        summation = ()
    return JaxColumn(summation=summation)


# -- conventions: JAX answers with another value class than the spec (NaN, ±inf, 0 for a normal number) -------


@dataclass(frozen=True)
class Convention:
    """Elements where JAX's CPU result is not the spec's and no ULP figure can say by how much:
    ``where(arrays)`` marks them for ``primitive`` in ``dtypes``. They are left out of the
    comparison, and the case fails as stale when JAX meets the spec on every one of them."""

    primitive: str
    dtypes: tuple[DType, ...]
    where: object  # (arrays) -> bool array over the output
    reason: str

    def masked(self, mask):
        """The case's own mask with these elements left out as well."""
        def combined(arrays):
            own = mask(arrays) if mask is not None else [None]
            keep = ~np.asarray(self.where(arrays))
            return [keep if own[0] is None else (np.asarray(own[0]) & keep), *own[1:]]

        return combined

    def differs(self, arrays, oracle, want) -> bool | None:
        """Does JAX still differ from the spec on one of the elements left out (None: none left out)?"""
        hit = np.asarray(self.where(arrays))
        if not hit.any():
            return None
        got = np.asarray(want[0])
        with np.errstate(all="ignore"):
            spec = np.asarray(oracle[0]).astype(got.dtype)  # the spec rounded to the dtype
        same = np.ones(got.shape, bool)
        for g, e in _parts(got, spec):  # a complex number is the same when both parts are
            g, e = g.astype(np.float64), e.astype(np.float64)
            same &= (g == e) | (np.isnan(g) & np.isnan(e))
        return bool((~same & hit).any())


def _parts(got: np.ndarray, spec: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    if got.dtype.kind == "c":
        return [(got.real, spec.real), (got.imag, spec.imag)]
    return [(got, spec)]


def _at_or_below_smallest_normal(*operands: int, factor: float = 1.0):
    """Elements with an operand in (0, factor · smallest normal] in magnitude (the subnormals and
    the smallest normals)."""
    def where(arrays):
        present = [i for i in operands if i < len(arrays)]  # a literal operand is in the jaxpr, not here
        hit = np.zeros(np.broadcast_shapes(*(np.shape(arrays[i]) for i in present)), bool)
        for i in present:
            a = np.asarray(arrays[i])
            tiny = float(DType.from_numpy(a.dtype).finfo.tiny)
            v = np.abs(a.astype(np.float64))
            hit |= (v > 0) & (v <= factor * tiny)
        return hit

    return where


def _subnormal_quotient(arrays):
    if len(arrays) < 2:
        return np.zeros(np.shape(arrays[0]), bool)
    y, x = (np.abs(np.asarray(a, np.float64)) for a in arrays[:2])
    tiny = float(DType.from_numpy(np.asarray(arrays[0]).dtype).finfo.tiny)
    with np.errstate(all="ignore"):
        return (y > 0) & np.isfinite(x) & (y / x < 2 * tiny)


def _both_infinite(arrays):
    if len(arrays) < 2:  # y a literal (2.5): finite
        return np.zeros(np.shape(arrays[0]), bool)
    return np.isinf(np.asarray(arrays[0], np.float64)) & np.isinf(np.asarray(arrays[1], np.float64))


def _negative_zero_imaginary(arrays):
    """Complex operands whose imaginary part is -0 or a negative subnormal (read as -0 under DAZ)."""
    z = np.asarray(arrays[0])
    tiny = float(DType.from_numpy(z.dtype).real_dtype.finfo.tiny)
    return np.signbit(z.imag) & (np.abs(z.imag.astype(np.float64)) < tiny)


def _infinite_and_nan_parts(arrays):
    z = np.asarray(arrays[0])
    return (np.isinf(z.real) & np.isnan(z.imag)) | (np.isnan(z.real) & np.isinf(z.imag))


def _near_one_or_two(arrays):
    x = np.asarray(arrays[0], np.float64)
    return (np.abs(x - 1) <= 2.0 ** -10) | (np.abs(x - 2) <= 2.0 ** -10)


def _zero_or_subnormal(arrays):
    x = np.abs(np.asarray(arrays[0], np.float64))
    return x < float(DType.from_numpy(np.asarray(arrays[0]).dtype).finfo.tiny)


C64 = (DType.complex64,)
CONVENTIONS = (
    Convention("atan2", _F, _both_infinite,
               "atan2(±inf, ±inf) is NaN on XLA:CPU; the spec (C99) gives ±π/4 or ±3π/4"),
    Convention("atan2", _F, _at_or_below_smallest_normal(0, 1),
               "atan2 of operands at or below the smallest normal: NaN for two subnormals (both read as 0: "
               "0/0), 0 for a subnormal over the smallest normal (measured: atan2(1e-45, 1.1754944e-38) = 0, "
               "spec 1.19e-7)"),
    Convention("atan2", _F, _subnormal_quotient,
               "atan2(y, x) with |y/x| below twice the smallest normal is 0 (atan2 ≈ y/x, flushed: "
               "expected 9.2e-39, got 0)"),
    Convention("pow", _F, _at_or_below_smallest_normal(0),
               "pow of a base at or below the smallest normal: pow(1e-45, -0.5) = 3.78e22 (spec 2.67e22), "
               "pow(1.1754942e-38, -1) = inf (spec 8.5e37), in f32; pow(2.2e-308, -1) = inf in f64"),
    Convention("asin", _F, _at_or_below_smallest_normal(0, factor=2.0),
               "asin below twice the smallest normal is 0 (asin(1.1754944e-38) = 0, asin(-2.3e-38) = -0 in f32; "
               "likewise in bf16, f64: its x/2 step is subnormal and flushed)"),
    Convention("sinh", (DType.float64,), _at_or_below_smallest_normal(0),
               "sinh of the smallest normal f64 (2.2e-308) is 0"),
    Convention("atanh", (DType.float64,), _at_or_below_smallest_normal(0),
               "atanh of the smallest normal f64 (2.2e-308) is 0"),
    Convention("erf", (DType.float32,), _at_or_below_smallest_normal(0),
               "erf of the smallest normal f32 (1.18e-38) is 0 (spec 1.33e-38)"),
    Convention("nextafter", (BF16, F32, F64), _at_or_below_smallest_normal(0, 1),
               "a step from a subnormal or from the smallest normal towards zero is flushed to 0 on XLA:CPU "
               "(nextafter(1e-40, 0) = 0 and nextafter(1.18e-38, 0) = 0 in f32; the spec, IEEE's step, gives "
               "the neighbouring subnormal), and a subnormal y reads as 0 there; other steps, and float16's, are IEEE's"),
    Convention("lgamma", (BF16, F32), _at_or_below_smallest_normal(0),
               "lgamma of a subnormal operand is +inf on XLA:CPU (read as 0: a pole; lgamma(1e-45) = 103.28)"),
    Convention("lgamma", (F16, BF16, F32), _near_one_or_two,
               "lgamma within 2^-10 of 1 or 2, where it is nearly 0: XLA:CPU's absolute error (~5e-7: lgamma(1) = "
               "4.77e-7, lgamma(1.0000001) = 0, spec 0 and -6.88e-8) is no number of ULPs of the spec"),
    Convention("digamma", (F16, BF16, F32), _zero_or_subnormal,
               "digamma(±0) and of a subnormal operand is NaN on XLA:CPU; the spec (torch's, SciPy's) gives ∓inf "
               "(-1/x overflows)"),
    Convention("cbrt", (BF16, F32), _at_or_below_smallest_normal(0),
               "cbrt of a subnormal operand is neither its cube root nor 0 on XLA:CPU (cbrt(-1.12e-38) = "
               "-5.6e-16, spec -2.24e-13)"),
    Convention("sqrt", C64, _negative_zero_imaginary,
               "complex sqrt on the branch cut ignores the sign of a zero imaginary part: sqrt(-1 - 0j) = +1j and "
               "sqrt(-2.5 - 1e-45j) = +1.58j on XLA:CPU; the spec (C99 csqrt, conj-symmetric) gives -1j and -1.58j"),
    Convention("abs", C64, _infinite_and_nan_parts,
               "|inf + nan·j| and |nan + inf·j| are NaN on XLA:CPU; the spec (C99 cabs, as hypot) gives +inf"),
)


def conventions_of(case) -> Convention | None:
    """The conventions of ``case``'s primitive and dtype, combined into one (None: none)."""
    found = [c for c in CONVENTIONS if c.primitive == case.primitive and case.dtype in c.dtypes]
    if not found:
        return None
    if len(found) == 1:
        return found[0]
    return Convention(case.primitive, (case.dtype,),
                      lambda arrays: np.logical_or.reduce([np.asarray(c.where(arrays)) for c in found]),
                      "; ".join(c.reason for c in found))
