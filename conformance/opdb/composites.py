"""Composite families: activations, statistics, normalization, pooling, losses, masking
and random draws. Each runs natively where a backend claims it and through its
decomposition elsewhere; conformance checks both paths with the same cases.
"""

from __future__ import annotations

import numpy as np

from ...ir.dtypes import ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, DType
from ...ir.ops import OP_TABLE, ops_in_family
from ...ir.types import tensor as _t
from .. import values as V
from ..case import Case, ErrorCase
from .common import EDGE, LAYOUT, LONG, case, layouts, ops_of
from .reductions import LONG_TERMS
from .structural import mixed

_F = FLOAT_DTYPES

# op -> attribute variants (name, attrs) beyond the defaults
_ACTIVATION_ATTRS = {
    "leaky_relu": [("slope", {"negative_slope": 0.2})],
    "elu": [("alpha", {"alpha": 0.5})],
    "gelu": [("tanh", {"approximate": "tanh"})],
    "softplus": [("beta", {"beta": 2.0, "threshold": 10.0})],
    "hardtanh": [("range", {"min_val": -2.0, "max_val": 3.0})],
}
_ACTIVATIONS = ops_in_family("activations")


def _activation_cases() -> list[Case]:
    out = []
    for op in _ACTIVATIONS:
        for d in _F:
            out += layouts(op, d, lambda rng, shape, d=d: (V.normal(rng, d, shape, 4),))
            out.append(case(op, d, "specials", (V.specials(d),), tags=(EDGE,)))
            out.append(case(op, d, "wide", lambda rng, d=d: (V.magnitudes(rng, d, (64,), -30, 12),), tags=(EDGE,)))
            for name, attrs in _ACTIVATION_ATTRS.get(op, []):
                out.append(case(op, d, name, lambda rng, d=d: (V.normal(rng, d, (5, 6), 4),), attrs))
    return out


def _special_cases() -> list[Case]:
    """lgamma and digamma on float16/bfloat16/float32: ordinary values, negative non-integers,
    the zeros of lgamma (1, 2, −2.457…) and ψ (1.4616…) with their float neighbours, poles and
    specials, and magnitudes across the dtype's range."""
    out = []
    zeros = [1.0, 2.0, 1.4616321449683623, -2.4570247382208006, -0.5040830082644554]
    for op in ops_in_family("special"):
        for d in OP_TABLE[op].dtypes:
            out += layouts(op, d, lambda rng, shape, d=d: (V.cast(rng.uniform(0.05, 12.0, shape), d),))
            out.append(case(op, d, "negative", lambda rng, d=d: (V.cast(rng.uniform(-30.0, 0.0, (64,)), d),)))
            near = [np.nextafter(V.cast([z], d), V.cast([s * np.inf], d)) for z in zeros for s in (-1, 1)]
            out.append(case(op, d, "zeros", (np.concatenate([V.cast(zeros, d), *near]),), tags=(EDGE,)))
            out.append(case(op, d, "poles", (V.cast([0.0, -0.0, -1.0, -2.0, -7.0, -100.0, 1e-30, -1e-30], d),),
                            tags=(EDGE,)))
            out.append(case(op, d, "specials", (V.specials(d),), tags=(EDGE,)))
            out.append(case(op, d, "wide", lambda rng, d=d: (V.magnitudes(rng, d, (64,), -30, 127),), tags=(EDGE,)))
    return out


def _with_neg_inf_rows(d: DType) -> np.ndarray:
    """Rows a softmax must handle: ordinary, one -inf, all -inf, a NaN, a +inf, a huge spread."""
    rows = [[1.0, 2.0, 3.0, 0.5], [-np.inf, 0.0, 1.0, 2.0], [-np.inf] * 4, [np.nan, 1.0, 2.0, 3.0],
            [np.inf, 1.0, 0.0, -1.0], [-1e4, 0.0, 1e4, 3.0], [0.0, 0.0, 0.0, 0.0]]
    return V.cast(rows, d)


