"""The IR's element types.

Every dtype has a short name used by the text format (``f32``, ``bf16``, ``i64``)
and a NumPy dtype (bfloat16 comes from ml_dtypes). Example::

    >>> from parity.ir.dtypes import DType
    >>> DType.float32.short, DType.from_short("bf16").name
    ('f32', 'bfloat16')
    >>> DType.complex64.short, DType.complex64.real_dtype.short, DType.float64.complex_dtype.short
    ('c64', 'f32', 'c128')
"""

from __future__ import annotations

import enum

import ml_dtypes
import numpy as np


class DType(enum.Enum):
    bool = "bool"
    int8 = "i8"
    int16 = "i16"
    int32 = "i32"
    int64 = "i64"
    uint8 = "u8"
    uint32 = "u32"
    float16 = "f16"
    bfloat16 = "bf16"
    float32 = "f32"
    float64 = "f64"
    complex64 = "c64"  # a float32 real part and a float32 imaginary part
    complex128 = "c128"

    @property
    def short(self) -> str:
        return self.value

    @classmethod
    def from_short(cls, short: str) -> DType:
        try:
            return _BY_SHORT[short]
        except KeyError:
            known = ", ".join(_BY_SHORT)
            raise ValueError(f"unknown dtype {short!r}; known dtypes: {known}") from None

    @classmethod
    def from_numpy(cls, dtype) -> DType:
        dtype = np.dtype(dtype)
        for member, np_dtype in _NUMPY.items():
            if np_dtype == dtype:
                return member
        raise ValueError(f"NumPy dtype {dtype} has no parity dtype")

    @property
    def numpy(self) -> np.dtype:
        return _NUMPY[self]

    @property
    def is_float(self) -> bool:
        return self in _FLOATS

    @property
    def is_complex(self) -> bool:
        return self in _COMPLEX_PARTS

    @property
    def real_dtype(self) -> DType:
        """The dtype of each part of a complex dtype (``c64`` → ``f32``); a real dtype is its own."""
        return _COMPLEX_PARTS.get(self, self)

    @property
    def complex_dtype(self) -> DType:
        """The complex dtype whose parts are this float dtype (``f32`` → ``c64``)."""
        for member, part in _COMPLEX_PARTS.items():
            if part is self or member is self:
                return member
        raise TypeError(f"{self.name} has no complex counterpart; only f32 and f64 do (c64, c128)")

    @property
    def is_integer(self) -> bool:
        return self in _SIGNED or self in _UNSIGNED

    @property
    def is_signed(self) -> bool:
        return self in _SIGNED or self in _FLOATS

    @property
    def is_unsigned(self) -> bool:
        return self in _UNSIGNED

    @property
    def is_bool(self) -> bool:
        return self is DType.bool

    @property
    def bits(self) -> int:
        return 8 if self is DType.bool else self.numpy.itemsize * 8

    @property
    def finfo(self):
        """Float limits (eps, tiny, max, ...); ml_dtypes covers bfloat16."""
        if not self.is_float:
            raise TypeError(f"{self.name} is not a floating dtype")
        return ml_dtypes.finfo(self.numpy)

    @property
    def iinfo(self):
        if not self.is_integer:
            raise TypeError(f"{self.name} is not an integer dtype")
        return np.iinfo(self.numpy)

    def __getitem__(self, shape):
        """``f32[8, 16]`` is ``TensorType(DType.float32, (8, 16))``; ``f32[()]`` a scalar."""
        from .types import TensorType

        if not isinstance(shape, tuple):
            shape = (shape,)
        return TensorType(self, shape)

    def __repr__(self) -> str:
        return f"DType.{self.name}"


_NUMPY = {
    DType.bool: np.dtype(np.bool_),
    DType.int8: np.dtype(np.int8),
    DType.int16: np.dtype(np.int16),
    DType.int32: np.dtype(np.int32),
    DType.int64: np.dtype(np.int64),
    DType.uint8: np.dtype(np.uint8),
    DType.uint32: np.dtype(np.uint32),
    DType.float16: np.dtype(np.float16),
    DType.bfloat16: np.dtype(ml_dtypes.bfloat16),
    DType.float32: np.dtype(np.float32),
    DType.float64: np.dtype(np.float64),
    DType.complex64: np.dtype(np.complex64),
    DType.complex128: np.dtype(np.complex128),
}
_BY_SHORT = {member.short: member for member in DType}
_FLOATS = frozenset({DType.float16, DType.bfloat16, DType.float32, DType.float64})
_COMPLEX_PARTS = {DType.complex64: DType.float32, DType.complex128: DType.float64}
_SIGNED = frozenset({DType.int8, DType.int16, DType.int32, DType.int64})
_UNSIGNED = frozenset({DType.uint8, DType.uint32})

FLOAT_DTYPES = (DType.float16, DType.bfloat16, DType.float32, DType.float64)
INT_DTYPES = (DType.int8, DType.int16, DType.int32, DType.int64, DType.uint8, DType.uint32)
COMPLEX_DTYPES = (DType.complex64, DType.complex128)
# The real dtypes. Complex ones are opted into op by op (docs/ir.md, "Complex numbers"), so
# an op that says ALL_DTYPES does not take complex operands unless it names COMPLEX_DTYPES too.
ALL_DTYPES = tuple(d for d in DType if d not in COMPLEX_DTYPES)

# Shorthands used by the builder, tests and docs: `f32[8, 16]` builds a TensorType.
bool_ = DType.bool
i8, i16, i32, i64 = DType.int8, DType.int16, DType.int32, DType.int64
u8, u32 = DType.uint8, DType.uint32
f16, bf16, f32, f64 = DType.float16, DType.bfloat16, DType.float32, DType.float64
c64, c128 = DType.complex64, DType.complex128
