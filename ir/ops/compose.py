"""Building blocks for decompositions: the few patterns every composite repeats.

The IR has no implicit broadcasting or promotion, so a decomposition spells out every
scalar broadcast, every reduce-then-expand and every widening convert. These helpers
do it one way, in one place. They emit only primitives.

Example::

    >>> from parity.ir import GraphBuilder, f32
    >>> from parity.ir.ops import compose
    >>> b = GraphBuilder()
    >>> x = b.input(f32[2, 3])
    >>> m = compose.reduce(b, "reduce_max", x, (1,), keepdims=True)
    >>> m.type, b.build([m]).op_counts()
    (TensorType(f32[2,3]), {'reduce_max': 1, 'broadcast_in_dim': 1})
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

from ..dtypes import DType
from ..opdef import Accuracy, AttrSpec, Kind, OpDef

# Narrow floats are computed in float32 inside a decomposition and rounded once at the
# end, as PyTorch's CPU/CUDA kernels do ("opmath"): rounding every intermediate to
# float16/bfloat16 would lose far more than one final rounding.
_WIDE = {DType.float16: DType.float32, DType.bfloat16: DType.float32}


def scalar(b, value: Any, dtype: DType):
    """A rank-0 constant of ``dtype``."""
    return b.constant(value, dtype)


def full(b, value: Any, dtype: DType, shape: Sequence) -> Any:
    """``value`` in ``dtype`` broadcast to ``shape`` (dims may be symbolic)."""
    return expand(b, scalar(b, value, dtype), tuple(shape), ())


def full_like(b, value: Any, x) -> Any:
    """``value`` in x's dtype, broadcast to x's shape."""
    return full(b, value, x.dtype, x.shape)


def expand(b, v, shape: Sequence, dims: Sequence[int]) -> Any:
    """``broadcast_in_dim``: operand dim i becomes result dim ``dims[i]``."""
    return b.broadcast_in_dim(v, shape=tuple(shape), broadcast_dimensions=tuple(dims))


def kept_dims(rank: int, axes: Sequence[int]) -> tuple[int, ...]:
    """The dims a reduction over ``axes`` keeps, in order."""
    return tuple(d for d in range(rank) if d not in set(axes))


def reduce(b, op: str, x, axes: Sequence[int], *, keepdims: bool = False) -> Any:
    """``op`` (e.g. ``"reduce_sum"``) over ``axes``; with ``keepdims`` the result is
    broadcast back to x's shape, ready for an elementwise op with x."""
    r = b.op(op, x, axes=tuple(axes))
    return expand(b, r, x.shape, kept_dims(x.rank, axes)) if keepdims else r


def static_count(x, axes: Sequence[int]) -> int | None:
    """Number of elements of x over ``axes``, or None when one of those dims is symbolic."""
    dims = [x.shape[a] for a in axes]
    return math.prod(dims) if all(isinstance(d, int) for d in dims) else None


def count(b, x, axes: Sequence[int], dtype: DType) -> Any:
    """Number of elements of x over ``axes`` as a rank-0 ``dtype`` value.

    A constant when those dims are static; otherwise counted at run time (a sum of
    int64 ones), so symbolic dims work without a dim-size primitive.
    """
    n = static_count(x, axes)
    if n is not None:
        return scalar(b, n, dtype)
    ones = full(b, 1, DType.int64, [x.shape[a] for a in axes])
    return b.convert(b.reduce_sum(ones, axes=tuple(range(len(axes)))), dtype=dtype)


def compute_dtype(dtype: DType) -> DType:
    """The dtype a decomposition computes in: float32 for float16/bfloat16, else itself."""
    return _WIDE.get(dtype, dtype)


def widen(b, x):
    """x converted to its compute dtype (a no-op for everything but float16/bfloat16)."""
    wide = compute_dtype(x.dtype)
    return x if wide is x.dtype else b.convert(x, dtype=wide)


def narrow(b, y, dtype: DType):
    """y converted back to ``dtype`` (a no-op when it already has it)."""
    return y if y.dtype is dtype else b.convert(y, dtype=dtype)


def widened(decompose):
    """Decorator: run ``decompose`` on float16/bfloat16 operands widened to float32 and
    round each float result once back to the first narrow operand's dtype."""

    @functools.wraps(decompose)
    def wrapper(b, attrs, *values):
        narrow_dtype = next((v.dtype for v in values if v.dtype in _WIDE), None)
        results = decompose(b, attrs, *(widen(b, v) for v in values))
        if narrow_dtype is None:
            return results
        if isinstance(results, tuple):
            return tuple(_back(b, r, narrow_dtype) for r in results)
        return _back(b, results, narrow_dtype)

    return wrapper


def _back(b, y, dtype: DType):
    return narrow(b, y, dtype) if y.dtype is compute_dtype(dtype) else y


def composite(*, name: str, operands: tuple[str, ...], infer, decompose, dtypes: tuple[DType, ...],
              attrs: tuple[AttrSpec, ...] = (), accuracy: Accuracy = Accuracy.COMPOSITE, groups=(),
              doc: str = "") -> OpDef:
    """The op-table entry of a composite, every field named (``kind`` is COMPOSITE, ``groups``
    any iterable of :class:`Group`)."""
    return OpDef(name=name, kind=Kind.COMPOSITE, operands=operands, attrs=attrs, infer=infer, dtypes=dtypes,
                 accuracy=accuracy, groups=frozenset(groups), decompose=decompose, doc=doc)