def _statistics_cases() -> list[Case]:
    out = []
    for d in _F:
        for op in ("softmax", "log_softmax"):
            out += [
                case(op, d, "axis1", lambda rng, d=d: (V.normal(rng, d, (4, 7)),), {"axis": 1}),
                case(op, d, "axis0", lambda rng, d=d: (V.normal(rng, d, (5, 3), 10),), {"axis": 0}),
                case(op, d, "specials", (_with_neg_inf_rows(d),), {"axis": 1}, tags=(EDGE,)),
                case(op, d, "size1", lambda rng, d=d: (V.normal(rng, d, (3, 1)),), {"axis": 1}, tags=(LAYOUT,)),
                case(op, d, "transposed", lambda rng, d=d: (V.transposed(V.normal(rng, d, (6, 4))),), {"axis": 0},
                     tags=(LAYOUT,)),
            ]
        for op in ("logsumexp", "mean", "var", "std"):
            out += [
                case(op, d, "axis1", lambda rng, d=d: (V.normal(rng, d, (4, 7)),), {"axes": (1,)}),
                case(op, d, "axes01", lambda rng, d=d: (V.normal(rng, d, (3, 4, 2)),), {"axes": (0, 1)}),
                case(op, d, "specials", (_with_neg_inf_rows(d),), {"axes": (1,)}, tags=(EDGE,)),
                case(op, d, "offset", lambda rng, d=d: (V.cast(100 + rng.standard_normal((3, 8)), d),), {"axes": (1,)}),
                case(op, d, "empty_axis", (V.specials(d)[:0].reshape(3, 0),), {"axes": (1,)}, tags=(LAYOUT,)),
                case(op, d, "transposed", lambda rng, d=d: (V.transposed(V.normal(rng, d, (6, 4))),), {"axes": (0,)},
                     tags=(LAYOUT,)),
            ]
        for op in ("var", "std"):
            out.append(case(op, d, "correction0", lambda rng, d=d: (V.normal(rng, d, (3, 6)),),
                            {"axes": (1,), "correction": 0}))
            out.append(case(op, d, "single", lambda rng, d=d: (V.normal(rng, d, (3, 1)),), {"axes": (1,)},
                            tags=(EDGE,)))  # n - correction = 0: inf or NaN
    out.append(case("mean", DType.float32, "long", lambda rng: (V.normal(rng, DType.float32, (LONG_TERMS,), 1.0),),
                    {"axes": (0,)}, tags=(LONG,)))
    return out


def _norm_params(rng, d: DType, shape):
    """weight and bias."""
    return V.normal(rng, d, shape, 1.0), V.normal(rng, d, shape, 1.0)


def _norm_stats(rng, d: DType, c: int):
    """running mean and (positive) running variance."""
    return V.normal(rng, d, (c,), 1.0), V.cast(rng.uniform(0.5, 2.0, size=(c,)), d)


def _normalization_cases() -> list[Case]:
    out = []
    params, stats = _norm_params, _norm_stats
    for d in _F:
        out += [
            case("layer_norm", d, "last", lambda rng, d=d: (V.normal(rng, d, (4, 6)), *params(rng, d, (6,))),
                 {"normalized_ndim": 1}),
            case("layer_norm", d, "last2", lambda rng, d=d: (V.normal(rng, d, (2, 3, 4)), *params(rng, d, (3, 4))),
                 {"normalized_ndim": 2, "eps": 1e-3}),
            case("layer_norm", d, "offset", lambda rng, d=d: (V.cast(50 + rng.standard_normal((3, 8)), d),
                                                              *params(rng, d, (8,))), {"normalized_ndim": 1},
                 tags=(EDGE,)),
            case("layer_norm", d, "constant_row", lambda rng, d=d: (V.cast(np.ones((2, 5)), d), *params(rng, d, (5,))),
                 {"normalized_ndim": 1}, tags=(EDGE,)),
            case("rms_norm", d, "last", lambda rng, d=d: (V.normal(rng, d, (4, 6)), V.normal(rng, d, (6,))),
                 {"normalized_ndim": 1, "eps": 1e-6}),
            case("rms_norm", d, "last2", lambda rng, d=d: (V.normal(rng, d, (2, 3, 4)), V.normal(rng, d, (3, 4))),
                 {"normalized_ndim": 2, "eps": 1e-5}),
            case("rms_norm", d, "zeros", lambda rng, d=d: (V.cast(np.zeros((2, 3)), d), V.normal(rng, d, (3,))),
                 {"normalized_ndim": 1, "eps": 1e-5}, tags=(EDGE,)),
            case("batch_norm", d, "training", lambda rng, d=d: (V.normal(rng, d, (4, 3, 5)), *params(rng, d, (3,)),
                                                                *stats(rng, d, 3)), {"training": True}),
            case("batch_norm", d, "training_2d", lambda rng, d=d: (V.normal(rng, d, (2, 2, 3, 3)),
                                                                   *params(rng, d, (2,)), *stats(rng, d, 2)),
                 {"training": True, "momentum": 0.3}),
            case("batch_norm", d, "eval", lambda rng, d=d: (V.normal(rng, d, (4, 3)), *params(rng, d, (3,)),
                                                            *stats(rng, d, 3)), {"training": False}),
            case("group_norm", d, "groups2", lambda rng, d=d: (V.normal(rng, d, (2, 4, 3)), *params(rng, d, (4,))),
                 {"groups": 2}),
            case("group_norm", d, "one_group", lambda rng, d=d: (V.normal(rng, d, (3, 2, 2, 2)), *params(rng, d, (2,))),
                 {"groups": 1, "eps": 1e-3}),
        ]
    return out


