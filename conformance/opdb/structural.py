"""Ops that create or move data: constant, iota, the shape ops and the indexing ops.

All are exact, in every dtype. Values are random with special values mixed in, so a
backend that moves bits through a float register (quieting NaNs, flushing subnormals,
dropping the sign of -0.0) is caught. Gather/scatter indices stay in range (out-of-range
indices are implementation-defined) and 'replace' scatters never write one element
twice (which update wins is implementation-defined); dynamic_slice starts may be out of
range, since their clamping is defined.
"""

from __future__ import annotations

import numpy as np

from ...ir.dtypes import ALL_DTYPES, INT_DTYPES, DType
from ...ir.ops import OP_TABLE
from ...ir.sharding import Mesh
from ...ir.types import tensor as _t
from .. import values as V
from ..case import Case, ErrorCase
from .common import EDGE, LAYOUT, case, ops_of


def mixed(rng: np.random.Generator, d: DType, shape) -> np.ndarray:
    """Random values with about a quarter of them replaced by the dtype's special values."""
    x = V.normal(rng, d, shape)
    s = V.specials(d)
    pick = rng.random(x.shape) < 0.25
    x[pick] = s[rng.integers(0, s.size, size=int(pick.sum()))]
    return x


def _index_dtype(i: int) -> DType:
    return INT_DTYPES[i % len(INT_DTYPES)]


def _creation_cases() -> list[Case]:
    out = []
    rng = np.random.default_rng(0)
    for d in OP_TABLE["constant"].dtypes:
        for name, value in (("specials", V.specials(d)), ("block", mixed(rng, d, (2, 3))),
                            ("scalar", mixed(rng, d, ())), ("empty", V.specials(d)[:0].reshape(0, 2))):
            out.append(case("constant", d, name, (), {"value": value}, tags=(EDGE,)))
    for d in (d for d in ALL_DTYPES if not d.is_bool):
        out.append(case("iota", d, "vector", (), {"dtype": d, "shape": (7,)}))
        out.append(case("iota", d, "dim1", (), {"dtype": d, "shape": (3, 5, 2), "dimension": 1}))
        out.append(case("iota", d, "empty", (), {"dtype": d, "shape": (0, 4), "dimension": 1}, tags=(LAYOUT,)))
        if d.is_integer:  # past 127 / 255: integer iota wraps
            out.append(case("iota", d, "wraps", (), {"dtype": d, "shape": (300,)}, tags=(EDGE,)))
    return out


# op -> [(name, operand shapes, attrs)]; operand 1 of pad is its rank-0 padding value.
_SHAPE_ROWS = {
    "reshape": [("split", [(2, 3, 4)], {"shape": (6, 4)}), ("empty", [(0, 3)], {"shape": (3, 0)}),
                ("to_rank0", [(1, 1)], {"shape": ()}), ("from_rank0", [()], {"shape": (1, 1, 1)})],
    "broadcast_in_dim": [("row", [(3,)], {"shape": (2, 3), "broadcast_dimensions": (1,)}),
                         ("expand1", [(1, 3)], {"shape": (4, 2, 3), "broadcast_dimensions": (1, 2)}),
                         ("scalar", [()], {"shape": (2, 2), "broadcast_dimensions": ()}),
                         ("empty", [(2, 0)], {"shape": (3, 2, 0), "broadcast_dimensions": (1, 2)})],
    "transpose": [("rank3", [(2, 3, 4)], {"permutation": (2, 0, 1)}), ("empty", [(0, 3)], {"permutation": (1, 0)}),
                  ("identity", [(3,)], {"permutation": (0,)})],
    "slice": [("strided", [(5, 6)], {"start_indices": (1, 0), "limit_indices": (5, 6), "strides": (2, 3)}),
              ("empty", [(4, 4)], {"start_indices": (2, 0), "limit_indices": (2, 4), "strides": (1, 1)}),
              ("whole", [(3,)], {"start_indices": (0,), "limit_indices": (3,), "strides": (1,)})],
    "concatenate": [("dim0", [(2, 3), (1, 3), (0, 3)], {"dimension": 0}),
                    ("dim1", [(2, 1), (2, 4)], {"dimension": 1}), ("single", [(3,)], {"dimension": 0})],
    "pad": [("mixed", [(3, 4), ()], {"edge_padding_low": (1, -1), "edge_padding_high": (0, 2),
                                     "interior_padding": (1, 0)}),
            ("empty", [(0, 2), ()], {"edge_padding_low": (1, 0), "edge_padding_high": (1, 0),
                                     "interior_padding": (2, 0)}),
            ("crop", [(5,), ()], {"edge_padding_low": (-2,), "edge_padding_high": (-1,), "interior_padding": (0,)})],
    "reverse": [("both", [(3, 4)], {"dimensions": (0, 1)}), ("one", [(2, 5)], {"dimensions": (1,)}),
                ("empty", [(0, 3)], {"dimensions": (0,)})],
}


