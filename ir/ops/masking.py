"""Masking composites: one_hot, tril, triu, masked_fill. All exact (select and compare).

``one_hot`` gives an all-zero row for an index outside ``[0, num_classes)`` (PyTorch
raises instead; a graph cannot, so the result is defined rather than left open).
"""

from __future__ import annotations

from ..dtypes import ALL_DTYPES, INT_DTYPES, DType
from ..errors import TypeRuleError
from ..opdef import Accuracy, AttrKind, AttrSpec, Group
from ..types import TensorType
from .compose import composite, expand, full, full_like
from .rules import check_dtype

_I64 = DType.int64


def _one_hot(b, attrs, indices):
    shape = (*indices.shape, attrs["num_classes"])
    # Compare in int64: an iota in a narrow index dtype (u8) would wrap past 255.
    wide = indices if indices.dtype is _I64 else b.convert(indices, dtype=_I64)
    classes = b.iota(dtype=_I64, shape=shape, dimension=indices.rank)
    hit = b.eq(expand(b, wide, shape, range(indices.rank)), classes)
    return hit if attrs["dtype"] is DType.bool else b.convert(hit, dtype=attrs["dtype"])


def _triangle(compare: str):
    """Keep x[..., i, j] where ``compare(j - i, diagonal)`` holds, zero elsewhere."""

    def decompose(b, attrs, x):
        rows_cols = tuple(x.shape[-2:])
        row = b.iota(dtype=_I64, shape=rows_cols, dimension=0)
        col = b.iota(dtype=_I64, shape=rows_cols, dimension=1)
        keep = b.op(compare, b.sub(col, row), full(b, attrs["diagonal"], _I64, rows_cols))
        keep = expand(b, keep, x.shape, (x.rank - 2, x.rank - 1))
        return b.select(keep, x, full_like(b, 0, x))

    return decompose


def _masked_fill(b, attrs, x, mask, value):
    return b.select(mask, expand(b, value, x.shape, ()), x)


def _one_hot_infer(types, attrs):
    check_dtype("one_hot", types[0], INT_DTYPES)
    if attrs["num_classes"] < 0:
        raise TypeRuleError("one_hot", f"must be >= 0, got {attrs['num_classes']}", "num_classes")
    return (TensorType(attrs["dtype"], (*types[0].shape, attrs["num_classes"])),)


def _triangle_infer(name: str):
    def infer(types, attrs):
        if types[0].rank < 2:
            raise TypeRuleError(name, f"needs a matrix (rank >= 2), got {types[0]}", 0)
        return (types[0],)

    return infer


def _masked_fill_infer(types, attrs):
    x, mask, value = types
    if mask != x.with_dtype(DType.bool):
        raise TypeRuleError("masked_fill", f"mask must be bool of x's shape {list(x.shape)}, got {mask}", 1)
    if value != TensorType(x.dtype, ()):
        raise TypeRuleError("masked_fill", f"value must be a rank-0 {x.dtype.short}, got {value}", 2)
    return (x,)


def _exact(**fields):
    """A masking composite: every one is bit-exact (it only selects and compares)."""
    return composite(accuracy=Accuracy.EXACT, groups=(Group.EXACT,), **fields)


_DIAGONAL = AttrSpec("diagonal", AttrKind.INT, 0, doc="0: main diagonal; > 0 above it; < 0 below")

OPS = (
    _exact(name="one_hot", operands=("indices",),
           attrs=(AttrSpec("num_classes", AttrKind.INT), AttrSpec("dtype", AttrKind.DTYPE)),
           infer=_one_hot_infer, decompose=_one_hot, dtypes=INT_DTYPES,
           doc="indices[...] -> [..., num_classes] with 1 at the index; out-of-range index: all zeros"),
    _exact(name="tril", operands=("x",), attrs=(_DIAGONAL,), infer=_triangle_infer("tril"),
           decompose=_triangle("le"), dtypes=ALL_DTYPES, doc="x[..., i, j] where j - i <= diagonal, else 0"),
    _exact(name="triu", operands=("x",), attrs=(_DIAGONAL,), infer=_triangle_infer("triu"),
           decompose=_triangle("ge"), dtypes=ALL_DTYPES, doc="x[..., i, j] where j - i >= diagonal, else 0"),
    _exact(name="masked_fill", operands=("x", "mask", "value"), infer=_masked_fill_infer,
           decompose=_masked_fill, dtypes=ALL_DTYPES, doc="mask ? value : x"),
)
