"""Contractions: dot_general, convolution, and the composites built on them
(linear, matmul, einsum, embedding, scaled_dot_product_attention).

Accumulation cases include an empty contraction (the result is 0), NaN/inf terms,
integer wraparound, non-contiguous operands and one dot product over 2**20 terms.
"""

from __future__ import annotations

import numpy as np

from ...ir.dtypes import ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, DType
from ...ir.ops import OP_TABLE
from ...ir.types import tensor as _t
from .. import values as V
from ..case import Case, ErrorCase
from .common import EDGE, LAYOUT, LONG, case, ops_of
from .reductions import LONG_TERMS
from .structural import mixed


def _dot(lc, rc, lb=(), rb=()):
    return {"lhs_contracting_dims": lc, "rhs_contracting_dims": rc, "lhs_batch_dims": lb, "rhs_batch_dims": rb}


# (name, lhs shape, rhs shape, attrs, tags)
_DOT_ROWS = [
    ("matrix", (4, 5), (5, 3), _dot((1,), (0,)), ()),
    ("batched", (2, 3, 4), (2, 4, 5), _dot((2,), (1,), (0,), (0,)), ()),
    ("vector", (7,), (7,), _dot((0,), (0,)), (EDGE,)),  # a rank-0 result (OpenVINO: a SIGSEGV)
    ("two_contracting", (3, 4, 2), (4, 2, 5), _dot((1, 2), (0, 1)), ()),
    ("outer", (3,), (4,), _dot((), ()), ()),
    ("empty_k", (3, 0), (0, 2), _dot((1,), (0,)), (LAYOUT,)),
]


def _dot_cases() -> list[Case]:
    op, out = "dot_general", []
    for d in OP_TABLE[op].dtypes:
        for name, ls, rs, attrs, tags in _DOT_ROWS:
            out.append(case(op, d, name, lambda rng, d=d, ls=ls, rs=rs: (V.normal(rng, d, ls), V.normal(rng, d, rs)),
                            attrs, tags=tags or ("random",)))
        out += [
            case(op, d, "specials", lambda rng, d=d: (mixed(rng, d, (6, 8)), mixed(rng, d, (8, 3))), _dot((1,), (0,)),
                 tags=(EDGE,)),
            case(op, d, "full_range", lambda rng, d=d: (V.full_range(rng, d, (3, 4)), V.full_range(rng, d, (4, 2))),
                 _dot((1,), (0,)), tags=(EDGE,)),
            case(op, d, "transposed", lambda rng, d=d: (V.transposed(V.normal(rng, d, (5, 6))),
                                                        V.transposed(V.normal(rng, d, (6, 4)))),
                 _dot((1,), (0,)), tags=(LAYOUT,)),
        ]
    out.append(case(op, DType.float32, "long", lambda rng: (V.normal(rng, DType.float32, (LONG_TERMS,), 1.0),
                                                            V.normal(rng, DType.float32, (LONG_TERMS,), 1.0)),
                    _dot((0,), (0,)), tags=(LONG,)))
    return out


def _conv(strides, padding, lhs_dilation, rhs_dilation, groups=1):
    return {"window_strides": strides, "padding": padding, "lhs_dilation": lhs_dilation,
            "rhs_dilation": rhs_dilation, "feature_group_count": groups}


_CONV_ROWS = [
    ("1d", (2, 3, 10), (4, 3, 3), _conv((1,), ((1, 1),), (1,), (1,)), ()),
    ("2d_grouped_strided", (1, 4, 7, 6), (4, 2, 3, 2), _conv((2, 1), ((1, 0), (0, 1)), (1, 1), (1, 2), 2), ()),
    ("transposed", (1, 2, 5), (3, 2, 3), _conv((1,), ((2, 2),), (2,), (1,)), ()),
    ("3d", (1, 2, 3, 4, 4), (2, 2, 2, 2, 2), _conv((1, 1, 1), ((0, 0),) * 3, (1, 1, 1), (1, 1, 1)), ()),
    ("no_fit", (1, 1, 2), (1, 1, 4), _conv((1,), ((0, 0),), (1,), (1,)), (LAYOUT,)),
]


