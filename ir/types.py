"""Tensor types: a dtype and a shape whose dimensions are ints or dimension expressions
(``B``, ``B*4``, ``S//2``: see ir/dims.py).

Example::

    >>> from parity.ir.types import TensorType, Symbol
    >>> from parity.ir.dtypes import DType
    >>> str(TensorType(DType.float32, (Symbol("B"), 16)))
    'f32[B,16]'
    >>> str(TensorType(DType.float32, (Symbol("B") * 4, Symbol("S") // 2)))
    'f32[B*4,S//2]'
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .dims import Dim, DimExpr, Symbol
from .dtypes import DType

__all__ = ["Dim", "DimExpr", "Symbol", "TensorType", "tensor"]


@dataclass(frozen=True, slots=True)
class TensorType:
    """dtype + shape. Rank-0 tensors (scalars) have shape ``()``."""

    dtype: DType
    shape: tuple[Dim, ...]

    def __post_init__(self):
        if not isinstance(self.dtype, DType):
            raise TypeError(f"TensorType dtype must be a DType, got {self.dtype!r}")
        shape = tuple(self.shape)
        for dim in shape:
            if isinstance(dim, bool) or not isinstance(dim, (int, DimExpr)):
                raise TypeError(f"dimension {dim!r} must be an int or a DimExpr (a Symbol or arithmetic on one)")
            if isinstance(dim, int) and dim < 0:
                raise ValueError(f"dimension {dim} is negative in shape {shape}")
        object.__setattr__(self, "shape", shape)

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, int) for d in self.shape)

    @property
    def numel(self) -> int:
        if not self.is_static:
            raise ValueError(f"{self} has symbolic dimensions; its size is not known statically")
        return math.prod(self.shape)

    def with_shape(self, shape) -> TensorType:
        return TensorType(self.dtype, tuple(shape))

    def with_dtype(self, dtype: DType) -> TensorType:
        return TensorType(dtype, self.shape)

    def __str__(self) -> str:
        return f"{self.dtype.short}[{','.join(str(d) for d in self.shape)}]"

    def __repr__(self) -> str:
        return f"TensorType({self})"


def tensor(dtype: DType, *shape: Dim) -> TensorType:
    """Shorthand: ``tensor(f32, 8, 16)``."""
    return TensorType(dtype, tuple(shape))
