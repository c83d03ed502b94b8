"""Type rules shared by many ops. Each raises TypeRuleError naming the op and operand."""

from __future__ import annotations

from collections.abc import Sequence

from ..dtypes import DType
from ..errors import TypeRuleError
from ..types import Dim, Symbol, TensorType


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


def unary(op: str, allowed: Sequence[DType], result_dtype: DType | None = None):
    """Type rule: one operand of an allowed dtype; result has its shape (and dtype)."""

    def infer(types: Sequence[TensorType], attrs) -> tuple[TensorType]:
        check_dtype(op, types[0], allowed)
        return (types[0].with_dtype(result_dtype or types[0].dtype),)

    return infer


def binary(op: str, allowed: Sequence[DType], result_dtype: DType | None = None):
    """Type rule: two operands of one type (no implicit promotion/broadcast)."""

    def infer(types: Sequence[TensorType], attrs) -> tuple[TensorType]:
        check_dtype(op, types[0], allowed)
        check_same_types(op, types)
        return (types[0].with_dtype(result_dtype or types[0].dtype),)

    return infer


def is_symbolic(dim: Dim) -> bool:
    return isinstance(dim, Symbol)
