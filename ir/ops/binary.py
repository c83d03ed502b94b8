"""Elementwise binary primitives: two operands of one type (no promotion, no broadcasting).

Each row of ``_ROWS`` is one op: its reference, the dtypes it accepts, its accuracy class,
whether it returns bool, and what is implementation-defined about it. Integer operands
arrive in their own dtype, so NumPy's integer arithmetic wraps exactly like two's
complement hardware; float operands arrive as float64 and are rounded once.

Integer division by zero is implementation-defined. The reference does not crash: it
returns ``x / 0 = -1`` (all bits set) and ``x % 0 = x``, so ``x == (x / y) * y + x % y``
still holds (the RISC-V and XLA convention). ``INT_MIN / -1 = INT_MIN`` (wraps) and
``INT_MIN % -1 = 0`` are defined.

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, evaluate, i32
    >>> b = GraphBuilder()
    >>> x, y = b.input(i32[2]), b.input(i32[2])
    >>> g = b.build([b.div(x, y), b.rem(x, y)])
    >>> [a.tolist() for a in evaluate(g, [np.array([-7, 7], np.int32), np.array([2, -2], np.int32)])]
    [[-3, -3], [-1, 1]]
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..dtypes import COMPLEX_DTYPES, FLOAT_DTYPES, INT_DTYPES, DType
from ..opdef import Accuracy, Kind, OpDef
from .rules import binary
from .unary import COMPLEX_SPECIALS, elementwise_groups, ieee_reference

_NUMERIC = INT_DTYPES + FLOAT_DTYPES
_ARITHMETIC = _NUMERIC + COMPLEX_DTYPES  # defined on complex numbers too (docs/ir.md, "Complex numbers")
_BITS = INT_DTYPES + (DType.bool,)
_BOOL = (DType.bool,)


def _is_int(x: np.ndarray) -> bool:
    return x.dtype.kind in "iu"


def _div(x, y):
    if not _is_int(x):
        return x / y
    q = _trunc_quotient(x, y)
    return np.where(y == 0, ~x.dtype.type(0), q)  # implementation-defined: all bits set (-1)


def _rem(x, y):
    if not _is_int(x):
        return np.fmod(x, y)
    safe_y = np.where(y == 0, x.dtype.type(1), y)
    return np.where(y == 0, x, np.fmod(x, safe_y))  # fmod: the dividend's sign (C's %)


def _trunc_quotient(x, y):
    """x / y rounded toward zero, computed in x's dtype (INT_MIN / -1 wraps to INT_MIN)."""
    safe_y = np.where(y == 0, x.dtype.type(1), y)
    # x - fmod(x, y) is an exact multiple of y between 0 and x, so floor division is exact.
    # The one overflow, INT_MIN // -1, wraps to INT_MIN in NumPy as on hardware.
    return np.floor_divide(x - np.fmod(x, safe_y), safe_y)


def _shift_amount(x, y):
    """Where the shift is in [0, bit width), and the amount clipped into range."""
    bits = x.dtype.itemsize * 8
    valid = (y >= 0) & (y < bits)
    return valid, np.where(valid, y, x.dtype.type(0))


def _shift_left(x, y):
    valid, amount = _shift_amount(x, y)
    return np.where(valid, np.left_shift(x, amount), x.dtype.type(0))


def _shift_right_logical(x, y):
    unsigned = x.astype(np.dtype(f"u{x.dtype.itemsize}"))  # two's complement bits as unsigned
    valid, amount = _shift_amount(x, y)
    shifted = np.right_shift(unsigned, amount.astype(unsigned.dtype))
    return np.where(valid, shifted, unsigned.dtype.type(0)).astype(x.dtype)


def _shift_right_arithmetic(x, y):
    # floor(x / 2**y): for unsigned ints this is the logical shift; past the width, the sign.
    valid, amount = _shift_amount(x, y)
    fill = -(x < 0).astype(x.dtype)  # -1 for negative x, else 0 (unsigned: always 0)
    return np.where(valid, np.right_shift(x, amount), fill)


class _Row(NamedTuple):
    fn: object
    dtypes: tuple[DType, ...]
    accuracy: Accuracy
    doc: str
    compare: bool = False  # result is bool
    implementation_defined: tuple[str, ...] = ()
    no_fused_add: bool = False  # Group.NO_FUSED_ADD (comparisons have it anyway)


