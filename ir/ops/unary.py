"""Elementwise unary primitives: one operand, result of the same shape.

Each row of ``_FLOAT_MATH`` is one op: its NumPy reference (evaluated in float64 and
rounded once to the output dtype by the interpreter) and accuracy class.
"""

from __future__ import annotations

import math

import numpy as np

from ..dtypes import ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, DType
from ..opdef import Accuracy, Group, Kind, OpDef
from .rules import unary

_SIGNED_INTS = (DType.int8, DType.int16, DType.int32, DType.int64)
_NUMERIC = INT_DTYPES + FLOAT_DTYPES

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _with_errstate(fn):
    def reference(ctx, x):
        with np.errstate(all="ignore"):  # domain errors produce NaN/inf by IEEE rules
            return fn(x)

    return reference


def _expm1_stable(x):
    return np.expm1(x)


# name -> (reference on float64 arrays, accuracy, doc)
_FLOAT_MATH = {
    "exp": (np.exp, Accuracy.TRANSCENDENTAL, "e**x"),
    "exp2": (np.exp2, Accuracy.TRANSCENDENTAL, "2**x"),
    "expm1": (np.expm1, Accuracy.TRANSCENDENTAL, "e**x - 1, accurate near 0"),
    "log": (np.log, Accuracy.TRANSCENDENTAL, "natural log; log(0) = -inf, log(x<0) = nan"),
    "log2": (np.log2, Accuracy.TRANSCENDENTAL, "base-2 log"),
    "log1p": (np.log1p, Accuracy.TRANSCENDENTAL, "log(1 + x), accurate near 0"),
    "sqrt": (np.sqrt, Accuracy.CORRECTLY_ROUNDED, "square root; sqrt(-0.0) = -0.0"),
    "rsqrt": (lambda x: 1.0 / np.sqrt(x), Accuracy.TRANSCENDENTAL, "1 / sqrt(x)"),
    "sin": (np.sin, Accuracy.TRANSCENDENTAL, "sine"),
    "cos": (np.cos, Accuracy.TRANSCENDENTAL, "cosine"),
    "tan": (np.tan, Accuracy.TRANSCENDENTAL, "tangent"),
    "asin": (np.arcsin, Accuracy.TRANSCENDENTAL, "arc sine"),
    "acos": (np.arccos, Accuracy.TRANSCENDENTAL, "arc cosine"),
    "atan": (np.arctan, Accuracy.TRANSCENDENTAL, "arc tangent"),
    "sinh": (np.sinh, Accuracy.TRANSCENDENTAL, "hyperbolic sine"),
    "cosh": (np.cosh, Accuracy.TRANSCENDENTAL, "hyperbolic cosine"),
    "tanh": (np.tanh, Accuracy.TRANSCENDENTAL, "hyperbolic tangent"),
    "asinh": (np.arcsinh, Accuracy.TRANSCENDENTAL, "inverse hyperbolic sine"),
    "acosh": (np.arccosh, Accuracy.TRANSCENDENTAL, "inverse hyperbolic cosine"),
    "atanh": (np.arctanh, Accuracy.TRANSCENDENTAL, "inverse hyperbolic tangent"),
    "erf": (_erf, Accuracy.TRANSCENDENTAL, "error function"),
    "logistic": (lambda x: 0.5 * np.tanh(0.5 * x) + 0.5, Accuracy.TRANSCENDENTAL,
                 "1 / (1 + e**-x), without overflow for large |x|"),
    "floor": (np.floor, Accuracy.EXACT, "round toward -inf"),
    "ceil": (np.ceil, Accuracy.EXACT, "round toward +inf"),
    "round": (np.round, Accuracy.EXACT, "round half to even (2.5 -> 2.0, -0.5 -> -0.0)"),
    "trunc": (np.trunc, Accuracy.EXACT, "round toward zero"),
}


def _float_op(name: str, fn, accuracy: Accuracy, doc: str) -> OpDef:
    groups = {Group.ELEMENTWISE} | ({Group.EXACT} if accuracy is Accuracy.EXACT else set())
    return OpDef(
        name=name,
        kind=Kind.PRIMITIVE,
        operands=("x",),
        infer=unary(name, FLOAT_DTYPES),
        dtypes=FLOAT_DTYPES,
        accuracy=accuracy,
        groups=frozenset(groups),
        reference=_with_errstate(fn),
        doc=doc,
    )


OPS = tuple(_float_op(name, fn, acc, doc) for name, (fn, acc, doc) in _FLOAT_MATH.items())