def _shape_cases() -> list[Case]:
    out = []
    for op, rows in _SHAPE_ROWS.items():
        for d in OP_TABLE[op].dtypes:
            for name, shapes, attrs in rows:
                out.append(case(op, d, name, lambda rng, d=d, shapes=shapes: [mixed(rng, d, s) for s in shapes],
                                attrs, tags=(EDGE,)))
            name, shapes, attrs = rows[0]
            out.append(case(op, d, "transposed_input",
                            lambda rng, d=d, shapes=shapes: [V.transposed(mixed(rng, d, s)) for s in shapes],
                            attrs, tags=(LAYOUT,)))
    return out


def _in_range(rng, shape, size: int, d: DType) -> np.ndarray:
    return rng.integers(0, size, size=shape).astype(d.numpy)


def _with_negative_zeros(x: np.ndarray) -> np.ndarray:
    """x with its first row set to -0.0."""
    x[0] = -0.0
    return x


def _unique_rows(rng, rows: int, cols: int, size: int, d: DType) -> np.ndarray:
    """rows x cols indices into an axis of ``size``: distinct within each column."""
    return np.stack([rng.permutation(size)[:rows] for _ in range(cols)], axis=1).astype(d.numpy)


def _indexing_cases() -> list[Case]:
    out = []
    for k, d in enumerate(ALL_DTYPES):
        idx = _index_dtype(k)
        out += [
            case("gather", d, "axis0", lambda rng, d=d, i=idx: (mixed(rng, d, (5, 4)), _in_range(rng, (3, 4), 5, i)),
                 {"axis": 0}, tags=(EDGE,)),
            case("gather", d, "axis1", lambda rng, d=d, i=idx: (mixed(rng, d, (5, 4)), _in_range(rng, (5, 6), 4, i)),
                 {"axis": 1}),
            case("gather", d, "empty", lambda rng, d=d, i=idx: (mixed(rng, d, (5, 4)), _in_range(rng, (0, 4), 5, i)),
                 {"axis": 0}, tags=(LAYOUT,)),
            case("gather", d, "transposed", lambda rng, d=d, i=idx: (V.transposed(mixed(rng, d, (5, 4))),
                                                                    _in_range(rng, (3, 4), 5, i)),
                 {"axis": 0}, tags=(LAYOUT,)),
            case("scatter", d, "replace", lambda rng, d=d, i=idx: (mixed(rng, d, (5, 4)), _unique_rows(rng, 3, 4, 5, i),
                                                                  mixed(rng, d, (3, 4))),
                 {"axis": 0, "reduce": "replace"}, tags=(EDGE,)),
            case("scatter", d, "replace_axis1",
                 lambda rng, d=d, i=idx: (mixed(rng, d, (3, 6)), _unique_rows(rng, 4, 3, 6, i).T.copy(),
                                          mixed(rng, d, (3, 4))),
                 {"axis": 1, "reduce": "replace"}),
            case("dynamic_slice", d, "inside",
                 lambda rng, d=d: (mixed(rng, d, (5, 6)), np.int32(1), np.int32(2)), {"slice_sizes": (2, 3)}),
            case("dynamic_slice", d, "clamped",  # starts past either end are clamped (defined)
                 lambda rng, d=d: (mixed(rng, d, (5, 6)), np.int64(-3), np.int64(9)), {"slice_sizes": (2, 3)},
                 tags=(EDGE,)),
            case("dynamic_slice", d, "empty",
                 lambda rng, d=d: (mixed(rng, d, (5, 6)), np.uint8(4), np.uint8(1)), {"slice_sizes": (0, 3)},
                 tags=(LAYOUT,)),
            case("dynamic_update_slice", d, "inside",
                 lambda rng, d=d: (mixed(rng, d, (5, 6)), mixed(rng, d, (2, 3)), np.int32(1), np.int32(2))),
            case("dynamic_update_slice", d, "clamped",
                 lambda rng, d=d: (mixed(rng, d, (5, 6)), mixed(rng, d, (2, 3)), np.int64(7), np.int64(-1)),
                 tags=(EDGE,)),
            case("dynamic_update_slice", d, "whole",
                 lambda rng, d=d: (mixed(rng, d, (2, 3)), mixed(rng, d, (2, 3)), np.int8(0), np.int8(0)),
                 tags=(LAYOUT,)),
        ]
        if d.is_float:  # replace moves bits: -0.0 written and kept (the draws above may hold none)
            out.append(case("scatter", d, "replace_negative_zero",
                            lambda rng, d=d, i=idx: (_with_negative_zeros(mixed(rng, d, (5, 4))),
                                                     _unique_rows(rng, 3, 4, 5, i),
                                                     _with_negative_zeros(mixed(rng, d, (3, 4)))),
                            {"axis": 0, "reduce": "replace"}, tags=(EDGE,)))
        if not d.is_bool:
            out.append(case("scatter", d, "add_duplicates",
                            lambda rng, d=d, i=idx: (mixed(rng, d, (4, 3)), _in_range(rng, (6, 3), 4, i),
                                                     mixed(rng, d, (6, 3))),
                            {"axis": 0, "reduce": "add"}, tags=(EDGE,)))
            if d.is_float:  # sums of subnormals (FTZ runtimes flush them)
                out.append(case("scatter", d, "add_subnormals",
                                lambda rng, d=d, i=idx: (V.subnormals(rng, d, (4, 3)), _in_range(rng, (6, 3), 4, i),
                                                         V.subnormals(rng, d, (6, 3))),
                                {"axis": 0, "reduce": "add"}, tags=(EDGE,)))
            out.append(case("scatter", d, "add_random",
                            lambda rng, d=d, i=idx: (V.normal(rng, d, (4, 5)), _in_range(rng, (8, 5), 4, i),
                                                     V.normal(rng, d, (8, 5)))
                            , {"axis": 0, "reduce": "add"}))
    return out + _scatter_reduce_cases()