_E, _CR, _T = Accuracy.EXACT, Accuracy.CORRECTLY_ROUNDED, Accuracy.TRANSCENDENTAL
_F = FLOAT_DTYPES
_DIV_BY_ZERO = ("integer division by zero (reference: x / 0 = -1, x % 0 = x)",)
_ZERO_SIGN = ("sign of a zero result when the operands are -0.0 and 0.0",)
_COMPLEX_SPECIALS = (COMPLEX_SPECIALS,)

_ROWS = {
    "add": _Row(np.add, _ARITHMETIC, _CR, "x + y; ints wrap"),
    "sub": _Row(np.subtract, _ARITHMETIC, _CR, "x - y; ints wrap"),
    "mul": _Row(np.multiply, _ARITHMETIC, _CR, "x * y; ints wrap", no_fused_add=True),
    "div": _Row(_div, _ARITHMETIC, _CR, "x / y; ints truncate toward zero, INT_MIN / -1 = INT_MIN",
                implementation_defined=_DIV_BY_ZERO + _COMPLEX_SPECIALS, no_fused_add=True),
    "rem": _Row(_rem, _NUMERIC, _E, "remainder with the dividend's sign (C %, fmod for floats)",
                implementation_defined=_DIV_BY_ZERO),
    "pow": _Row(np.power, _F, _T, "x ** y (C pow: pow(x, 0) = 1, pow(1, y) = 1 even for NaN)"),
    "max": _Row(np.maximum, _NUMERIC, _E, "larger of x, y; NaN propagates",
                implementation_defined=_ZERO_SIGN, no_fused_add=True),
    "min": _Row(np.minimum, _NUMERIC, _E, "smaller of x, y; NaN propagates",
                implementation_defined=_ZERO_SIGN, no_fused_add=True),
    "atan2": _Row(np.arctan2, _F, _T, "angle of the point (y=x, x=y) in (-pi, pi], C atan2"),
    "eq": _Row(np.equal, _ARITHMETIC + _BOOL, _E, "x == y (NaN equals nothing; complex: both parts)", compare=True),
    "ne": _Row(np.not_equal, _ARITHMETIC + _BOOL, _E, "x != y (true if either is NaN)", compare=True),
    "lt": _Row(np.less, _NUMERIC, _E, "x < y", compare=True),
    "le": _Row(np.less_equal, _NUMERIC, _E, "x <= y", compare=True),
    "gt": _Row(np.greater, _NUMERIC, _E, "x > y", compare=True),
    "ge": _Row(np.greater_equal, _NUMERIC, _E, "x >= y", compare=True),
    "logical_and": _Row(np.logical_and, _BOOL, _E, "x and y"),
    "logical_or": _Row(np.logical_or, _BOOL, _E, "x or y"),
    "logical_xor": _Row(np.logical_xor, _BOOL, _E, "x xor y"),
    "bitwise_and": _Row(np.bitwise_and, _BITS, _E, "x & y"),
    "bitwise_or": _Row(np.bitwise_or, _BITS, _E, "x | y"),
    "bitwise_xor": _Row(np.bitwise_xor, _BITS, _E, "x ^ y"),
    "shift_left": _Row(_shift_left, INT_DTYPES, _E, "x << y; 0 if y >= bit width or y < 0"),
    "shift_right_logical": _Row(_shift_right_logical, INT_DTYPES, _E,
                                "x >> y filling zeros; 0 if y >= bit width or y < 0"),
    "shift_right_arithmetic": _Row(_shift_right_arithmetic, INT_DTYPES, _E,
                                   "floor(x / 2**y) (sign fill); 0 or -1 if y >= bit width or y < 0"),
}


def _binary_op(name: str, row: _Row) -> OpDef:
    return OpDef(
        name=name,
        kind=Kind.PRIMITIVE,
        operands=("x", "y"),
        infer=binary(name, row.dtypes, DType.bool if row.compare else None),
        dtypes=row.dtypes,
        accuracy=row.accuracy,
        groups=elementwise_groups(row.accuracy, comparison=row.compare, no_fused_add=row.no_fused_add),
        reference=ieee_reference(row.fn),
        doc=row.doc,
        implementation_defined=row.implementation_defined,
    )


OPS = tuple(_binary_op(name, row) for name, row in _ROWS.items())
