"""Reductions in row kernels: every reducer over trailing, leading, several, all and no
axes; NaN propagation, empty reductions, -0.0 sums, integer wraparound, argmax ties and
NaNs; float sums within the accumulation bound of the float64 oracle.
"""

from __future__ import annotations

import numpy as np
import pytest

from parity.ir import DType

from .conftest import accumulation_bound, assert_exact, graph_of, native, oracle, run

f16, bf16, f32, f64, i8, u32 = DType.float16, DType.bfloat16, DType.float32, DType.float64, DType.int8, DType.uint32
_RNG = np.random.default_rng(0)
AXES = [(2,), (0,), (1,), (0, 2), (0, 1, 2), ()]


def _floats(dtype, shape, specials=True):
    x = _RNG.normal(size=shape) * 4
    if specials and x.size >= 4:
        x.reshape(-1)[[1, 5]] = [-0.0, np.inf]
    return x.astype(dtype.numpy)


@pytest.mark.parametrize("axes", AXES, ids=str)
@pytest.mark.parametrize("dtype", [f16, bf16, f32, f64], ids=lambda d: d.short)
def test_float_sum_within_accumulation_bound(backend, dtype, axes):
    x = _floats(dtype, (3, 5, 7), specials=False)
    graph = graph_of(lambda b, a: b.reduce_sum(a, axes=axes), dtype[x.shape])
    (got,), _ = run(backend, graph, [x])
    (exact,) = oracle(graph, [x])
    (absum,) = oracle(graph, [np.abs(x)])
    n = int(np.prod([x.shape[a] for a in axes]))
    err = np.abs(got.astype(np.float64) - exact)
    # plus the final rounding to the output dtype (half an ulp ≤ ε·|sum|)
    assert (err <= accumulation_bound(absum, n, dtype) + float(dtype.finfo.eps) * np.abs(exact)).all()


@pytest.mark.parametrize("op", ["reduce_max", "reduce_min", "reduce_prod"])
@pytest.mark.parametrize("axes", AXES, ids=str)
@pytest.mark.parametrize("dtype", [bf16, f32, i8, u32], ids=lambda d: d.short)
def test_exact_reducers(backend, op, dtype, axes):
    if dtype.is_float:
        x = _floats(dtype, (3, 5, 7))
        x.reshape(-1)[9] = np.nan  # propagates through max/min/prod
        if op == "reduce_prod":
            x = np.sign(x).astype(dtype.numpy)  # ±1, ±0, ±inf, NaN: products are exact
    else:
        x = _RNG.integers(dtype.iinfo.min, dtype.iinfo.max, size=(3, 5, 7), endpoint=True).astype(dtype.numpy)
    graph = graph_of(lambda b, a: b.op(op, a, axes=axes), dtype[x.shape])
    (got,), _ = run(backend, graph, [x])
    (want,) = native(graph, [x])
    assert_exact(got, want, f"{op} {dtype.short} {axes}", signed_zero=op == "reduce_prod")


@pytest.mark.parametrize("dtype", [i8, u32, DType.int64], ids=lambda d: d.short)
def test_integer_sum_wraps(backend, dtype):
    info = dtype.iinfo
    x = np.array([[info.max, info.max, 3], [info.min, -1 if info.min else 1, 0]]).astype(dtype.numpy)
    graph = graph_of(lambda b, a: (b.reduce_sum(a, axes=(1,)), b.reduce_sum(a, axes=(0, 1))), dtype[x.shape])
    got, _ = run(backend, graph, [x])
    for g, w in zip(got, native(graph, [x])):
        assert_exact(g, w)


def test_sum_of_negative_zeros_is_positive_zero_and_empty_reductions_are_identities(backend):
    x = np.full((2, 3), -0.0, np.float32)
    graph = graph_of(lambda b, a: b.reduce_sum(a, axes=(1,)), f32[x.shape])
    (got,), _ = run(backend, graph, [x])
    assert not np.signbit(got).any()
    e = np.zeros((2, 0), np.float32)
    ops = ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min"]
    graph = graph_of(lambda b, a: tuple(b.op(op, a, axes=(1,)) for op in ops), f32[e.shape])
    got, _ = run(backend, graph, [e])
    assert [g.tolist() for g in got] == [[0.0, 0.0], [1.0, 1.0], [-np.inf, -np.inf], [np.inf, np.inf]]
    ei = np.zeros((0, 2), np.int8)
    graph = graph_of(lambda b, a: (b.reduce_max(a, axes=(0,)), b.reduce_min(a, axes=(0,))), i8[ei.shape])
    got, _ = run(backend, graph, [ei])
    assert [g.tolist() for g in got] == [[-128, -128], [127, 127]]