def _pool(kernel, stride=(), padding=(), **kw):
    return {"kernel": kernel, "stride": stride, "padding": padding, **kw}


def _pooling_cases() -> list[Case]:
    out = []
    for d in OP_TABLE["max_pool"].dtypes:
        out += [
            case("max_pool", d, "2d", lambda rng, d=d: (V.normal(rng, d, (2, 3, 6, 6)),), _pool((2, 2))),
            case("max_pool", d, "1d_padded_ceil", lambda rng, d=d: (V.normal(rng, d, (1, 2, 9)),),
                 _pool((3,), (2,), (1,), ceil_mode=True)),
            case("max_pool", d, "dilated", lambda rng, d=d: (V.normal(rng, d, (1, 1, 8)),),
                 _pool((2,), (1,), dilation=(3,))),
            case("max_pool", d, "specials", (V.specials(d).reshape(1, 1, -1),), _pool((2,)), tags=(EDGE,)),
        ]
    for d in _F:
        out += [
            case("avg_pool", d, "2d", lambda rng, d=d: (V.normal(rng, d, (2, 3, 6, 6)),), _pool((2, 2))),
            case("avg_pool", d, "padded_exclude", lambda rng, d=d: (V.normal(rng, d, (1, 2, 7)),),
                 _pool((3,), (2,), (1,), count_include_pad=False)),
            case("avg_pool", d, "ceil", lambda rng, d=d: (V.normal(rng, d, (1, 1, 5, 5)),),
                 _pool((2, 2), (2, 2), (1, 1), ceil_mode=True)),
            case("avg_pool", d, "specials", (V.specials(d).reshape(1, 1, -1),), _pool((2,)), tags=(EDGE,)),
            case("adaptive_avg_pool", d, "1d", lambda rng, d=d: (V.normal(rng, d, (2, 3, 7)),), {"output_size": (3,)}),
            case("adaptive_avg_pool", d, "2d", lambda rng, d=d: (V.normal(rng, d, (1, 2, 5, 6)),),
                 {"output_size": (2, 4)}),
            case("adaptive_avg_pool", d, "global", lambda rng, d=d: (V.normal(rng, d, (2, 2, 4, 4)),),
                 {"output_size": (1, 1)}),
            case("interpolate", d, "nearest", lambda rng, d=d: (mixed(rng, d, (1, 2, 5)),), {"size": (8,)},
                 tags=(EDGE,)),
            case("interpolate", d, "nearest_2d", lambda rng, d=d: (V.normal(rng, d, (1, 1, 3, 4)),), {"size": (6, 3)}),
            case("interpolate", d, "linear", lambda rng, d=d: (V.normal(rng, d, (2, 1, 5)),),
                 {"size": (9,), "mode": "linear"}),
            case("interpolate", d, "bilinear_corners", lambda rng, d=d: (V.normal(rng, d, (1, 2, 3, 4)),),
                 {"size": (5, 7), "mode": "bilinear", "align_corners": True}),
            case("interpolate", d, "trilinear_down", lambda rng, d=d: (V.normal(rng, d, (1, 1, 4, 4, 4)),),
                 {"size": (2, 3, 2), "mode": "trilinear"}),
        ]
    return out


def _scores(rng, d: DType, n=5, c=4, index=np.int64, ignore=None):
    """Logits [n, c] and class targets; target ``ignore`` (a position) set to -100."""
    target = rng.integers(0, c, size=(n,)).astype(index)
    if ignore is not None:
        target[ignore] = -100
    return V.normal(rng, d, (n, c)), target


