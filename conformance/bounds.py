"""The numerical contract: one bound per op class, and one per composite.

Three kinds of bound:

- ``exact``: bit-exact (NaN meets NaN; the sign of a zero counts unless the op says it is
  implementation-defined). Every integer or bool output is exact.
- ``ulp``: ``|a - o| <= k * ulp(o)`` in the output dtype (correctly rounded: 1;
  transcendental: 4 in float32/float64, 1 in float16/bfloat16, which are computed wider
  and rounded once).
- ``scaled``: ``|a - o| <= (c0 + c1 * m) * (eps * S + eta) + w * ulp(o)``, where ``m`` is
  the length of the longest chain of roundings an accumulation of ``n`` terms (from the op
  and its attributes) goes through, ``S`` a per-element scale (below), ``eps``/``eta``
  the machine epsilon and smallest subnormal of the dtype the op computes in (float32 for
  a float16/bfloat16 composite that widens and for every float16/bfloat16 accumulation;
  then ``w = 1`` adds the final rounding to the output dtype, else ``w = 0``). ``eta``
  covers underflow. Accumulation is ``c0 = 0, c1 = 1, S = Σ|terms|``.

**Chains** (:func:`chain`). A sum added in chains of at most ``B`` terms whose partial
sums are combined by a tree has ``m = ⌈log₂ n⌉ + B`` (Higham, *Accuracy and Stability*,
§4.2: the error of each term is bounded by the depth of its path). The contract's ``B``
is :data:`CONTRACT_BLOCK` (64: XLA's CPU reductions chain 32 terms, Triton's 16, its dot
64, measured); a backend that adds longer chains declares its block as data
(``Backend.summation``, measured), and one that sums in one sequential pass declares so
and gets the classic ``m = n``. Products gain nothing from a tree (every factor's
rounding reaches the result): ``reduce_prod`` and ``cumprod`` keep ``m = n``.

Scales: ``oracle`` = ``|o|``; ``terms`` = the same graph evaluated in oracle mode on
``|inputs|`` (Σ|terms| for sums and contractions, ``∏|x|`` for products); ``in_out`` =
``max(|o|, |x|)`` for elementwise composites whose decomposition cancels
(``1 + erf``, ``x + 3``); ``row`` = the largest ``|o|`` along the op's axis; ``custom`` =
a per-op formula in :mod:`.scales`, named in the table's note.

The tables published in docs/conformance.md are generated from this module by
:mod:`.bounds_tables` (a test checks that they agree).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..backends.runtime import VendorTier
from ..ir.dtypes import DType
from ..ir.opdef import Accuracy, Group, Kind
from ..ir.ops import OP_TABLE, ops_in_family, ops_in_group
from ..ir.ops.compose import compute_dtype
from ..ir.passes.decompose import decompose
from ..ir.precision import Precision
from ..ir.types import TensorType


class Scale(enum.Enum):
    ORACLE = "oracle"
    TERMS = "terms"
    IN_OUT = "in_out"
    ROW = "row"
    CUSTOM = "custom"
    OPERANDS = "operands"  # max(|o|, |each operand|): the fast tier's contracted sums
    UNIT = "unit"  # 1: an absolute bound, for results in [0, 1] (the fast tier's native logistic)


@dataclass(frozen=True)
class Bound:
    """One row of the contract (see the module docstring)."""

    kind: str  # "exact" | "ulp" | "scaled" | "local"
    c0: float = 0.0  # ulp: the ULPs allowed; scaled: the constant factor
    c1: float = 0.0  # scaled: the factor of n
    scale: Scale = Scale.ORACLE
    zero_sign: bool = True  # exact: does the sign of a zero count?
    note: str = ""

    def describe(self) -> str:
        if self.kind == "exact":
            return "bit-exact" + ("" if self.zero_sign else " (sign of zero implementation-defined)")
        if self.kind == "ulp":
            return f"≤ {self.c0:g} ULP"
        if self.kind == "local":
            return "each node within its own bound"
        factor = " + ".join(t for t in (f"{self.c0:g}" if self.c0 else "", f"{self.c1:g}·m" if self.c1 else "") if t)
        return f"({factor})·ε·S" if self.c0 and self.c1 else f"{factor}·ε·S"


# The longest chain of sequential additions the contract allows a sum of n terms to have
# before its partial sums meet in a tree (see the module docstring, "Chains").
CONTRACT_BLOCK = 64

# Accumulations whose terms are multiplied, not added: a tree does not shorten them.
PRODUCTS = frozenset(ops_in_group(Group.MULTIPLICATIVE))


def sum_chain(n: int, block: int | None) -> int:
    """Roundings on the longest path of a sum of ``n`` terms added in chains of ``block``
    terms under a tree (``block`` None: one sequential pass): ``min(n, ⌈log₂ n⌉ + block)``."""
    if block is None or n <= 1:
        return n
    return min(n, math.ceil(math.log2(n)) + block)


# Fourier transforms: n inputs reach each output through ⌈log₂ n⌉ butterfly stages.
FFT_OPS = frozenset(ops_in_family("fft"))
# Short-time transforms: each frame is one transform of n_fft points (their terms are n_fft).
SPECTRAL_OPS = frozenset(ops_in_family("spectral"))


def chain(op: str, n: int, block: int | None) -> int:
    """``m`` of the scaled bound for ``op`` with ``n`` terms and the backend's ``block``
    (a Fourier transform of n points: ⌈log₂ n⌉, whatever the block)."""
    if op in FFT_OPS or op in SPECTRAL_OPS:
        return math.ceil(math.log2(n)) if n > 1 else 0
    return n if op in PRODUCTS else sum_chain(n, block)


EXACT = Bound("exact")
# Multi-op graphs (fuzzer graphs and their regressions): every node is held to its own
# bound, evaluated on the operands the backend itself produced (conformance/local.py).
LOCAL = Bound("local", note="each node within its own bound, on the backend's own operands")
EXACT_ANY_ZERO = Bound("exact", zero_sign=False)
ACCUMULATION = Bound("scaled", 0, 1, Scale.TERMS, note="S = Σ|terms|")


def _scaled(c0: float, c1: float = 0.0, scale: Scale = Scale.ORACLE, note: str = "") -> Bound:
    return Bound("scaled", c0, c1, scale, note=note)


# -- terms per output element ---------------------------------------------------------------


def _prod(values) -> int:
    return int(math.prod(values))


def _axes(t: Sequence[TensorType], a: Mapping) -> int:
    return _prod(t[0].shape[i] for i in a["axes"])


def _axis(t, a) -> int:
    return int(t[0].shape[a["axis"]])


def _einsum_terms(t, a) -> int:
    from ..ir.ops.nn import _parse_einsum  # the op's own parser: labels and their sizes

    plan = _parse_einsum(a["equation"], t)
    return _prod(plan.sizes[x] for x in plan.sizes) // max(_prod(plan.sizes[x] for x in plan.output), 1)


def _fft_points(t, a) -> int:
    """Points of one transform: the product of the transformed sizes (irfft: of its result's)."""
    x, ndims = t[0], a["ndims"]
    return _prod(x.shape[x.rank - ndims:-1]) * a["length"] if "length" in a else _prod(x.shape[x.rank - ndims:])


def _reduced_count(t, a) -> int:
    """Elements per loss reduction: the target's size for sum/mean, 1 for none."""
    return 1 if a["reduction"] == "none" else _prod(t[1].shape)


def _adaptive_terms(t, a) -> int:
    return _prod(-(-n // o) + 1 for n, o in zip(t[0].shape[2:], a["output_size"]))


def _norm_terms(op: str):
    def terms(t, a) -> int:
        x = t[0]
        if op in ("layer_norm", "rms_norm"):
            return _prod(x.shape[x.rank - a["normalized_ndim"]:])
        if op == "group_norm":
            return _prod(x.shape[1:]) // a["groups"]
        return _prod(x.shape) // max(int(x.shape[1]), 1)  # batch_norm: N * spatial

    return terms


# op -> n(operand types, attrs): terms accumulated into one output element.
TERMS: dict[str, Callable[[Sequence[TensorType], Mapping], int]] = {
    "reduce_sum": _axes, "reduce_prod": _axes, "cumsum": _axis, "cumprod": _axis,
    "dot_general": lambda t, a: _prod(t[0].shape[i] for i in a["lhs_contracting_dims"]),
    "convolution": lambda t, a: _prod(t[1].shape[1:]),
    "reduce_window": lambda t, a: _prod(a["window_dimensions"]),
    "scatter": lambda t, a: 1 + int(t[1].shape[a["axis"]]),
    "mean": _axes, "var": _axes, "std": _axes, "logsumexp": _axes, "softmax": _axis, "log_softmax": _axis,
    "linear": lambda t, a: int(t[0].shape[-1]) + 1,
    "matmul": lambda t, a: int(t[0].shape[-1]),
    "einsum": _einsum_terms,
    "avg_pool": lambda t, a: _prod(a["kernel"]),
    "adaptive_avg_pool": _adaptive_terms,
    "layer_norm": _norm_terms("layer_norm"), "rms_norm": _norm_terms("rms_norm"),
    "group_norm": _norm_terms("group_norm"), "batch_norm": _norm_terms("batch_norm"),
    "scaled_dot_product_attention": lambda t, a: int(t[1].shape[-2]) + int(t[0].shape[-1]),
    "cross_entropy": lambda t, a: int(t[0].shape[1 if t[0].rank >= 2 else 0]) + _reduced_count(t, a),
    **dict.fromkeys(FFT_OPS, _fft_points),
    **dict.fromkeys(SPECTRAL_OPS, lambda t, a: a["n_fft"]),
    "nll_loss": _reduced_count, "mse_loss": lambda t, a: 1 if a["reduction"] == "none" else _prod(t[0].shape),
}


def terms(op: str, in_types: Sequence[TensorType], attrs: Mapping) -> int:
    fn = TERMS.get(op)
    return max(fn(in_types, attrs), 1) if fn else 1


# IN_OUT scales: the |x| beyond which the decomposition no longer cancels (its result is
# saturated or exact there), so |x| counts in S only up to it: hardsigmoid and hardswish
# are clamped outside [-3, 3]; gelu's 1 + erf(x/√2) is exactly 0 or 2, and 1 + tanh(...)
# exactly 0 or 2, beyond |x| = 10 in every float dtype. Without the cap hardsigmoid(3.4e38)
# accepted 0.5 instead of 1.
IN_OUT_CAP = {"hardsigmoid": 6.0, "hardswish": 6.0, "gelu": 10.0}


def _in_out(op: str) -> str:
    return f"S = max(|o|, min(|x|, {IN_OUT_CAP[op]:g}))"


# -- loops ----------------------------------------------------------------------------------------


def body_roundings(body) -> int:
    """Roundings one step of a loop's ``body`` can add to a result's error, counted over every
    node of its primitive form (at least the longest path through it): a correctly rounded
    op 1, a transcendental 4, an accumulation of n terms n (summed in one chain, the worst
    order), an exact op none."""
    primitive, _ = decompose(body, claimed=lambda op: False)
    total = 0
    for node in primitive.nodes:
        accuracy = OP_TABLE[node.op].accuracy
        if accuracy is Accuracy.ACCUMULATION:
            total += terms(node.op, [v.type for v in node.inputs], node.attrs)
        elif accuracy is not Accuracy.EXACT and node.op != "constant":
            total += 4 if accuracy is Accuracy.TRANSCENDENTAL else 1
    return total


def _loop_bound(attrs: Mapping[str, Any]) -> Bound:
    return _scaled(max(attrs["length"], 1) * body_roundings(attrs["body"]), 0, Scale.TERMS,
                   "c0 = length × the body's roundings per step; S = the loop on |inputs| (valid for bodies of "
                   "sums and products, which the cases keep to)")


# -- the composite table --------------------------------------------------------------------------

BoundRule = Bound | Callable[[Mapping[str, Any]], Bound]

_ISTFT_SCALE = ("S = Σ over the frames covering a sample of |window|·‖frame's irfft‖₂, divided by the "
                "envelope there; m = ⌈log₂ n_fft⌉, K = ⌈n_fft/hop⌉")

# c0 counts the roundings on the longest path of the decomposition, a transcendental
# counting 4; c1 multiplies the terms of its reductions. Scales as in the module docstring.
COMPOSITE_BOUNDS: dict[str, BoundRule] = {
    "relu": EXACT,
    "hardtanh": EXACT_ANY_ZERO,  # clamp
    "leaky_relu": _scaled(1),
    "elu": _scaled(6),
    "selu": _scaled(7),
    "gelu": lambda a: _scaled(14 if a["approximate"] == "tanh" else 10, scale=Scale.IN_OUT, note=_in_out("gelu")),
    "silu": _scaled(6),
    "mish": _scaled(16),
    "softplus": _scaled(11),
    "hardsigmoid": _scaled(3, scale=Scale.IN_OUT, note=_in_out("hardsigmoid")),
    "hardswish": _scaled(4, scale=Scale.IN_OUT, note=_in_out("hardswish")),
    "softmax": _scaled(9, 2, Scale.ROW),
    "log_softmax": _scaled(12, 2, Scale.ROW),
    "logsumexp": _scaled(12, 2, Scale.CUSTOM, "S = max(|o|, 1)"),
    "mean": _scaled(1, 1, Scale.TERMS, "S = mean(|x|)"),
    "var": _scaled(6, 3, Scale.CUSTOM, "S = Σ(|x| + max|x|)² / max(n - correction, 1)"),
    "std": _scaled(7, 3, Scale.CUSTOM, "var's S through the square root: S_var / max(2·std, √(ε·S_var))"),
    "layer_norm": _scaled(10, 4, Scale.CUSTOM, "S = max|x|·rstd·|w| + |b| per normalized group"),
    "rms_norm": _scaled(8, 2, Scale.CUSTOM, "S = max|x|·rrms·|w| per normalized group"),
    "group_norm": _scaled(10, 4, Scale.CUSTOM, "S = max|x|·rstd·|w| + |b| per group"),
    "batch_norm": _scaled(10, 4, Scale.CUSTOM,
                          "out: as layer_norm per channel; running stats: momentum-weighted mean(|x|), var's S"),
    "linear": _scaled(0, 1, Scale.TERMS, "S = |x|·|w|ᵀ + |b|"),
    "matmul": ACCUMULATION,
    "einsum": ACCUMULATION,
    "embedding": EXACT,
    "scaled_dot_product_attention": _scaled(10, 2, Scale.CUSTOM,
                                            "S = max|v| along the keys · (1 + max|scores|) per query"),
    "max_pool": EXACT_ANY_ZERO,
    "avg_pool": _scaled(1, 1, Scale.TERMS, "S = avg_pool(|x|)"),
    "adaptive_avg_pool": _scaled(1, 1, Scale.TERMS, "S = adaptive_avg_pool(|x|)"),
    "interpolate": lambda a: EXACT if a["mode"] == "nearest" else _scaled(3 * len(a["size"]), 0, Scale.TERMS,
                                                                          "S = interpolate(|x|)"),
    "cross_entropy": _scaled(12, 2, Scale.CUSTOM, "S = max|log_softmax| of each row, reduced like the loss"),
    "nll_loss": _scaled(2, 1, Scale.TERMS, "S = nll_loss(|logp|)"),
    "mse_loss": _scaled(3, 1, Scale.CUSTOM, "S = the loss of (|x| + |y|, 0)"),
    "uniform": _scaled(3, 0, Scale.CUSTOM, "S = max(|low|, |high|)"),
    "normal": _scaled(14, 0, Scale.CUSTOM, "S = 8.5 (the Box–Muller radius never exceeds it)"),
    "dropout": _scaled(1),
    # The window multiply (1), rfft's normwise (1 + m)·ε·‖spectrum‖₂ and the normalized scaling
    # (the constant and the product: 2). The product's error ε|x·w| reaches the spectrum through
    # the transform as ε·‖full spectrum‖₂ (Parseval); a half spectrum's norm is ≥ 1/√2 of it.
    "stft": _scaled(4, 1, Scale.CUSTOM, "S = √2·‖o‖₂ over each frame's frequencies, m = ⌈log₂ n_fft⌉"),
    # irfft's (1 + m)·ε·‖frame‖₂, the window multiply (1), the overlap-add of K = ⌈n_fft/hop⌉
    # frames (K), the envelope's K squares and sum (K + 1, relative) and the division (1).
    "istft": lambda a: _scaled(4 + 2 * -(-a["n_fft"] // a["hop_length"]), 1, Scale.CUSTOM, _ISTFT_SCALE),
    "loop": _loop_bound,
    # ir/ops/special.py: every step in float64 (its series' and reflections' error is ~1e-15
    # relative, 1e-7 of a float32 ULP), then one rounding to the operand's dtype
    "lgamma": Bound("ulp", 1.0, note="computed in float64, rounded once"),
    "digamma": Bound("ulp", 1.0, note="computed in float64, rounded once"),
}


# -- Fourier transforms ---------------------------------------------------------------------
# Cooley–Tukey's normwise error is at most m·η/(1 - m·η)·‖y‖₂ with m = ⌈log₂ n⌉ stages and η
# a stage's error (Higham, Accuracy and Stability, §24.1; about ε with accurate twiddles);
# the norm's scaling rounds once more. Each part of each output element is held to that
# normwise bound. Measured on xla (docs/conformance.md, "Fourier transforms"): at most 0.69·ε·S (irfft f32, n = 3).
FFT_BOUND = Bound("scaled", 1, 1, Scale.CUSTOM, note="S = ‖o‖₂ over the transformed axes, m = ⌈log₂ n⌉ for n points")
TRANSFORM_BOUNDS: dict[str, Bound] = dict.fromkeys(sorted(FFT_OPS), FFT_BOUND)


# -- complex results ----------------------------------------------------------------------------
# An op with a complex result meets its class bound (exact: each part bit-exact; correctly
# rounded: 1 ULP, which add, sub and convert meet with each part rounded once), measured part
# by part in ULPs of |o| (conformance/metrics.py), except where complex arithmetic takes
# more roundings than one; those bounds follow from the error analysis, in units of
# u = ε/2 and then in ULPs of |o| (ulp(|o|) > ε·|o|/2):
COMPLEX_BOUNDS: dict[str, Bound] = {
    # (ac - bd) + (ad + bc)i: each product and the sum rounded, |ac| + |bd| <= |x||y| = |o|,
    # so each part is off by <= 2u·|o| (1 + O(u)) = ε·|o| < 2 ULP of |o|.
    "mul": Bound("ulp", 2, note="each part within 2u·|o|: two products and their sum rounded"),
    # (ac + bd + (bc - ad)i) / (c² + d²), scaled or not: the numerator's part within 2u·|x||y|,
    # the denominator within 2u·|y|², the quotient's own rounding u: 5u·|o| < 5 ULP.
    "div": Bound("ulp", 5, note="each part within 5u·|o|: numerator 2u, denominator 2u, quotient u"),
    # t = √((|z| + |re|)/2) (hypot, sum and root: 1.5u), the other part im/(2t) 2u more: 3.5u·|o|.
    "sqrt": Bound("ulp", 4, note="each part within 3.5u·|o|: hypot, sum, root, then a quotient"),
    # Σ aᵢbᵢ: each complex product adds ε·|aᵢ||bᵢ| (as mul) to the sum's own m·ε·Σ|terms|.
    "dot_general": Bound("scaled", 1, 1, Scale.TERMS, note="S = Σ|a||b|; +1 for the complex products"),
}


# -- the fast tier ----------------------------------------------------------------------------------
# precision="fast" (ir/precision.py): where a backend may compute an op differently, the op's
# bound at that tier, derived from the error analysis and checked against measurement
# (docs/conformance.md, "The fast tier"). Every other op keeps its exact-tier bound. No entry
# changes NaN, ±inf or -0.0: compare.py holds those to the oracle's in every scaled bound.
_CONTRACTED = ("S = max(|o|, |x|, |y|): a product fused into the sum (FMA) skips its own rounding, "
               "≤ ½ ulp(product) + ½ ulp(o) ≤ ε·S")
FAST_BOUNDS: dict[str, Bound] = {
    # Measured on the fuzzer's xla-*-fma regressions (f32 and f64), node by node on the
    # backend's own operands: within 1·ε·S where the exact tier's 1 ULP fails by 10⁵–10⁶ ULP.
    "add": _scaled(1, scale=Scale.OPERANDS, note=_CONTRACTED),
    "sub": _scaled(1, scale=Scale.OPERANDS, note=_CONTRACTED),
    # ORT's native Sigmoid: measured max |error| 1.40·ε (f32, at x = 16.45) and 1.00·ε (f64)
    # over dense sweeps of [-800, 800]; it flushes to 0 below x = -15.81 (f32) / -36.74 (f64),
    # where σ(x) < 1.14·ε / 0.5·ε: within the bound, so not a deviation. In ULPs it is
    # unbounded there (7·10⁷ ULP f32), which is why the bound is absolute.
    "logistic": _scaled(2, scale=Scale.UNIT, note="S = 1 (absolute: the result lies in [0, 1])"),
    # x · logistic(x): |x|·2ε from the native Sigmoid, ½ ulp(o) from the product: 3·ε·max(|o|, |x|).
    "silu": _scaled(3, scale=Scale.OPERANDS, note="S = max(|o|, |x|): |x| times logistic's absolute 2ε, "
                                                   "plus the product's rounding"),
}




def widens(op: str) -> bool:
    """Does ``op`` compute float16/bfloat16 in float32 and round once at the end? Composites
    that say so, and every accumulation primitive (the spec sums in float64; a float16 sum
    of 2²⁰ terms in float16 would be off by far more than any bound worth stating)."""
    opdef = OP_TABLE.get(op)  # None for a multi-op case named after what it tests
    if opdef is not None and opdef.kind is Kind.PRIMITIVE:
        return opdef.accuracy is Accuracy.ACCUMULATION
    return opdef is not None and opdef.kind is Kind.COMPOSITE and (
        Group.COMPUTES_WIDE in opdef.groups or hasattr(opdef.decompose, "__wrapped__"))


def _zero_sign_defined(op: str) -> bool:
    return not any("sign of a zero" in text for text in OP_TABLE[op].implementation_defined)


def class_bound(accuracy: Accuracy, dtype: DType) -> Bound:
    """The bound of a primitive's accuracy class in ``dtype``."""
    if accuracy is Accuracy.EXACT:
        return EXACT
    if accuracy is Accuracy.CORRECTLY_ROUNDED:
        return Bound("ulp", 1)
    if accuracy is Accuracy.TRANSCENDENTAL:  # complex: its parts' dtype
        return Bound("ulp", 4 if dtype.real_dtype in (DType.float32, DType.float64) else 1)
    if accuracy is Accuracy.ACCUMULATION:
        return ACCUMULATION
    raise ValueError(f"{accuracy} has no class bound; composites have per-op bounds")


def bound_for(op: str, attrs: Mapping[str, Any], dtype: DType, precision: Precision = Precision.EXACT) -> Bound:
    """The bound an output of ``dtype`` of ``op`` (with ``attrs``) must meet at ``precision``
    (the fast tier's own bound where :data:`FAST_BOUNDS` has one, else the exact tier's).
    A complex output of an op in :data:`COMPLEX_BOUNDS` meets that bound, measured part by
    part in ULPs of the magnitude (conformance/metrics.py)."""
    opdef = OP_TABLE[op]
    if op in TRANSFORM_BOUNDS:
        return TRANSFORM_BOUNDS[op]
    if dtype.is_complex and op in COMPLEX_BOUNDS:
        return COMPLEX_BOUNDS[op]
    if not (dtype.is_float or dtype.is_complex):
        return EXACT
    if precision is Precision.FAST and op in FAST_BOUNDS:
        return FAST_BOUNDS[op]
    promised = precision.ulps_for(op) if isinstance(precision, VendorTier) else None
    if promised is not None:  # a vendor tier's own bound (backends/runtime.py), float outputs only
        return Bound("ulp", promised, note=f"vendor tier {precision.value!r}: {precision.reason}")
    if op == "reduce_window" and attrs.get("kind") == "max" or op == "scatter" and attrs.get("reduce") == "replace":
        bound = EXACT
    elif op == "scatter" and attrs.get("reduce") in ("max", "min"):
        bound = EXACT_ANY_ZERO  # which zero wins when -0.0 and 0.0 compete is implementation-defined
    elif opdef.kind is Kind.COMPOSITE and op in COMPOSITE_BOUNDS:
        rule = COMPOSITE_BOUNDS[op]
        bound = rule if isinstance(rule, Bound) else rule(attrs)
    elif opdef.accuracy is Accuracy.COMPOSITE or opdef.kind is Kind.COMPOSITE and opdef.accuracy is not Accuracy.EXACT:
        raise KeyError(f"composite {op} has no bound in conformance/bounds.py COMPOSITE_BOUNDS")
    else:
        bound = class_bound(opdef.accuracy, dtype)
    if bound.kind == "exact" and bound.zero_sign and not _zero_sign_defined(op):
        bound = replace(bound, zero_sign=False)
    return bound


def compute_eps(op: str, dtype: DType) -> tuple[float, float, bool]:
    """(eps, smallest subnormal, widened) of the dtype ``op`` computes in for a ``dtype`` output."""
    wide = compute_dtype(dtype) if widens(op) else dtype
    fi = wide.real_dtype.finfo  # a complex dtype computes in its parts
    return float(fi.eps), float(fi.smallest_subnormal), wide is not dtype
