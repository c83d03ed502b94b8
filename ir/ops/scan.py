"""Inclusive scans along one axis: ``cumsum cumprod cummax cummin``.

Each row of ``_SCANS`` is one op: the NumPy ufunc it accumulates with and its accuracy
class. Integers accumulate in their own dtype (sums and products wrap); floats arrive
as float64. ``reverse=true`` scans from the end of the axis towards its start.

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, i32, evaluate
    >>> b = GraphBuilder()
    >>> x = b.input(i32[4])
    >>> g = b.build([b.cumsum(x, axis=0), b.cummax(x, axis=0, reverse=True)])
    >>> [a.tolist() for a in evaluate(g, [np.array([3, 1, 4, 1], np.int32)])]
    [[3, 4, 8, 9], [4, 4, 4, 1]]
"""

from __future__ import annotations

import numpy as np

from ..opdef import Accuracy, AttrKind, AttrSpec, Group, Kind, OpDef
from .reduction import NUMERIC
from .rules import check_axis, check_dtype

# name -> (ufunc, accuracy, doc)
_SCANS = {
    "cumsum": (np.add, Accuracy.ACCUMULATION, "running sum from +0.0 (-0.0 prefixes give +0.0); ints wrap"),
    "cumprod": (np.multiply, Accuracy.ACCUMULATION, "running product; ints wrap"),
    "cummax": (np.maximum, Accuracy.EXACT, "running maximum; from the first NaN on, every output is NaN"),
    "cummin": (np.minimum, Accuracy.EXACT, "running minimum; from the first NaN on, every output is NaN"),
}


def _scan_infer(op: str):
    def infer(types, attrs):
        x = types[0]
        check_dtype(op, x, NUMERIC)
        check_axis(op, attrs["axis"], x.rank)
        return (x,)

    return infer


def _scan_ref(ufunc):
    def reference(ctx, x):
        axis, reverse = ctx.attrs["axis"], ctx.attrs["reverse"]
        if reverse:
            x = np.flip(x, axis)
        with np.errstate(all="ignore"):  # inf - inf, 0 * inf: NaN by IEEE rules
            out = ufunc.accumulate(x, axis=axis, dtype=x.dtype)
            if ufunc is np.add:
                out = out + 0  # a running sum starts at +0.0 (as reduce_sum and torch.cumsum do)
        return np.flip(out, axis) if reverse else out

    return reference


def _scan(name: str, ufunc, accuracy: Accuracy, doc: str) -> OpDef:
    exact = {Group.EXACT} if accuracy is Accuracy.EXACT else set()
    return OpDef(
        name=name,
        kind=Kind.PRIMITIVE,
        operands=("x",),
        attrs=(
            AttrSpec("axis", AttrKind.INT, doc="the axis scanned"),
            AttrSpec("reverse", AttrKind.BOOL, False, doc="scan from the last element to the first"),
        ),
        infer=_scan_infer(name),
        dtypes=NUMERIC,
        accuracy=accuracy,
        groups=frozenset({Group.SCAN} | exact | ({Group.MULTIPLICATIVE} if ufunc is np.multiply else set())),
        reference=_scan_ref(ufunc),
        doc=f"inclusive {doc}",
        implementation_defined=("sign of a zero result when -0.0 and 0.0 compete",) if exact else (),
    )


OPS = tuple(_scan(name, *row) for name, row in _SCANS.items())