def test_reduce_over_an_empty_kept_dim_launches_nothing(backend):
    x = np.zeros((0, 4), np.float32)
    graph = graph_of(lambda b, a: b.reduce_sum(a, axes=(1,)), f32[x.shape])
    (got,), exe = run(backend, graph, [x])
    assert got.shape == (0,) and exe.kernels_per_call == 0


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("dtype", [f16, f32, i8, u32], ids=lambda d: d.short)
def test_argmax_argmin_first_index_on_ties_and_nan(backend, op, dtype):
    if dtype.is_float:
        x = np.array([[1, 3, 3, 0], [np.nan, 2, np.nan, 5], [-np.inf] * 4, [2, 2, np.inf, np.nan],
                      [0.0, -0.0, -1, 7]], dtype.numpy)
    else:
        info = dtype.iinfo
        x = np.array([[1, 3, 3, 0], [info.min] * 4, [info.max, 0, info.max, info.min], [5, 6, 7, 8],
                      [0, 0, 1, 1]]).astype(dtype.numpy)
    for axis, index in ((1, DType.int64), (0, DType.int32)):
        graph = graph_of(lambda b, a: b.op(op, a, axis=axis, index_dtype=index), dtype[x.shape])
        (got,), _ = run(backend, graph, [x])
        (want,) = native(graph, [x])
        assert_exact(got, want, f"{op} {dtype.short} axis {axis}")


def test_bool_reductions(backend):
    x = _RNG.random((4, 6)) < 0.3
    x[0] = True
    x[1] = False
    graph = graph_of(lambda b, a: (b.reduce_and(a, axes=(1,)), b.reduce_or(a, axes=(1,)), b.reduce_or(a, axes=(0, 1)),
                                   b.reduce_and(a, axes=())), DType.bool[x.shape])
    got, _ = run(backend, graph, [x])
    for g, w in zip(got, native(graph, [x])):
        assert_exact(g, w)


def test_long_rows(backend):
    x = _RNG.normal(size=(3, 5000)).astype(np.float32)
    graph = graph_of(lambda b, a: (b.reduce_max(a, axes=(1,)), b.reduce_sum(a, axes=(1,))), f32[x.shape])
    (mx, sm), _ = run(backend, graph, [x])
    assert_exact(mx, x.max(axis=1))
    exact = x.astype(np.float64).sum(axis=1)
    assert (np.abs(sm - exact) <= accumulation_bound(np.abs(x).astype(np.float64).sum(axis=1), 5000, f32)).all()


@pytest.mark.parametrize("dtype", [bf16, f32], ids=lambda d: d.short)
def test_float_products_do_not_overflow_midway(backend, dtype):
    # float32's range holds the product but not the partial products 1e30·1e30: float64 does
    x = np.array([[1e30, 1e30, 3.0, 1e-30, 1e-30], [1e-30, 1e-30, 1e-20, 1e30, 1e30]], dtype.numpy)
    graph = graph_of(lambda b, a: b.reduce_prod(a, axes=(1,)), dtype[x.shape])
    (got,), _ = run(backend, graph, [x])
    want = np.prod(x.astype(np.float64), axis=1).astype(dtype.numpy)
    assert np.isfinite(want.astype(np.float64)).all() and want[1] != 0
    assert_exact(got, want)


def test_row_kernel_of_a_single_element(backend):
    # every dim has size 1: the output offset is the literal 0 and the stored value a [1, 1] block
    x = np.array([[2.5], [np.inf]], np.float32)
    for a in (x[:1], x[1:]):
        graph = graph_of(lambda b, v: b.op("log_softmax", v, axis=0), f32[1, 1])
        (got,), _ = run(backend, graph, [a])
        assert_exact(got, np.array([[0.0 if np.isfinite(a).all() else np.nan]], np.float32))
