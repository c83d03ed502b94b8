"""Elementwise unary primitives: one operand, result of the same shape.

Each row of ``_ROWS`` is one op: its NumPy reference, the dtypes it accepts, its
accuracy class and its result dtype (``None``: the operand's). Float operands arrive as
float64 and the interpreter rounds the result once to the output dtype; integer and bool
operands arrive in their own dtype, so integer ``neg``/``abs`` wrap like two's complement.

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, evaluate, i8
    >>> b = GraphBuilder()
    >>> x = b.input(i8[2])
    >>> evaluate(b.build([b.abs(x)]), [np.array([-5, -128], np.int8)])[0].tolist()
    [5, -128]
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..dtypes import COMPLEX_DTYPES, FLOAT_DTYPES, INT_DTYPES, DType
from ..opdef import Accuracy, Group, Kind, OpDef
from .rules import unary

_SIGNED = (DType.int8, DType.int16, DType.int32, DType.int64) + FLOAT_DTYPES
_BITS = INT_DTYPES + (DType.bool,)
_BOOL = (DType.bool,)

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _rsqrt(x):
    return 1.0 / np.sqrt(x)


def _reciprocal(x):
    return 1.0 / x


def _sign(x):
    # np.sign turns -0.0 into 0.0; zeros (and ints) keep themselves, NaN stays NaN.
    return np.where(x == 0, x, np.sign(x))


def _logistic(x):
    # Two branches so neither overflows nor cancels: for x < 0, e**x / (1 + e**x) keeps the
    # relative accuracy of tiny results (0.5 * tanh(x/2) + 0.5 rounds them to 0).
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


class _Row(NamedTuple):
    fn: object
    dtypes: tuple[DType, ...]
    accuracy: Accuracy
    doc: str
    result: DType | None = None  # None: the operand's dtype
    no_fused_add: bool = False  # Group.NO_FUSED_ADD (predicates have it anyway)
    implementation_defined: tuple[str, ...] = ()


_T, _E, _CR = Accuracy.TRANSCENDENTAL, Accuracy.EXACT, Accuracy.CORRECTLY_ROUNDED
_F = FLOAT_DTYPES
_FC = FLOAT_DTYPES + COMPLEX_DTYPES  # defined on complex numbers too (docs/ir.md, "Complex numbers")
# Libraries differ here (C99 Annex G's special cases, or the plain formulas); conformance
# compares neither (conformance/opdb/elementwise.py masks them).
COMPLEX_SPECIALS = "complex operands with an infinite or NaN part"
BRANCH_CUT = "the sign of a zero imaginary part on the branch cut (complex operands on the negative real axis)"

_ROWS = {
    "neg": _Row(np.negative, _SIGNED + COMPLEX_DTYPES, _E, "-x; ints wrap (neg(INT_MIN) = INT_MIN)"),
    "abs": _Row(np.abs, _SIGNED, _E, "|x|; ints wrap (abs(INT_MIN) = INT_MIN)", no_fused_add=True),
    "sign": _Row(_sign, _SIGNED, _E, "-1, 0 or 1; sign(-0.0) = -0.0, sign(nan) = nan"),
    "exp": _Row(np.exp, _FC, _T, "e**x", implementation_defined=(COMPLEX_SPECIALS,)),
    "exp2": _Row(np.exp2, _F, _T, "2**x"),
    "expm1": _Row(np.expm1, _F, _T, "e**x - 1, accurate near 0"),
    "log": _Row(np.log, _FC, _T, "natural log; log(0) = -inf, log(x<0) = nan (complex: principal branch)",
                implementation_defined=(COMPLEX_SPECIALS, BRANCH_CUT)),
    "log2": _Row(np.log2, _F, _T, "base-2 log"),
    "log1p": _Row(np.log1p, _F, _T, "log(1 + x), accurate near 0"),
    "sqrt": _Row(np.sqrt, _FC, _CR, "square root; sqrt(-0.0) = -0.0 (complex: principal branch)",
                 implementation_defined=(COMPLEX_SPECIALS, BRANCH_CUT)),
    "rsqrt": _Row(_rsqrt, _F, _T, "1 / sqrt(x); rsqrt(-0.0) = -inf"),
    "reciprocal": _Row(_reciprocal, _F, _CR, "1 / x; reciprocal(-0.0) = -inf"),
    "sin": _Row(np.sin, _F, _T, "sine"),
    "cos": _Row(np.cos, _F, _T, "cosine"),
    "tan": _Row(np.tan, _F, _T, "tangent"),
    "asin": _Row(np.arcsin, _F, _T, "arc sine"),
    "acos": _Row(np.arccos, _F, _T, "arc cosine"),
    "atan": _Row(np.arctan, _F, _T, "arc tangent"),
    "sinh": _Row(np.sinh, _F, _T, "hyperbolic sine"),
    "cosh": _Row(np.cosh, _F, _T, "hyperbolic cosine"),
    "tanh": _Row(np.tanh, _F, _T, "hyperbolic tangent"),
    "asinh": _Row(np.arcsinh, _F, _T, "inverse hyperbolic sine"),
    "acosh": _Row(np.arccosh, _F, _T, "inverse hyperbolic cosine"),
    "atanh": _Row(np.arctanh, _F, _T, "inverse hyperbolic tangent"),
    "erf": _Row(_erf, _F, _T, "error function"),
    "logistic": _Row(_logistic, _F, _T, "1 / (1 + e**-x), relatively accurate for large |x|"),
    "floor": _Row(np.floor, _F, _E, "round toward -inf"),
    "ceil": _Row(np.ceil, _F, _E, "round toward +inf"),
    "round": _Row(np.rint, _F, _E, "round half to even (2.5 -> 2.0, -0.5 -> -0.0)"),
    "trunc": _Row(np.trunc, _F, _E, "round toward zero"),
    "is_nan": _Row(np.isnan, _F, _E, "x is NaN", DType.bool),
    "is_inf": _Row(np.isinf, _F, _E, "x is +inf or -inf", DType.bool),
    "is_finite": _Row(np.isfinite, _F, _E, "x is neither NaN nor ±inf", DType.bool),
    "logical_not": _Row(np.logical_not, _BOOL, _E, "not x"),
    "bitwise_not": _Row(np.invert, _BITS, _E, "~x, every bit flipped (logical not for bool)"),
}


def ieee_reference(fn):
    """Wrap an elementwise NumPy function as a reference (``reference(ctx, *operands)``).

    NumPy's floating-point warnings are off: NaN/inf from domain errors and overflow are
    IEEE results, and integer wraparound is the IR's semantics.
    """

    def reference(ctx, *operands):
        with np.errstate(all="ignore"):
            return fn(*operands)

    return reference


def elementwise_groups(accuracy: Accuracy, comparison: bool = False, no_fused_add: bool = False) -> frozenset[Group]:
    """ELEMENTWISE, plus EXACT for exact ops, COMPARISON for predicates, and NO_FUSED_ADD
    for predicates and where ``no_fused_add`` says so (a predicate never adds)."""
    groups = {Group.ELEMENTWISE}
    if accuracy is Accuracy.EXACT:
        groups.add(Group.EXACT)
    if comparison:
        groups.update((Group.COMPARISON, Group.NO_FUSED_ADD))
    if no_fused_add:
        groups.add(Group.NO_FUSED_ADD)
    return frozenset(groups)


def _unary_op(name: str, row: _Row) -> OpDef:
    return OpDef(
        name=name,
        kind=Kind.PRIMITIVE,
        operands=("x",),
        infer=unary(name, row.dtypes, row.result),
        dtypes=row.dtypes,
        accuracy=row.accuracy,
        groups=elementwise_groups(row.accuracy, comparison=name.startswith("is_"), no_fused_add=row.no_fused_add),
        reference=ieee_reference(row.fn),
        doc=row.doc,
        implementation_defined=row.implementation_defined,
    )


OPS = tuple(_unary_op(name, row) for name, row in _ROWS.items())