def _scatter_reduce_cases() -> list[Case]:
    """Every reducing mode of scatter, with and without include_self, on duplicate indices
    (6 updates per column into 4 slots) and special values (NaN, ±inf, -0.0: max/min must
    propagate NaN, mul meets 0·inf)."""
    out = []
    for d in (d for d in ALL_DTYPES if not d.is_bool):
        idx = _index_dtype(ALL_DTYPES.index(d) + 1)
        for reduce in ("add", "mul", "max", "min"):
            for include_self in (True, False):
                if reduce == "add" and include_self:
                    continue  # add_duplicates above
                name = f"{reduce}_duplicates" + ("" if include_self else "_without_self")
                out.append(case("scatter", d, name,
                                lambda rng, d=d, i=idx: (mixed(rng, d, (4, 3)), _in_range(rng, (6, 3), 4, i),
                                                         mixed(rng, d, (6, 3))),
                                {"axis": 0, "reduce": reduce, "include_self": include_self}, tags=(EDGE,)))
    return out


def _sharding_cases() -> list[Case]:
    """The identity with a layout hint, on a one-device mesh (a constraint needs a mesh to be
    a valid graph; one device runs everywhere): replicated, and split over the mesh axis."""
    if "sharding_constraint" not in OP_TABLE:  # the op is being added alongside this suite
        return []
    mesh = Mesh({"data": 1})
    return [case("sharding_constraint", d, name, lambda rng, d=d: (mixed(rng, d, (3, 4)),),
                 {"spec": spec}, tags=(EDGE,), mesh=mesh)
            for d in ALL_DTYPES for name, spec in (("replicated", (None, None)), ("split", ("data", None)))]


