"""One-op graphs for every primitive on every dtype it takes, with edge values.

``cases(op, dtype)`` returns :class:`Case` s: a graph of one ``op`` node and its inputs
(the bound each result must meet comes from the conformance suite's table,
``conformance.bounds``, by op and attributes). The conformance tests and the kernel probe
(probe_kernels.py) share them. Inputs hold NaN, ±inf, -0.0, subnormals, the integer
limits (wraparound) and empty dims; implementation-defined inputs (out-of-range
indices, float→int overflow) are left out because nothing may be compared there.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from parity.ir import DType, Graph, GraphBuilder
from parity.ir.dtypes import ALL_DTYPES, FLOAT_DTYPES
from parity.ir.ops import ops_in_family

_RNG_SEED = 1234


@dataclass
class Case:
    label: str
    graph: Graph
    inputs: list[np.ndarray]


def values(dtype: DType, n_random: int = 48, seed: int = 0) -> np.ndarray:
    """Edge values of ``dtype`` followed by random ones (1-D)."""
    rng = np.random.default_rng(_RNG_SEED + seed)
    if dtype.is_bool:
        return np.array([True, False, True, True, False] + list(rng.random(n_random) < 0.5))
    if dtype.is_float:
        info = ml_dtypes.finfo(dtype.numpy)
        edge = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, 1e-3, -7.25, 100.0, -100.0,
                np.inf, -np.inf, np.nan, float(info.smallest_subnormal), -float(info.smallest_normal),
                float(info.max), -float(info.max), 0.75, -0.999, 20.0, -20.0, 88.5, -88.5, 709.5, 1e20]
        rand = np.concatenate([rng.normal(0, 3, n_random // 2),
                               rng.choice([-1, 1], n_random - n_random // 2)
                               * 10.0 ** rng.uniform(-6, 6, n_random - n_random // 2)])
        with np.errstate(over="ignore"):
            return np.array(edge + list(rand)).astype(dtype.numpy)
    info = dtype.iinfo
    edge = [0, 1, 2, 7, 100, int(info.max), int(info.max) - 1, int(info.min), int(info.min) + 1]
    if dtype.is_signed:
        edge += [-1, -2, -7, -100]
    rand = rng.integers(int(info.min), int(info.max), n_random, endpoint=True, dtype=np.int64)
    return np.array(edge + [int(v) for v in rand], dtype=np.int64).astype(dtype.numpy)


def _one(op: str, in_types, attrs=None, name=None) -> Graph:
    b = GraphBuilder(name or op)
    params = [b.input(t) for t in in_types]
    out = b.op(op, *params, **(attrs or {}))
    return b.build(list(out) if isinstance(out, tuple) else [out])


def _case(label, op, arrays, attrs=None) -> Case:
    types = [DType.from_numpy(a.dtype)[a.shape] for a in arrays]
    return Case(label, _one(op, types, attrs), list(arrays))


# -- elementwise ----------------------------------------------------------------------------


def _unary(op, dtype):
    x = values(dtype)
    return [_case("edges", op, [x]), _case("empty", op, [np.empty((0, 3), x.dtype)])]


def _pairs(dtype, y_values=None):
    v = values(dtype, n_random=0)
    ys = v if y_values is None else y_values
    x, y = (np.array(a, dtype=v.dtype) for a in zip(*itertools.product(v, ys)))
    rx, ry = values(dtype, 64, seed=1), values(dtype, 64, seed=2)
    return np.concatenate([x, rx]), np.concatenate([np.asarray(y, v.dtype), ry.astype(v.dtype)])


def _binary(op, dtype):
    if op.startswith("shift"):
        x = values(dtype, n_random=8)
        amounts = np.array([a for a in range(-2, dtype.bits + 3)], np.int64)
        if dtype.is_unsigned:
            amounts = np.concatenate([amounts[amounts >= 0], [dtype.iinfo.max]])
        xs, ys = (np.array(a) for a in zip(*itertools.product(x, amounts.astype(dtype.numpy))))
        return [_case("amounts", op, [xs.astype(dtype.numpy), ys.astype(dtype.numpy)])]
    x, y = _pairs(dtype)
    return [_case("pairs", op, [x, y]),
            _case("empty", op, [x[:0], y[:0]])]


def _select(op, dtype):
    v = values(dtype, seed=3)
    w = values(dtype, seed=4)[::-1].copy()
    pred = np.random.default_rng(5).random(v.size) < 0.5
    return [_case("mixed", op, [pred, v, w])]


def _clamp(op, dtype):
    x = values(dtype, seed=6)
    lo, hi = values(dtype, seed=7), values(dtype, seed=8)
    lo, hi = np.minimum(lo, hi), np.maximum(lo, hi)
    return [_case("random", op, [lo, x, hi])]


def _convert(op, dtype):
    out = []
    x = values(dtype, n_random=64)
    for dst in ALL_DTYPES:
        xs = x
        if dtype.is_float and dst.is_integer:  # NaN / out-of-range float→int is implementation-defined
            info = dst.iinfo
            with np.errstate(invalid="ignore"):
                wide = x.astype(np.float64)
                xs = x[np.isfinite(wide) & (np.trunc(wide) >= info.min) & (np.trunc(wide) <= info.max)]
        out.append(_case(f"to_{dst.short}", op, [xs], {"dtype": dst}))
    if dtype is DType.int64:  # round-to-odd paths: values just above and below ties
        ties = np.array([2**24 + 2**16 + 1, 2**53 + 1, -(2**60 + 2**36 + 1), 2049, 2**62 + 2**40], np.int64)
        out += [_case(f"ties_to_{d.short}", op, [ties], {"dtype": d}) for d in FLOAT_DTYPES]
    if dtype is DType.float64:
        ties = np.array([1 + 2**-8 + 2**-40, 1 + 2**-11 + 2**-40, 1 + 2**-11 - 2**-40, 1 + 2**-24 + 2**-60,
                         65519.99, 1e300, -1e-300, 3.4e38 * 2])
        out += [_case(f"ties_to_{d.short}", op, [ties], {"dtype": d}) for d in FLOAT_DTYPES]
    return out


def _bitcast(op, dtype):
    x = values(dtype, n_random=32)
    return [_case(f"to_{d.short}", op, [x], {"dtype": d})
            for d in ALL_DTYPES if not d.is_bool and d.bits == dtype.bits]


# -- creation and shape ----------------------------------------------------------------------


def _constant(op, dtype):
    b = GraphBuilder("constant")
    v = values(dtype).reshape(-1)[:30].reshape(5, 6)
    return [Case("values", b.build([b.constant(v)]), [])]


def _iota(op, dtype):
    out = []
    for shape, dim in (((3, 4), 1), ((300,), 0), ((0, 3), 1), ((2, 3), 0)):
        b = GraphBuilder("iota")
        out.append(Case(f"{shape}_{dim}", b.build([b.iota(dtype=dtype, shape=shape, dimension=dim)]), []))
    return out


def _grid(dtype, *shape, seed=0):
    n = math.prod(shape)
    v = values(dtype, n_random=max(n, 8), seed=seed)
    return np.resize(v, n).reshape(shape)


def _shape_ops(op, dtype):
    x = _grid(dtype, 2, 3, 4)
    table = {
        "reshape": [([x], {"shape": (4, 6)}), ([_grid(dtype, 0, 3)], {"shape": (3, 0)}),
                    ([_grid(dtype, 1).reshape(())], {"shape": (1, 1)})],
        "broadcast_in_dim": [([_grid(dtype, 3)], {"shape": (2, 3), "broadcast_dimensions": (1,)}),
                             ([_grid(dtype, 1, 3)], {"shape": (4, 3), "broadcast_dimensions": (0, 1)}),
                             ([_grid(dtype, 1).reshape(())], {"shape": (2, 2), "broadcast_dimensions": ()}),
                             ([_grid(dtype, 1, 3)], {"shape": (0, 3), "broadcast_dimensions": (0, 1)})],
        "transpose": [([x], {"permutation": (2, 0, 1)})],
        "slice": [([_grid(dtype, 5, 6)], {"start_indices": (1, 0), "limit_indices": (4, 6), "strides": (2, 3)}),
                  ([_grid(dtype, 5, 6)], {"start_indices": (2, 2), "limit_indices": (2, 5), "strides": (1, 1)})],
        "concatenate": [([_grid(dtype, 2, 3), _grid(dtype, 1, 3, seed=1), _grid(dtype, 0, 3)], {"dimension": 0})],
        "pad": [([_grid(dtype, 3, 4), _grid(dtype, 1, seed=2).reshape(())],
                 {"edge_padding_low": (1, -1), "edge_padding_high": (-1, 2), "interior_padding": (1, 0)}),
                ([_grid(dtype, 0, 2), _grid(dtype, 1, seed=2).reshape(())],
                 {"edge_padding_low": (1, 0), "edge_padding_high": (0, 1), "interior_padding": (2, 1)})],
        "reverse": [([_grid(dtype, 3, 4)], {"dimensions": (0, 1)}), ([_grid(dtype, 0, 4)], {"dimensions": (0,)})],
    }
    return [_case(f"{op}{i}", op, arrays, attrs) for i, (arrays, attrs) in enumerate(table[op])]


# -- indexing ---------------------------------------------------------------------------------


def _indexing(op, dtype):
    rng = np.random.default_rng(9)
    x = _grid(dtype, 4, 5)
    if op == "gather":
        idx = rng.integers(0, 4, (3, 5))
        return [_case("i64", op, [x, idx.astype(np.int64)], {"axis": 0}),
                _case("u8_axis1", op, [x, rng.integers(0, 5, (4, 2)).astype(np.uint8)], {"axis": 1}),
                _case("empty", op, [x, np.zeros((4, 0), np.int32)], {"axis": 1})]
    if op == "scatter":
        out = [_case("replace", op, [x, np.argsort(rng.random((4, 5)), axis=0)[:3].astype(np.int32),
                                    _grid(dtype, 3, 5, seed=1)], {"axis": 0, "reduce": "replace"})]
        if not dtype.is_bool:
            idx = rng.integers(0, 5, (4, 7)).astype(np.int64)
            out.append(_case("add", op, [x, idx, _grid(dtype, 4, 7, seed=2)], {"axis": 1, "reduce": "add"}))
        return out
    if op == "dynamic_slice":
        starts = [(-2, 4), (1, 1), (9, -9)]
        return [_case(f"starts{s}", op, [_grid(dtype, 5, 6), *(np.array(v, np.int32) for v in s)],
                      {"slice_sizes": (3, 4)}) for s in starts]
    starts = [(4, -1), (1, 2)]
    return [_case(f"starts{s}", op, [_grid(dtype, 5, 6), _grid(dtype, 2, 3, seed=3),
                                     *(np.array(v, np.int64) for v in s)]) for s in starts]


# -- reductions, scans, sorting ------------------------------------------------------------------


def _reductions(op, dtype):
    x = _grid(dtype, 4, 6)
    out = []
    for axes in ((0,), (1,), (0, 1), ()):
        out.append(_case(f"axes{axes}", op, [x], {"axes": axes}))
    out.append(_case("empty", op, [x[:0]], {"axes": (0,)}))
    if dtype.is_float:
        zeros = np.array([[-0.0, -0.0], [-0.0, -0.0]], dtype.numpy)
        out.append(_case("neg_zeros", op, [zeros], {"axes": (0,)}))
    return out


def _args(op, dtype):
    x = _grid(dtype, 4, 6)
    x[1, 2] = x[1, 4] = x[1, 0]  # ties
    out = [_case("axis1", op, [x], {"axis": 1}), _case("axis0_i32", op, [x], {"axis": 0, "index_dtype": DType.int32})]
    if dtype.is_float:
        y = x.copy()
        y[2, 3] = y[2, 5] = np.nan
        out.append(_case("nan", op, [y], {"axis": 1}))
    return out


def _scans(op, dtype):
    x = _grid(dtype, 4, 6)
    if op == "cumprod" and dtype.is_float:
        x = (_small(DType.float64, 4, 6, seed=4) / 2).astype(dtype.numpy)
    out = [_case(f"axis{a}_rev{r}", op, [x], {"axis": a, "reverse": r}) for a in (0, 1) for r in (False, True)]
    out.append(_case("long", op, [_grid(dtype, 37, seed=5)], {"axis": 0}))
    return out


def _sorting(op, dtype):
    x = _grid(dtype, 3, 9)
    x[0, :4] = x[0, 5]  # ties
    if dtype.is_float:
        x[1, 1] = x[1, 6] = np.nan
        x[2, :4] = np.array([0.0, -0.0, 0.0, -0.0], dtype.numpy)
    if op == "sort":
        return [_case(f"axis{a}_desc{d}", op, [x], {"axis": a, "descending": d}) for a in (0, 1) for d in (False, True)]
    return [_case(f"k{k}_largest{largest}", op, [x], {"k": k, "largest": largest})
            for k in (0, 3, 9) for largest in (True, False)]


# -- contractions and windows -------------------------------------------------------------------


def _small(dtype, *shape, seed=0):
    """Finite values of moderate size (accumulations of inf are not the point here)."""
    rng = np.random.default_rng(seed + 40)
    if dtype.is_float:
        return rng.normal(0, 2, shape).astype(dtype.numpy)
    return rng.integers(-50, 50, shape).astype(dtype.numpy)


def _dot(op, dtype):
    a, b = _small(dtype, 3, 4), _small(dtype, 4, 5, seed=1)
    specs = [
        ("matmul", [a, b], ((1,), (0,), (), ())),
        ("batch", [_small(dtype, 2, 3, 4), _small(dtype, 2, 4, 5, seed=1)], ((2,), (1,), (0,), (0,))),
        ("two_contracting", [_small(dtype, 2, 3, 4), _small(dtype, 4, 5, 2, seed=1)], ((0, 2), (2, 0), (), ())),
        ("outer", [_small(dtype, 3), _small(dtype, 2, seed=1)], ((), (), (), ())),
        ("transposed_batch", [_small(dtype, 4, 2, 3), _small(dtype, 5, 4, 2, seed=1)], ((0,), (1,), (1,), (2,))),
        ("empty_contract", [_small(dtype, 3, 0), _small(dtype, 0, 2, seed=1)], ((1,), (0,), (), ())),
    ]
    if dtype.is_integer:  # wraparound
        big = np.full((2, 2), dtype.iinfo.max, dtype.numpy)
        specs.append(("wrap", [big, big], ((1,), (0,), (), ())))
    names = ("lhs_contracting_dims", "rhs_contracting_dims", "lhs_batch_dims", "rhs_batch_dims")
    return [_case(label, op, arrays, dict(zip(names, dims))) for label, arrays, dims in specs]


def _conv(op, dtype):
    specs = [
        ("2d_pad", (2, 3, 6, 6), (4, 3, 3, 3), dict(window_strides=(1, 1), padding=((1, 1), (1, 1)),
                                                   lhs_dilation=(1, 1), rhs_dilation=(1, 1))),
        ("1d_groups_stride", (2, 6, 9), (4, 3, 3), dict(window_strides=(2,), padding=((0, 1),), lhs_dilation=(1,),
                                                        rhs_dilation=(2,), feature_group_count=2)),
        ("transposed", (1, 2, 4, 3), (3, 2, 2, 2), dict(window_strides=(1, 1), padding=((1, -1), (0, 1)),
                                                       lhs_dilation=(2, 3), rhs_dilation=(1, 1))),
        ("no_fit", (1, 1, 2), (1, 1, 4), dict(window_strides=(1,), padding=((0, 0),), lhs_dilation=(1,),
                                              rhs_dilation=(1,))),
    ]
    return [_case(label, op, [_small(dtype, *ls), _small(dtype, *rs, seed=1)], attrs)
            for label, ls, rs, attrs in specs]


def _window(op, dtype):
    x = _grid(dtype, 1, 2, 5, 5)
    if dtype.is_float:
        x.reshape(-1)[7] = np.nan
    out = []
    for kind in ("max", "sum"):
        xs = x if kind == "max" or dtype.is_integer else _small(dtype, 1, 2, 5, 5)  # ints: wraparound
        out.append(_case(f"{kind}_pool", op, [xs], dict(kind=kind, window_dimensions=(1, 1, 2, 2),
                         window_strides=(1, 1, 2, 2), padding=((0, 0), (0, 0), (0, 1), (1, 0)),
                         window_dilations=(1, 1, 1, 1))))
        out.append(_case(f"{kind}_dilated", op, [xs], dict(kind=kind, window_dimensions=(1, 2, 3, 2),
                         window_strides=(1, 1, 1, 2), padding=((0, 0), (0, 0), (1, -1), (0, 0)),
                         window_dilations=(1, 1, 2, 1))))
    return out


# op -> its case builder, by the op table's families (a new op of a family gets its cases).
_BUILDERS = {
    **dict.fromkeys(ops_in_family("unary"), _unary),
    **dict.fromkeys(ops_in_family("binary"), _binary),
    "select": _select, "clamp": _clamp, "convert": _convert, "bitcast_convert": _bitcast,
    "constant": _constant, "iota": _iota,
    **dict.fromkeys(ops_in_family("shape"), _shape_ops),
    **dict.fromkeys(ops_in_family("indexing"), _indexing),
    **dict.fromkeys(ops_in_family("reduction"), _reductions), "argmax": _args, "argmin": _args,
    **dict.fromkeys(ops_in_family("scan"), _scans),
    "sort": _sorting, "top_k": _sorting, "dot_general": _dot, "convolution": _conv, "reduce_window": _window,
}


def primitive_names() -> list[str]:
    return list(_BUILDERS)


def cases(op: str, dtype: DType) -> list[Case]:
    """The cases of ``op`` with operand 0 (or the result, for constant/iota) of ``dtype``."""
    return _BUILDERS[op](op, dtype)
