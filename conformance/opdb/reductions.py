"""Reductions, scans, sorting and windowed reductions.

Besides random blocks over one, several and all axes: empty axes (the identity),
rank-0 inputs, NaN/±inf/±0 rows, integer wraparound over the full range, ties for
argmax/sort, non-contiguous inputs, and a few reductions over >= 10**6 terms (tag
``long``) where an accumulation shortcut or a lost block of terms shows.
"""

from __future__ import annotations

import numpy as np

from ...ir.dtypes import DType
from ...ir.ops import OP_TABLE
from ...ir.types import tensor as _t
from .. import values as V
from ..case import Case, ErrorCase
from .common import EDGE, LAYOUT, LONG, case, ops_of
from .structural import mixed

LONG_TERMS = 1 << 20  # >= 10**6


def _near_one(rng, d: DType, shape):
    """Magnitudes in [0.5, 2) with random signs: products of many stay in range."""
    if not d.is_float:
        return V.normal(rng, d, shape)
    return V.cast(np.exp2(rng.uniform(-1, 1, size=shape)) * rng.choice([-1.0, 1.0], size=shape), d)


def _draw(op: str):
    return _near_one if op in ("reduce_prod", "cumprod") else V.normal


def _specials_row(d: DType) -> np.ndarray:
    """Special values as rows of a matrix: each row holds a different mix."""
    s = V.specials(d)
    return np.stack([s, np.roll(s, 3), s[::-1].copy()])


def _reduce_cases(op: str) -> list[Case]:
    out = []
    draw = _draw(op)
    for d in OP_TABLE[op].dtypes:
        out += [
            case(op, d, "axis1", lambda rng, d=d: (draw(rng, d, (3, 5, 7)),), {"axes": (1,)}),
            case(op, d, "axes02", lambda rng, d=d: (draw(rng, d, (3, 5, 7)),), {"axes": (0, 2)}),
            case(op, d, "all", lambda rng, d=d: (draw(rng, d, (4, 6)),), {"axes": (0, 1)}),
            case(op, d, "specials", (_specials_row(d),), {"axes": (1,)}, tags=(EDGE,)),
            case(op, d, "full_range", lambda rng, d=d: (V.full_range(rng, d, (4, 16)),), {"axes": (1,)}, tags=(EDGE,)),
            case(op, d, "empty_axis", (V.specials(d)[:0].reshape(0, 4),), {"axes": (0,)}, tags=(LAYOUT,)),
            case(op, d, "rank0", lambda rng, d=d: (draw(rng, d, ()),), {"axes": ()}, tags=(LAYOUT,)),
            case(op, d, "transposed", lambda rng, d=d: (V.transposed(draw(rng, d, (6, 5))),), {"axes": (0,)},
                 tags=(LAYOUT,)),
        ]
        if d.is_float:
            out.append(case(op, d, "subnormals", lambda rng, d=d: (V.subnormals(rng, d, (4, 8)),), {"axes": (1,)},
                            tags=(EDGE,)))
    if op == "reduce_sum":
        for d in (DType.float32, DType.float16):
            out.append(case(op, d, "long", lambda rng, d=d: (V.normal(rng, d, (LONG_TERMS,), 1.0),), {"axes": (0,)},
                            tags=(LONG,)))
    return out


def _bool_reduce_cases(op: str) -> list[Case]:
    d = DType.bool
    return [
        case(op, d, "random", lambda rng: (rng.random((4, 9)) < 0.5,), {"axes": (1,)}),
        case(op, d, "all_same", (np.ones((3, 4), bool), ), {"axes": (0, 1)}),
        case(op, d, "none", (np.zeros((3, 4), bool),), {"axes": (0,)}),
        case(op, d, "empty_axis", (np.zeros((2, 0), bool),), {"axes": (1,)}, tags=(LAYOUT,)),
        case(op, d, "rank0", (np.array(True),), {"axes": ()}, tags=(LAYOUT,)),
    ]