def _loss_cases() -> list[Case]:
    out = []
    for d in _F:
        for reduction in ("mean", "sum", "none"):
            red = {"reduction": reduction}

            out += [
                case("cross_entropy", d, f"{reduction}", lambda rng, d=d: _scores(rng, d), red),
                case("cross_entropy", d, f"{reduction}_ignore", lambda rng, d=d: _scores(rng, d, ignore=1), red,
                     tags=(EDGE,)),
                case("cross_entropy", d, f"{reduction}_smooth", lambda rng, d=d: _scores(rng, d, index=np.int32),
                     {**red, "label_smoothing": 0.1}),
                case("cross_entropy", d, f"{reduction}_spatial",
                     lambda rng, d=d: (V.normal(rng, d, (2, 3, 4)), rng.integers(0, 3, size=(2, 4))), red),
                case("nll_loss", d, f"{reduction}", lambda rng, d=d: (V.cast(-np.abs(rng.standard_normal((5, 4))), d),
                                                                      rng.integers(0, 4, size=(5,))), red),
                case("nll_loss", d, f"{reduction}_ignore", lambda rng, d=d: (V.normal(rng, d, (4,)), np.array(2)),
                     {**red, "ignore_index": 2}, tags=(EDGE,)),
                case("mse_loss", d, f"{reduction}", lambda rng, d=d: (V.normal(rng, d, (3, 4)), V.normal(rng, d, (3, 4))),
                     red),
                case("mse_loss", d, f"{reduction}_specials", lambda rng, d=d: (mixed(rng, d, (16,)),
                                                                               V.normal(rng, d, (16,))), red,
                     tags=(EDGE,)),
            ]
    return out


def _masking_cases() -> list[Case]:
    out = []
    for d in INT_DTYPES:
        out.append(case("one_hot", d, "f32", lambda rng, d=d: (V.cast(rng.integers(0, 5, size=(2, 3)), d),),
                        {"num_classes": 5, "dtype": DType.float32}))
        out.append(case("one_hot", d, "out_of_range", (V.specials(d),), {"num_classes": 4, "dtype": DType.bool},
                        tags=(EDGE,)))  # out of [0, num_classes): an all-zero row (defined)
    for d in ALL_DTYPES:
        for op in ("tril", "triu"):
            out.append(case(op, d, "main", lambda rng, d=d: (mixed(rng, d, (4, 5)),)))
            out.append(case(op, d, "batched_diag", lambda rng, d=d: (mixed(rng, d, (2, 3, 4)),), {"diagonal": -1},
                            tags=(EDGE,)))
            out.append(case(op, d, "wide_diag", lambda rng, d=d: (mixed(rng, d, (3, 3)),), {"diagonal": 2}))
        out.append(case("masked_fill", d, "random", lambda rng, d=d: (mixed(rng, d, (3, 4)), rng.random((3, 4)) < 0.5,
                                                                      V.specials(d)[0].copy()), tags=(EDGE,)))
        out.append(case("masked_fill", d, "empty", lambda rng, d=d: (mixed(rng, d, (0, 4)), np.zeros((0, 4), bool),
                                                                     V.specials(d)[-1].copy()), tags=(LAYOUT,)))
    return out


_KEY = np.array([0x12345678, 0x9ABCDEF0], np.uint32)
_KEY2 = np.array([0, 42], np.uint32)


def _random_cases() -> list[Case]:
    u32 = DType.uint32
    out = [case("random_bits", u32, "vector", (_KEY,), {"shape": (16,)}),
           case("random_bits", u32, "block", (_KEY2,), {"shape": (3, 5)}),
           case("random_bits", u32, "empty", (_KEY,), {"shape": (0, 2)}, tags=(LAYOUT,))]
    for d in _F:
        s = d.short
        out += [case("uniform", u32, f"{s}_unit", (_KEY,), {"shape": (64,), "dtype": d}),
                case("uniform", u32, f"{s}_range", (_KEY2,), {"shape": (4, 8), "dtype": d, "low": -3.0, "high": 5.0}),
                case("normal", u32, f"{s}", (_KEY,), {"shape": (64,), "dtype": d}),
                case("normal", u32, f"{s}_block", (_KEY2,), {"shape": (3, 4), "dtype": d})]
        for p in (0.0, 0.3, 1.0):
            out.append(case("dropout", d, f"p{p}", lambda rng, d=d: (mixed(rng, d, (6, 7)), _KEY), {"p": p},
                            tags=(EDGE,) if p in (0.0, 1.0) else ("random",)))
    return out