IR_FAMILIES = ("creation", "shape", "indexing", "sharding")
OPS = ops_of(IR_FAMILIES)


def cases() -> list[Case]:
    return _creation_cases() + _shape_cases() + _indexing_cases() + _sharding_cases()



f32, i32, i64 = DType.float32, DType.int32, DType.int64

ERRORS = (
    ErrorCase("iota", (), {"dtype": f32, "shape": (3,), "dimension": 1}, "out of range for shape", "dimension"),
    ErrorCase("iota", (), {"dtype": DType.bool, "shape": (3,)}, "bool is not a counting dtype", "bool"),
    ErrorCase("reshape", (_t(f32, 2, 3),), {"shape": (4, 2)}, "the element counts differ", "count"),
    ErrorCase("broadcast_in_dim", (_t(f32, 3),), {"shape": (2, 4), "broadcast_dimensions": (1,)},
              "sizes must be equal or the operand's must be 1", "size"),
    ErrorCase("broadcast_in_dim", (_t(f32, 3, 3),), {"shape": (3, 3), "broadcast_dimensions": (1, 0)},
              "is not strictly increasing", "order"),
    ErrorCase("transpose", (_t(f32, 2, 3),), {"permutation": (0, 0)}, "is not a permutation", "perm"),
    ErrorCase("slice", (_t(f32, 4),), {"start_indices": (0,), "limit_indices": (5,), "strides": (1,)},
              "exceeds the operand's size", "limit"),
    ErrorCase("slice", (_t(f32, 4),), {"start_indices": (0,), "limit_indices": (4,), "strides": (0,)},
              "must be >= 1", "stride"),
    ErrorCase("concatenate", (_t(f32, 2), _t(i32, 2)), {"dimension": 0}, "differs from operand 0's", "dtype"),
    ErrorCase("concatenate", (_t(f32, 2, 3), _t(f32, 2, 4)), {"dimension": 0}, "differs from operand 0's", "shape"),
    ErrorCase("pad", (_t(f32, 3), _t(f32)), {"edge_padding_low": (0,), "edge_padding_high": (0,),
                                              "interior_padding": (-1,)}, "is negative", "interior"),
    ErrorCase("pad", (_t(f32, 3), _t(i32)), {"edge_padding_low": (0,), "edge_padding_high": (0,),
                                              "interior_padding": (0,)}, "padding_value must be a rank-0 f32", "value"),
    ErrorCase("reverse", (_t(f32, 3),), {"dimensions": (0, 0)}, "repeat", "repeat"),
    ErrorCase("gather", (_t(f32, 3), _t(f32, 3)), {"axis": 0}, "dtype f32 is not accepted", "float_indices"),
    ErrorCase("gather", (_t(f32, 3, 2), _t(i32, 3)), {"axis": 0}, "must have the rank of x", "rank"),
    ErrorCase("scatter", (_t(f32, 3), _t(i32, 2), _t(f32, 3)), {"axis": 0, "reduce": "add"},
              "must have the shape of indices", "updates"),
    ErrorCase("scatter", (_t(f32, 3), _t(i32, 2), _t(f32, 2)), {"axis": 0, "reduce": "mean"},
              "must be one of", "reduce"),
    ErrorCase("scatter", (_t(f32, 3), _t(i32, 2), _t(f32, 2)), {"axis": 0, "reduce": "replace", "include_self": False},
              "needs a reducing mode", "include_self"),
    ErrorCase("dynamic_slice", (_t(f32, 3, 3), _t(i32)), {"slice_sizes": (1, 1)},
              "takes one start index per dim", "starts"),
    ErrorCase("dynamic_slice", (_t(f32, 3), _t(f32)), {"slice_sizes": (1,)}, "expected a rank-0 integer", "float"),
    ErrorCase("dynamic_update_slice", (_t(f32, 3), _t(f32, 4), _t(i32)), {}, "exceeds x's", "too_big"),
)