def _arg_cases(op: str) -> list[Case]:
    out = []
    for d in OP_TABLE[op].dtypes:
        out += [
            case(op, d, "random", lambda rng, d=d: (V.normal(rng, d, (4, 9)),), {"axis": 1}),
            case(op, d, "ties", lambda rng, d=d: (V.cast(rng.integers(0, 3, size=(5, 6)), d),), {"axis": 0},
                 tags=(EDGE,)),
            case(op, d, "specials", (_specials_row(d),), {"axis": 1, "index_dtype": DType.int32}, tags=(EDGE,)),
            case(op, d, "u8_index", lambda rng, d=d: (V.normal(rng, d, (3, 7)),), {"axis": 1, "index_dtype": DType.uint8}),
            case(op, d, "size1", lambda rng, d=d: (V.normal(rng, d, (1, 4)),), {"axis": 0}, tags=(LAYOUT,)),
            case(op, d, "transposed", lambda rng, d=d: (V.transposed(V.normal(rng, d, (5, 4))),), {"axis": 1},
                 tags=(LAYOUT,)),
        ]
    return out


def _scan_cases(op: str) -> list[Case]:
    out = []
    draw = _draw(op)
    for d in OP_TABLE[op].dtypes:
        out += [
            case(op, d, "axis1", lambda rng, d=d: (draw(rng, d, (4, 9)),), {"axis": 1}),
            case(op, d, "reverse", lambda rng, d=d: (draw(rng, d, (6, 3)),), {"axis": 0, "reverse": True}),
            case(op, d, "specials", (_specials_row(d),), {"axis": 1}, tags=(EDGE,)),
            case(op, d, "full_range", lambda rng, d=d: (V.full_range(rng, d, (2, 16)),), {"axis": 1}, tags=(EDGE,)),
            case(op, d, "empty", (V.specials(d)[:0].reshape(3, 0),), {"axis": 1}, tags=(LAYOUT,)),
            case(op, d, "transposed", lambda rng, d=d: (V.transposed(draw(rng, d, (5, 4))),), {"axis": 0},
                 tags=(LAYOUT,)),
        ]
        if d.is_float:
            out.append(case(op, d, "subnormals", lambda rng, d=d: (V.subnormals(rng, d, (3, 8)),), {"axis": 1},
                            tags=(EDGE,)))
        if d.is_float and op == "cumsum":  # partial sums that are small normals (a flush of normals shows)
            out.append(case(op, d, "small_normals", lambda rng, d=d: (V.small_normals(rng, d, (3, 8)),),
                            {"axis": 1}, tags=(EDGE,)))
    if op == "cumsum":
        out.append(case(op, DType.float32, "long", lambda rng: (V.normal(rng, DType.float32, (LONG_TERMS,), 1.0),),
                        {"axis": 0}, tags=(LONG,)))
    return out


def _sort_cases(op: str) -> list[Case]:
    out = []
    for d in OP_TABLE[op].dtypes:
        if op == "sort":
            rows = [("random", (4, 9), {"axis": 1}), ("descending", (6, 3), {"axis": 0, "descending": True})]
        else:
            rows = [("random", (4, 9), {"k": 3}), ("smallest", (3, 6), {"k": 4, "largest": False})]
        for name, shape, attrs in rows:
            out.append(case(op, d, name, lambda rng, d=d, shape=shape: (V.normal(rng, d, shape),), attrs))
        last = {"axis": 1} if op == "sort" else {"k": 5}
        out += [
            case(op, d, "ties", lambda rng, d=d: (V.cast(rng.integers(0, 3, size=(4, 8)), d),), last, tags=(EDGE,)),
            case(op, d, "specials", (_specials_row(d),), last, tags=(EDGE,)),
            case(op, d, "specials_desc", (_specials_row(d),),
                 {"axis": 1, "descending": True} if op == "sort" else {"k": 5, "largest": False}, tags=(EDGE,)),
            case(op, d, "transposed", lambda rng, d=d: (V.transposed(mixed(rng, d, (6, 7))),), last, tags=(LAYOUT,)),
            case(op, d, "empty", (V.specials(d)[:0].reshape(0, 6),), last, tags=(LAYOUT,)),
        ]
    return out


def _window(dims, strides, padding, dilations, kind):
    return {"kind": kind, "window_dimensions": dims, "window_strides": strides, "padding": padding,
            "window_dilations": dilations}