def _conv_cases() -> list[Case]:
    op, out = "convolution", []
    for d in FLOAT_DTYPES:
        for name, ls, rs, attrs, tags in _CONV_ROWS:
            out.append(case(op, d, name, lambda rng, d=d, ls=ls, rs=rs: (V.normal(rng, d, ls), V.normal(rng, d, rs)),
                            attrs, tags=tags or ("random",)))
        out.append(case(op, d, "specials", lambda rng, d=d: (mixed(rng, d, (1, 2, 8)), V.normal(rng, d, (2, 2, 3))),
                        _CONV_ROWS[0][3], tags=(EDGE,)))
        out.append(case(op, d, "subnormals",  # products and sums of subnormals (FTZ runtimes flush them)
                        lambda rng, d=d: (V.subnormals(rng, d, (1, 2, 8)), V.normal(rng, d, (2, 2, 3), scale=1.0)),
                        _CONV_ROWS[0][3], tags=(EDGE,)))
        out.append(case(op, d, "transposed_input",
                        lambda rng, d=d: (V.transposed(V.normal(rng, d, (2, 3, 10))), V.normal(rng, d, (4, 3, 3))),
                        _CONV_ROWS[0][3], tags=(LAYOUT,)))
    return out


def _nn_cases() -> list[Case]:
    out = []
    for d in FLOAT_DTYPES:
        def lin(rng, d, shape=(3, 5)):
            return V.normal(rng, d, shape), V.normal(rng, d, (4, shape[-1])), V.normal(rng, d, (4,))

        out += [
            case("linear", d, "matrix", lambda rng, d=d: lin(rng, d)),
            case("linear", d, "batched", lambda rng, d=d: lin(rng, d, (2, 3, 6))),
            case("linear", d, "vector", lambda rng, d=d: lin(rng, d, (5,))),
            case("linear", d, "specials", lambda rng, d=d: (mixed(rng, d, (4, 5)), V.normal(rng, d, (3, 5)),
                                                            V.normal(rng, d, (3,))), tags=(EDGE,)),
            case("linear", d, "empty_batch", lambda rng, d=d: lin(rng, d, (0, 5)), tags=(LAYOUT,)),
            # results that are small normals, without cancellation (a flush of normals shows)
            case("linear", d, "small_normals", lambda rng, d=d: (V.small_normals(rng, d, (3, 4), root=2),
                                                                 V.small_normals(rng, d, (2, 4), root=2),
                                                                 V.small_normals(rng, d, (2,))), tags=(EDGE,)),
        ]
    for d in OP_TABLE["matmul"].dtypes:
        for name, a, b in (("matrix", (3, 4), (4, 5)), ("batch_broadcast", (2, 1, 3, 4), (5, 4, 2)),
                           ("vec_mat", (4,), (4, 3)), ("mat_vec", (2, 3, 4), (4,)), ("vec_vec", (6,), (6,))):
            out.append(case("matmul", d, name, lambda rng, d=d, a=a, b=b: (V.normal(rng, d, a), V.normal(rng, d, b))))
        out.append(case("matmul", d, "transposed", lambda rng, d=d: (V.transposed(V.normal(rng, d, (4, 3))),
                                                                     V.normal(rng, d, (3, 2))), tags=(LAYOUT,)))
        for name, eq, shapes in (("bmm", "bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("trace", "ii", [(4, 4)]),
                                 ("outer", "i,j->ij", [(3,), (4,)]), ("ellipsis", "...ij,jk", [(2, 3, 4), (4, 2)]),
                                 ("three", "ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]), ("sum_all", "ij->", [(3, 5)])):
            out.append(case("einsum", d, name,
                            lambda rng, d=d, shapes=shapes: [V.normal(rng, d, s) for s in shapes], {"equation": eq}))
    for k, d in enumerate(ALL_DTYPES):
        index = INT_DTYPES[k % len(INT_DTYPES)]
        out += [
            case("embedding", d, "rows", lambda rng, d=d, i=index: (mixed(rng, d, (6, 4)),
                                                                     rng.integers(0, 6, size=(2, 3)).astype(i.numpy)),
                 tags=(EDGE,)),
            case("embedding", d, "scalar_index", lambda rng, d=d: (mixed(rng, d, (3, 2)), np.array(2, np.int64)),
                 tags=(LAYOUT,)),
        ]
    return out


def _attention_cases() -> list[Case]:
    op, out = "scaled_dot_product_attention", []
    for d in FLOAT_DTYPES:
        def qkv(rng, d, b=(2,), length=3, source=4, e=5, ev=3):
            return (V.normal(rng, d, (*b, length, e), 1.0), V.normal(rng, d, (*b, source, e), 1.0),
                    V.normal(rng, d, (*b, source, ev), 1.0))

        def with_mask(rng, d, bool_mask=True):
            q, k, v = qkv(rng, d)
            if bool_mask:
                m = rng.random((2, 3, 4)) < 0.6
                m[0, 1, :] = False  # a fully masked query: an all-zero row
            else:
                m = V.cast(np.where(rng.random((2, 3, 4)) < 0.3, -np.inf, rng.standard_normal((2, 3, 4))), d)
            return q, k, v, m

        dummy = np.array(False)
        out += [
            case(op, d, "plain", lambda rng, d=d: (*qkv(rng, d), dummy), {"scale": 5 ** -0.5}),
            case(op, d, "causal", lambda rng, d=d: (*qkv(rng, d, length=4, source=4), dummy),
                 {"scale": 0.5, "causal": True}),
            # top-left aligned when L != S: fewer queries than keys, and more
            case(op, d, "causal_wide", lambda rng, d=d: (*qkv(rng, d, length=3, source=5), dummy),
                 {"scale": 0.5, "causal": True}, tags=(EDGE,)),
            case(op, d, "causal_tall", lambda rng, d=d: (*qkv(rng, d, length=5, source=3), dummy),
                 {"scale": 0.5, "causal": True}, tags=(EDGE,)),
            case(op, d, "bool_mask", lambda rng, d=d: with_mask(rng, d), {"scale": 0.4, "has_mask": True},
                 tags=(EDGE,)),
            case(op, d, "additive_mask", lambda rng, d=d: with_mask(rng, d, bool_mask=False),
                 {"scale": 0.4, "has_mask": True}, tags=(EDGE,)),
            case(op, d, "masked_row_infinite_values", lambda rng, d=d: _infinite_values(with_mask(rng, d)),
                 {"scale": 0.4, "has_mask": True}, tags=(EDGE,)),
            case(op, d, "unbatched", lambda rng, d=d: (*qkv(rng, d, b=()), dummy), {"scale": 1.0}),
            case(op, d, "large_scores", lambda rng, d=d: _scaled(qkv(rng, d), 8.0, d) + (dummy,), {"scale": 1.0},
                 tags=(EDGE,)),
            case(op, d, "infinite_scores", lambda rng, d=d: _infinite_rows(qkv(rng, d), d) + (dummy,),
                 {"scale": 0.5}, tags=(EDGE,)),
        ]
        out += _long_attention_cases(op, d, qkv)
    return out


def _long_attention_cases(op: str, d, qkv) -> list[Case]:
    """[B, H, L, E] attention over 512 keys: where a backend may take a fused kernel instead of
    the decomposition (parity[inductor]: torch's CPU flash attention, backends/inductor/composites.py)."""
    keys = 512

    def long_qkv(rng, d, length=2):
        return qkv(rng, d, b=(1, 2), length=length, source=keys, e=8, ev=8)

    def masked(rng, d, bool_mask):
        q, k, v = long_qkv(rng, d)
        if bool_mask:
            m = rng.random((1, 2, 2, keys)) < 0.6
            m[0, 1, 0, :] = False  # a query with nothing to attend to: an all-zero row
        else:
            m = V.cast(np.where(rng.random((1, 2, 2, keys)) < 0.3, -np.inf, rng.standard_normal((1, 2, 2, keys))), d)
        return q, k, v, m

    dummy = np.array(False)
    return [
        case(op, d, "long_keys", lambda rng, d=d: (*long_qkv(rng, d), dummy), {"scale": 8 ** -0.5}),
        case(op, d, "long_keys_causal", lambda rng, d=d: (*long_qkv(rng, d, length=4), dummy),
             {"scale": 0.5, "causal": True}, tags=(EDGE,)),
        case(op, d, "long_keys_bool_mask", lambda rng, d=d: masked(rng, d, True), {"scale": 0.4, "has_mask": True},
             tags=(EDGE,)),
        case(op, d, "long_keys_additive_mask", lambda rng, d=d: masked(rng, d, False),
             {"scale": 0.4, "has_mask": True}, tags=(EDGE,)),
    ]


def _infinite_values(qkvm):
    """The bool-mask case with inf and -inf among the values: the fully masked query's zero
    weights times inf give NaN in its row (the IR zeroes weights, not outputs, as torch)."""
    q, k, v, m = qkvm
    v = v.copy()
    v[0, 1, 0], v[0, 2, 2] = np.inf, -np.inf
    return q, k, v, m


def _infinite_rows(qkv, d: DType):
    """Keys whose first component is positive; one query with -inf there (every score of its
    row is -inf: the IR's softmax gives zeros, not NaN) and one with +inf (inf - inf: NaN)."""
    q, k, v = (a.astype(np.float64) for a in qkv)
    k[..., 0] = np.abs(k[..., 0]) + 0.5
    q[0, 1, 0], q[1, 2, 0] = -np.inf, np.inf
    return V.cast(q, d), V.cast(k, d), V.cast(v, d)


def _scaled(qkv, factor: float, d: DType):
    """q and k times ``factor`` (scores far from 0), v as it is."""
    q, k, v = qkv
    return V.cast(q.astype(np.float64) * factor, d), V.cast(k.astype(np.float64) * factor, d), v


IR_FAMILIES = ("contraction", "nn", "attention")
OPS = ops_of(IR_FAMILIES)


def cases() -> list[Case]:
    return _dot_cases() + _conv_cases() + _nn_cases() + _attention_cases()



f32, f64, i32 = DType.float32, DType.float64, DType.int32

ERRORS = (
    ErrorCase("dot_general", (_t(f32, 2, 3), _t(f32, 4, 2)), _dot((1,), (0,)), "does not match lhs dim", "sizes"),
    ErrorCase("dot_general", (_t(f32, 2, 3), _t(f64, 3)), _dot((1,), (0,)), "insert a convert", "dtype"),
    ErrorCase("dot_general", (_t(DType.int8, 2), _t(DType.int8, 2)), _dot((0,), (0,)), "dtype i8 is not accepted",
              "i8"),
    ErrorCase("dot_general", (_t(f32, 2, 3), _t(f32, 3)), _dot((1,), ()), "lists 0 dims", "count"),
    ErrorCase("convolution", (_t(f32, 1, 3), _t(f32, 1, 3)), _conv((), (), (), ()), "at least one spatial dim",
              "rank"),
    ErrorCase("convolution", (_t(f32, 1, 4, 5), _t(f32, 2, 4, 3)), _conv((1,), ((0, 0),), (1,), (1,), 3),
              "groups must divide", "groups"),
    ErrorCase("convolution", (_t(i32, 1, 1, 5), _t(i32, 1, 1, 3)), _conv((1,), ((0, 0),), (1,), (1,)),
              "dtype i32 is not accepted", "int"),
    ErrorCase("convolution", (_t(f32, 1, 1, 5), _t(f32, 1, 1, 3)), _conv((0,), ((0, 0),), (1,), (1,)),
              "entries must be >= 1", "stride"),
    ErrorCase("linear", (_t(f32, 2, 3), _t(f32, 4, 5), _t(f32, 4)), {}, "w must be [out, in]", "w"),
    ErrorCase("matmul", (_t(f32, 2, 3), _t(f32, 4, 5)), {}, "contracted sizes differ", "k"),
    ErrorCase("matmul", (_t(f32), _t(f32, 3)), {}, "operands need rank", "rank0"),
    ErrorCase("einsum", (_t(f32, 2, 3),), {"equation": "ijk->i"}, "does not fit operand 0", "rank"),
    ErrorCase("einsum", (_t(f32, 2, 3), _t(f32, 4, 5)), {"equation": "ij,jk->ik"}, "has sizes 3 and 4", "sizes"),
    ErrorCase("embedding", (_t(f32, 4, 2), _t(f32, 3)), {}, "dtype f32 is not accepted", "float_index"),
    ErrorCase("scaled_dot_product_attention", (_t(f32, 2, 3, 4), _t(f32, 2, 5, 3), _t(f32, 2, 5, 4), _t(f32)),
              {"scale": 1.0}, "k must be [*B, S, E]", "k"),
    ErrorCase("scaled_dot_product_attention", (_t(f32, 3, 4), _t(f32, 5, 4), _t(f32, 5, 2), _t(DType.bool, 3, 5)),
              {"scale": 1.0, "has_mask": True, "causal": True}, "causal excludes an explicit mask", "causal_mask"),
)
