"""Selection primitives: ``select`` (elementwise choice by a bool mask) and ``clamp``.

Both are exact: they only pick among their operands' values.

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, evaluate, f32
    >>> b = GraphBuilder()
    >>> lo, x, hi = b.input(f32[3]), b.input(f32[3]), b.input(f32[3])
    >>> g = b.build([b.clamp(lo, x, hi)])
    >>> evaluate(g, [np.zeros(3, np.float32), np.array([-1, 0.5, np.nan], np.float32),
    ...              np.ones(3, np.float32)])[0].tolist()
    [0.0, 0.5, nan]
"""

from __future__ import annotations

import numpy as np

from ..dtypes import ALL_DTYPES, COMPLEX_DTYPES, FLOAT_DTYPES, INT_DTYPES
from ..errors import TypeRuleError
from ..opdef import Accuracy, Group, Kind, OpDef
from .rules import check_dtype

_NUMERIC = INT_DTYPES + FLOAT_DTYPES


def _check_like(op, t, like, operand: int, like_name: str) -> None:
    """No implicit promotion or broadcasting: operand ``operand`` must have ``like``'s type."""
    if t.dtype != like.dtype:
        raise TypeRuleError(op, f"dtype {t.dtype.short} differs from {like_name}'s {like.dtype.short}; "
                                "insert a convert", operand)
    if t.shape != like.shape:
        raise TypeRuleError(op, f"shape {t} differs from {like_name}'s {like}; insert a broadcast_in_dim", operand)


def _select_infer(types, attrs):
    pred, on_true, _ = types
    if not pred.dtype.is_bool:
        raise TypeRuleError("select", f"the predicate must be bool, got {pred}", 0)
    if pred.shape != on_true.shape:
        raise TypeRuleError(
            "select", f"predicate shape {pred} differs from on_true's {on_true}; insert a broadcast_in_dim", 0
        )
    _check_like("select", types[2], on_true, 2, "on_true")
    return (on_true,)


def _select_ref(ctx, pred, on_true, on_false):
    return np.where(pred, on_true, on_false)


def _clamp_infer(types, attrs):
    lo, x, hi = types
    check_dtype("clamp", x, _NUMERIC, 1)
    _check_like("clamp", lo, x, 0, "x")
    _check_like("clamp", hi, x, 2, "x")
    return (x,)


def _clamp_ref(ctx, lo, x, hi):
    return np.minimum(np.maximum(x, lo), hi)  # NaN in any operand propagates


OPS = (
    OpDef(
        name="select",
        kind=Kind.PRIMITIVE,
        operands=("pred", "on_true", "on_false"),
        infer=_select_infer,
        dtypes=ALL_DTYPES + COMPLEX_DTYPES,  # of on_true/on_false; pred is always bool
        dtype_operand=1,
        accuracy=Accuracy.EXACT,
        groups=frozenset({Group.ELEMENTWISE, Group.EXACT, Group.NO_FUSED_ADD}),
        reference=_select_ref,
        doc="on_true where pred, else on_false; all shapes equal.",
    ),
    OpDef(
        name="clamp",
        kind=Kind.PRIMITIVE,
        operands=("lo", "x", "hi"),
        infer=_clamp_infer,
        dtypes=_NUMERIC,
        accuracy=Accuracy.EXACT,
        groups=frozenset({Group.ELEMENTWISE, Group.EXACT, Group.NO_FUSED_ADD}),
        reference=_clamp_ref,
        doc="min(max(x, lo), hi); NaN in any operand propagates; lo > hi gives hi.",
        implementation_defined=("sign of a zero result when -0.0 and 0.0 meet",),
    ),
)