def _window_cases() -> list[Case]:
    op = "reduce_window"
    out = []
    pool = _window((1, 1, 2, 2), (1, 1, 2, 2), ((0, 0),) * 4, (1, 1, 1, 1), "max")
    for d in OP_TABLE[op].dtypes:
        for kind in ("max", "sum"):
            padded = _window((1, 3, 3), (1, 2, 1), ((0, 0), (1, 1), (2, 0)), (1, 1, 2), kind)
            out += [
                case(op, d, f"{kind}_pool", lambda rng, d=d: (V.normal(rng, d, (2, 3, 6, 6)),), {**pool, "kind": kind}),
                case(op, d, f"{kind}_padded_dilated", lambda rng, d=d: (V.normal(rng, d, (2, 5, 7)),), padded),
                case(op, d, f"{kind}_specials", (_specials_row(d),),
                     _window((1, 3), (1, 2), ((0, 0), (0, 1)), (1, 1), kind), tags=(EDGE,)),
                case(op, d, f"{kind}_crop_empty", lambda rng, d=d: (V.normal(rng, d, (3, 2)),),
                     _window((1, 3), (1, 1), ((0, 0), (0, -1)), (1, 1), kind), tags=(LAYOUT,)),
            ]
        out.append(case(op, d, "sum_full_range", lambda rng, d=d: (V.full_range(rng, d, (2, 16)),),
                        _window((1, 4), (1, 4), ((0, 0), (0, 0)), (1, 1), "sum"), tags=(EDGE,)))
    return out


IR_FAMILIES = ("reduction", "scan", "sorting", "window")
OPS = ops_of(IR_FAMILIES)


def cases() -> list[Case]:
    out = []
    for op in ("reduce_sum", "reduce_prod", "reduce_max", "reduce_min"):
        out += _reduce_cases(op)
    out += _bool_reduce_cases("reduce_and") + _bool_reduce_cases("reduce_or")
    out += _arg_cases("argmax") + _arg_cases("argmin")
    for op in ("cumsum", "cumprod", "cummax", "cummin"):
        out += _scan_cases(op)
    return out + _sort_cases("sort") + _sort_cases("top_k") + _window_cases()



f32 = DType.float32

ERRORS = (
    ErrorCase("reduce_sum", (_t(f32, 3),), {"axes": (1,)}, "out of range for rank 1", "axis"),
    ErrorCase("reduce_sum", (_t(f32, 3, 2),), {"axes": (0, 0)}, "repeat", "repeat"),
    ErrorCase("reduce_sum", (_t(DType.bool, 3),), {"axes": (0,)}, "dtype bool is not accepted", "bool"),
    ErrorCase("reduce_and", (_t(f32, 3),), {"axes": (0,)}, "dtype f32 is not accepted", "float"),
    ErrorCase("argmax", (_t(f32, 0, 2),), {"axis": 0}, "is empty", "empty"),
    ErrorCase("argmax", (_t(f32, 300),), {"axis": 0, "index_dtype": DType.int8}, "cannot hold indices", "narrow"),
    ErrorCase("argmin", (_t(f32, 3),), {"axis": 0, "index_dtype": f32}, "must be an integer dtype", "float_index"),
    ErrorCase("cumsum", (_t(f32, 3),), {"axis": 1}, "out of range", "axis"),
    ErrorCase("sort", (_t(DType.bool, 3),), {"axis": 0}, "dtype bool is not accepted", "bool"),
    ErrorCase("top_k", (_t(f32, 3),), {"k": 4}, "must be in [0, 3]", "k"),
    ErrorCase("top_k", (_t(f32),), {"k": 0}, "needs at least one axis", "rank0"),
    ErrorCase("reduce_window", (_t(f32, 4),), _window((2, 1), (1,), ((0, 0),), (1,), "max"),
              "expected 1 (one per dimension of x)", "lengths"),
    ErrorCase("reduce_window", (_t(f32, 4),), _window((0,), (1,), ((0, 0),), (1,), "sum"), "must be >= 1", "zero"),
    ErrorCase("reduce_window", (_t(f32, 4),), _window((2,), (1,), ((0, 0),), (1,), "mean"), "must be one of", "kind"),
)
