"""Reductions: ``reduce_sum reduce_prod reduce_max reduce_min reduce_and reduce_or`` over
a set of axes, and ``argmax argmin`` along one axis.

Each row of ``_REDUCERS`` is one op: the NumPy ufunc it folds with, the dtypes it takes,
its identity (the result of an empty reduction) and its accuracy class. Integers are
folded in their own dtype, so sums and products wrap; floats arrive as float64, so the
reference sums in float64 and the interpreter rounds once.

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, f32, evaluate
    >>> b = GraphBuilder()
    >>> x = b.input(f32[2, 3])
    >>> g = b.build([b.reduce_sum(x, axes=(1,)), b.argmax(x, axis=1)])
    >>> [a.tolist() for a in evaluate(g, [np.array([[1, 5, 5], [0, -1, 2]], np.float32)])]
    [[11.0, 1.0], [1, 2]]
"""

from __future__ import annotations

import numpy as np

from ..dtypes import COMPLEX_DTYPES, FLOAT_DTYPES, INT_DTYPES, DType
from ..errors import TypeRuleError
from ..opdef import Accuracy, AttrKind, AttrSpec, Group, Kind, OpDef
from ..types import TensorType
from .rules import check_axes, check_axis, check_dtype

NUMERIC = INT_DTYPES + FLOAT_DTYPES
_BOOL = (DType.bool,)


def lowest(dtype: DType):
    """The identity of max: -inf for floats, the smallest value for ints."""
    return -np.inf if dtype.is_float else dtype.iinfo.min


def highest(dtype: DType):
    """The identity of min: +inf for floats, the largest value for ints."""
    return np.inf if dtype.is_float else dtype.iinfo.max


# name -> (ufunc, accepted dtypes, identity(dtype), accuracy, doc); identity None means the
# ufunc's own identity (0, 1, True, False), which does not depend on the dtype.
_REDUCERS = {
    "reduce_sum": (np.add, NUMERIC + COMPLEX_DTYPES, None, Accuracy.ACCUMULATION,
                   "sum, folded from +0.0 (so -0.0 terms alone sum to +0.0); ints wrap; empty gives 0"),
    "reduce_prod": (np.multiply, NUMERIC, None, Accuracy.ACCUMULATION, "product; ints wrap; empty gives 1"),
    "reduce_max": (np.maximum, NUMERIC, lowest, Accuracy.EXACT,
                   "maximum; NaN propagates; empty gives -inf (ints: the dtype's min)"),
    "reduce_min": (np.minimum, NUMERIC, highest, Accuracy.EXACT,
                   "minimum; NaN propagates; empty gives +inf (ints: the dtype's max)"),
    "reduce_and": (np.logical_and, _BOOL, None, Accuracy.EXACT, "all; empty gives true"),
    "reduce_or": (np.logical_or, _BOOL, None, Accuracy.EXACT, "any; empty gives false"),
}

# max(-0.0, 0.0) may return either zero (as for the binary max/min ops).
_SIGNED_ZERO = ("sign of a zero result when -0.0 and 0.0 compete",)


def _reduce_infer(op: str, allowed):
    def infer(types, attrs):
        x = types[0]
        check_dtype(op, x, allowed)
        axes = attrs["axes"]
        check_axes(op, axes, x.rank)
        return (x.with_shape(d for i, d in enumerate(x.shape) if i not in axes),)

    return infer


def _reduce_ref(ufunc, identity):
    def reference(ctx, x):
        start = ufunc.identity if identity is None else identity(ctx.in_types[0].dtype)
        # Folding from the identity (as XLA's reduce and torch do) defines empty reductions
        # and makes a sum of only -0.0 terms +0.0.
        with np.errstate(all="ignore"):  # inf - inf, 0 * inf: NaN by IEEE rules
            return ufunc.reduce(x, axis=ctx.attrs["axes"], dtype=x.dtype, initial=start)

    return reference


def _reducer(name: str, ufunc, allowed, identity, accuracy: Accuracy, doc: str) -> OpDef:
    exact = {Group.EXACT} if accuracy is Accuracy.EXACT else set()
    # A float product can reach only the numeric reducers; none adds beyond its bound.
    no_fused_add = {Group.NO_FUSED_ADD} if set(NUMERIC) <= set(allowed) else set()
    multiplicative = {Group.MULTIPLICATIVE} if ufunc is np.multiply else set()
    return OpDef(
        name=name,
        kind=Kind.PRIMITIVE,
        operands=("x",),
        attrs=(AttrSpec("axes", AttrKind.INTS, doc="the axes to reduce (removed from the result)"),),
        infer=_reduce_infer(name, allowed),
        dtypes=allowed,
        accuracy=accuracy,
        groups=frozenset({Group.REDUCTION} | exact | no_fused_add | multiplicative),
        reference=_reduce_ref(ufunc, identity),
        doc=doc,
        implementation_defined=_SIGNED_ZERO if ufunc in (np.maximum, np.minimum) else (),
    )


def _arg_infer(op: str):
    def infer(types, attrs):
        x, axis, index_dtype = types[0], attrs["axis"], attrs["index_dtype"]
        check_dtype(op, x, NUMERIC)
        check_axis(op, axis, x.rank)
        size = x.shape[axis]
        if size == 0:
            raise TypeRuleError(op, f"axis {axis} of {x} is empty, so there is no index to return", "axis")
        if not index_dtype.is_integer:
            raise TypeRuleError(op, f"index dtype must be an integer dtype, got {index_dtype.short}", "index_dtype")
        if isinstance(size, int) and size - 1 > index_dtype.iinfo.max:
            raise TypeRuleError(op, f"{index_dtype.short} cannot hold indices up to {size - 1}", "index_dtype")
        shape = tuple(d for i, d in enumerate(x.shape) if i != axis)
        return (TensorType(index_dtype, shape),)

    return infer


def _arg_ref(np_arg):
    def reference(ctx, x):
        # NumPy already returns the first index on ties and the first NaN's index.
        return np_arg(x, axis=ctx.attrs["axis"]).astype(ctx.attrs["index_dtype"].numpy)

    return reference


def _arg(name: str, np_arg, extreme: str) -> OpDef:
    return OpDef(
        name=name,
        kind=Kind.PRIMITIVE,
        operands=("x",),
        attrs=(
            AttrSpec("axis", AttrKind.INT, doc="the axis searched (removed from the result)"),
            AttrSpec("index_dtype", AttrKind.DTYPE, DType.int64, doc="dtype of the returned indices"),
        ),
        infer=_arg_infer(name),
        dtypes=NUMERIC,
        accuracy=Accuracy.EXACT,
        groups=frozenset({Group.REDUCTION, Group.EXACT, Group.NO_FUSED_ADD}),
        reference=_arg_ref(np_arg),
        doc=f"index of the {extreme} along axis; ties give the lowest index; NaN counts as the "
            "extreme (the first NaN's index); an empty axis is a type error",
    )


OPS = tuple(_reducer(name, *row) for name, row in _REDUCERS.items()) + (
    _arg("argmax", np.argmax, "maximum"),
    _arg("argmin", np.argmin, "minimum"),
)
