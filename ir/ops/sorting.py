"""Sorting: ``sort`` along an axis and ``top_k`` along the last axis.

Both return (values, indices: i64) and both order elements the same way: stably (equal
elements keep their original order, -0.0 and 0.0 count as equal), NaN greater than
+inf (last ascending, first descending).

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, f32, evaluate
    >>> b = GraphBuilder()
    >>> x = b.input(f32[4])
    >>> g = b.build([*b.sort(x, axis=0), *b.top_k(x, k=2)])
    >>> [a.tolist() for a in evaluate(g, [np.array([2, np.nan, -1, 2], np.float32)])]
    [[-1.0, 2.0, 2.0, nan], [2, 0, 3, 1], [nan, 2.0], [1, 0]]
"""

from __future__ import annotations

import numpy as np

from ..dtypes import DType
from ..errors import TypeRuleError
from ..opdef import Accuracy, AttrKind, AttrSpec, Group, Kind, OpDef
from .reduction import NUMERIC
from .rules import check_axis, check_dtype


def stable_order(x: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Indices that sort ``x`` stably along ``axis``; NaN last ascending, first descending."""
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    # Negating keys would break on NaN and INT_MIN; instead sort the reversed line
    # ascending and read it backwards, which also keeps equal elements in original order.
    backwards = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return np.flip(x.shape[axis] - 1 - backwards, axis)


def _sort_infer(types, attrs):
    x = types[0]
    check_dtype("sort", x, NUMERIC)
    check_axis("sort", attrs["axis"], x.rank)
    return (x, x.with_dtype(DType.int64))


def _sort_ref(ctx, x):
    axis = ctx.attrs["axis"]
    order = stable_order(x, axis, ctx.attrs["descending"])
    return np.take_along_axis(x, order, axis), order


def _top_k_infer(types, attrs):
    x, k = types[0], attrs["k"]
    check_dtype("top_k", x, NUMERIC)
    if x.rank == 0:
        raise TypeRuleError("top_k", f"needs at least one axis to search, got {x}", 0)
    size = x.shape[-1]
    if not isinstance(size, int):
        raise TypeRuleError("top_k", f"the last dimension of {x} must be static to check k against it", 0)
    if not 0 <= k <= size:
        raise TypeRuleError("top_k", f"k={k} must be in [0, {size}] (the last dimension of {x})", "k")
    shape = x.shape[:-1] + (k,)
    return (x.with_shape(shape), x.with_dtype(DType.int64).with_shape(shape))


def _top_k_ref(ctx, x):
    order = stable_order(x, -1, ctx.attrs["largest"])[..., : ctx.attrs["k"]]
    return np.take_along_axis(x, order, -1), order


OPS = (
    OpDef(
        name="sort",
        kind=Kind.PRIMITIVE,
        operands=("x",),
        attrs=(
            AttrSpec("axis", AttrKind.INT, doc="the axis sorted"),
            AttrSpec("descending", AttrKind.BOOL, False, doc="largest first (NaN first)"),
        ),
        infer=_sort_infer,
        dtypes=NUMERIC,
        accuracy=Accuracy.EXACT,
        groups=frozenset({Group.EXACT, Group.NO_FUSED_ADD}),
        reference=_sort_ref,
        num_results=2,
        doc="stable sort along axis -> (values, i64 indices into x); NaN sorts after +inf",
    ),
    OpDef(
        name="top_k",
        kind=Kind.PRIMITIVE,
        operands=("x",),
        attrs=(
            AttrSpec("k", AttrKind.INT, doc="how many elements to keep, 0 <= k <= last dim"),
            AttrSpec("largest", AttrKind.BOOL, True, doc="keep the largest (else the smallest)"),
        ),
        infer=_top_k_infer,
        dtypes=NUMERIC,
        accuracy=Accuracy.EXACT,
        groups=frozenset({Group.EXACT, Group.NO_FUSED_ADD}),
        reference=_top_k_ref,
        num_results=2,
        doc="the k best elements of the last axis, best first -> (values, i64 indices); ties give "
            "the lower index first; NaN counts as the largest",
    ),
)