IR_FAMILIES = ("activations", "special", "statistics", "normalization", "pooling", "losses", "masking", "random")
OPS = ops_of(IR_FAMILIES)


def cases() -> list[Case]:
    return (_activation_cases() + _special_cases() + _statistics_cases() + _normalization_cases() + _pooling_cases()
            + _loss_cases() + _masking_cases() + _random_cases())



f32, i64 = DType.float32, DType.int64

ERRORS = (
    ErrorCase("relu", (_t(DType.int32, 3),), {}, "dtype i32 is not accepted", "int"),
    ErrorCase("hardtanh", (_t(f32, 3),), {"min_val": 2.0, "max_val": 1.0}, "exceeds max_val", "range"),
    ErrorCase("gelu", (_t(f32, 3),), {"approximate": "erf"}, "must be one of", "approximate"),
    ErrorCase("softmax", (_t(f32, 3),), {"axis": 1}, "out of range", "axis"),
    ErrorCase("var", (_t(f32, 3),), {"axes": (0, 0)}, "repeat", "axes"),
    ErrorCase("layer_norm", (_t(f32, 2, 3), _t(f32, 2), _t(f32, 3)), {"normalized_ndim": 1},
              "must be the normalized trailing shape", "weight"),
    ErrorCase("layer_norm", (_t(f32, 2, 3), _t(f32, 3), _t(f32, 3)), {"normalized_ndim": 3}, "must be in 1..2", "ndim"),
    ErrorCase("batch_norm", (_t(f32, 1, 3), *[_t(f32, 3)] * 4), {"training": True},
              "training needs more than one value per channel", "single"),
    ErrorCase("group_norm", (_t(f32, 2, 4, 3), _t(f32, 4), _t(f32, 4)), {"groups": 3}, "divide the 4 channels", "groups"),
    ErrorCase("max_pool", (_t(f32, 1, 1, 3),), _pool((5,)), "does not fit spatial size", "fit"),
    ErrorCase("avg_pool", (_t(f32, 1, 1, 8),), _pool((2,), padding=(2,)), "exceeds half the", "pad"),
    ErrorCase("interpolate", (_t(f32, 1, 1, 4),), {"size": (8,), "mode": "bilinear"}, "takes 2 spatial dims", "mode"),
    ErrorCase("adaptive_avg_pool", (_t(f32, 1, 1, 4),), {"output_size": (0,)}, "must be ≥ 1", "zero"),
    ErrorCase("cross_entropy", (_t(f32, 3, 4), _t(i64, 4)), {}, "without the class dim", "target_shape"),
    ErrorCase("cross_entropy", (_t(f32, 3, 4), _t(i64, 3)), {"label_smoothing": 1.5}, "must be in [0, 1]", "smoothing"),
    ErrorCase("nll_loss", (_t(f32, 3, 4), _t(DType.int8, 3)), {}, "dtype i8 is not accepted", "target_dtype"),
    ErrorCase("mse_loss", (_t(f32, 3), _t(f32, 4)), {}, "insert a broadcast_in_dim", "shape"),
    ErrorCase("one_hot", (_t(f32, 3),), {"num_classes": 3, "dtype": f32}, "dtype f32 is not accepted", "float"),
    ErrorCase("tril", (_t(f32, 3),), {}, "needs a matrix", "rank1"),
    ErrorCase("masked_fill", (_t(f32, 3), _t(f32, 3), _t(f32)), {}, "mask must be bool", "mask"),
    ErrorCase("random_bits", (_t(DType.uint32, 3),), {"shape": (2,)}, "the key must be u32[2]", "key"),
    ErrorCase("uniform", (_t(DType.uint32, 2),), {"shape": (2,), "dtype": DType.int32}, "must be a float dtype",
              "dtype"),
    ErrorCase("uniform", (_t(DType.uint32, 2),), {"shape": (2,), "dtype": f32, "low": 1.0, "high": 0.0},
              "need finite low < high", "range"),
    ErrorCase("dropout", (_t(f32, 3), _t(DType.uint32, 2)), {"p": 1.5}, "p must be in [0, 1]", "p"),
)
