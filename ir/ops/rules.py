"""Type rules shared by many ops. Each raises TypeRuleError naming the op and operand."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..dtypes import DType
from ..errors import TypeRuleError
from ..types import Dim, DimExpr, TensorType


def check_dtype(op: str, t: TensorType, allowed: Sequence[DType], operand: int = 0) -> None:
    if t.dtype not in allowed:
        names = ", ".join(d.short for d in allowed)
        raise TypeRuleError(op, f"dtype {t.dtype.short} is not accepted; accepted: {names}", operand)


def check_same_types(op: str, types: Sequence[TensorType]) -> None:
    """No implicit promotion or broadcasting: every operand has the first one's type."""
    first = types[0]
    for i, t in enumerate(types[1:], start=1):
        if t.dtype != first.dtype:
            raise TypeRuleError(
                op, f"dtype {t.dtype.short} differs from operand 0's {first.dtype.short}; insert a convert", i
            )
        if t.shape != first.shape:
            raise TypeRuleError(
                op, f"shape {t} differs from operand 0's {first}; insert a broadcast_in_dim", i
            )


def check_rank(op: str, t: TensorType, rank: int, operand: int = 0) -> None:
    if t.rank != rank:
        raise TypeRuleError(op, f"expected rank {rank}, got {t}", operand)


def check_axis(op: str, axis: int, rank: int, attr: str = "axis") -> None:
    if not 0 <= axis < rank:
        raise TypeRuleError(op, f"axis {axis} is out of range for rank {rank} (axes are non-negative)", attr)


def check_axes(op: str, axes: Sequence[int], rank: int, attr: str = "axes") -> None:
    for axis in axes:
        check_axis(op, axis, rank, attr)
    if len(set(axes)) != len(axes):
        raise TypeRuleError(op, f"axes {list(axes)} repeat", attr)


def check_scalar_int(op: str, t: TensorType, operand: int) -> None:
    if t.rank != 0 or not t.dtype.is_integer:
        raise TypeRuleError(op, f"expected a rank-0 integer, got {t}", operand)


def dims_equal(a: Dim, b: Dim) -> bool:
    return a == b


def dims_differ(a: Dim, b: Dim) -> bool:
    """True when ``a != b`` for every size >= 1 of their symbols (False: equal, or unknown).

    Decided when the difference is a nonzero constant, when both are one term over the
    same symbols with different coefficients (``B*4`` and ``B*3``), or when one term over
    symbols can never be the other, an int (``B*4`` is never 1 or 6).
    """
    diff = a - b
    if isinstance(diff, int):
        return diff != 0
    terms_a, terms_b = _single_term(a), _single_term(b)
    if terms_a is None or terms_b is None:
        return False
    if isinstance(a, int):
        (mono_a, coeff_a), (mono_b, coeff_b) = terms_b, terms_a
    else:
        (mono_a, coeff_a), (mono_b, coeff_b) = terms_a, terms_b
    if not all(atom[0] == "sym" for atom, _ in mono_a):
        return False
    if mono_b == ():  # k*B*... against an int n: k*B*... is a multiple of k, at least k
        return coeff_a > 0 and (coeff_b % coeff_a != 0 or coeff_b < coeff_a)
    return mono_a == mono_b and coeff_a != coeff_b


def _single_term(dim: Dim):
    if isinstance(dim, int):
        return ((), dim)
    return dim._terms[0] if len(dim._terms) == 1 else None


ResultDType = DType | Callable[[DType], DType] | None


def _result(result_dtype: ResultDType, operand: DType) -> DType:
    """The result dtype: fixed, the operand's (None), or a function of it (c64 → f32 for ``real``)."""
    if result_dtype is None:
        return operand
    return result_dtype if isinstance(result_dtype, DType) else result_dtype(operand)


def unary(op: str, allowed: Sequence[DType], result_dtype: ResultDType = None):
    """Type rule: one operand of an allowed dtype; result has its shape (and dtype)."""

    def infer(types: Sequence[TensorType], attrs) -> tuple[TensorType]:
        check_dtype(op, types[0], allowed)
        return (types[0].with_dtype(_result(result_dtype, types[0].dtype)),)

    return infer


def binary(op: str, allowed: Sequence[DType], result_dtype: ResultDType = None):
    """Type rule: two operands of one type (no implicit promotion/broadcast)."""

    def infer(types: Sequence[TensorType], attrs) -> tuple[TensorType]:
        check_dtype(op, types[0], allowed)
        check_same_types(op, types)
        return (types[0].with_dtype(_result(result_dtype, types[0].dtype)),)

    return infer


def is_symbolic(dim: Dim) -> bool:
    """Not a static size: a symbol or an expression over symbols."""
    return isinstance(dim, DimExpr)
