"""Non-elementwise ops on XLA against the interpreter: conversion, creation, shape,
indexing, reductions, scans, sorting, contractions and windows, with edge cases."""

import ml_dtypes
import numpy as np
import pytest

from parity.ir import DType, GraphBuilder, bf16, evaluate, f16, f32, f64, i8, i32, i64, u8, u32

bool_ = DType.bool


def _exact(runner, contract, g, args, signed_zero=True):
    got, native = runner.both(g, args)
    for i, (a, w) in enumerate(zip(got, native)):
        contract.assert_exact(a, w, signed_zero=signed_zero, what=f"output {i}")
    return got


def test_convert_rounds_once_and_follows_the_ir(runner, contract):
    b = GraphBuilder()
    x64, xi = b.input(f64[4]), b.input(i64[4])
    xf = b.input(f32[5])
    g = b.build([b.convert(x64, dtype=bf16), b.convert(x64, dtype=f16), b.convert(xi, dtype=bf16),
                 b.convert(xi, dtype=f32), b.convert(xi, dtype=f16), b.convert(xf, dtype=bool_),
                 b.convert(xf, dtype=i8), b.convert(xi, dtype=u8)])
    args = [np.array([1 + 2**-8 + 2**-40, 1 + 2**-8, -(1 + 2**-8 + 2**-40), np.nan]),
            np.array([2**24 + 2**16 + 1, 2**60 + 2**36 + 1, -(2**53 + 1), 2049 * 2**20 + 1], np.int64),
            np.array([np.nan, -0.0, 0.5, -2.7, 3.9], np.float32)]
    got = _exact(runner, contract, g, args)
    assert float(got[0][0]) == 1.0078125 and float(got[2][0]) == 16908288.0  # past the tie: up


def test_bitcast_iota_constant(runner, contract):
    b = GraphBuilder()
    x = b.input(f32[3])
    g = b.build([b.bitcast_convert(x, dtype=i32), b.iota(dtype=i8, shape=(2, 300), dimension=1),
                 b.iota(dtype=bf16, shape=(4,)), b.constant(np.array([1.5, -0.0], ml_dtypes.bfloat16)),
                 b.constant(np.array([2**40], np.int64))])
    got = _exact(runner, contract, g, [np.array([1.0, -0.0, np.inf], np.float32)])
    assert got[1][0, -1] == 43 and got[4].dtype == np.int64  # wraps; stays 64-bit


def test_shape_ops(runner, contract):
    b = GraphBuilder()
    x = b.input(f32[2, 3])
    pad_value = b.input(f32[()])
    g = b.build([
        b.reshape(x, shape=(3, 2)), b.broadcast_in_dim(x, shape=(4, 2, 3), broadcast_dimensions=(1, 2)),
        b.transpose(x, permutation=(1, 0)), b.slice(x, start_indices=(0, 1), limit_indices=(2, 3), strides=(1, 2)),
        b.concatenate(x, x, dimension=1), b.reverse(x, dimensions=(0, 1)),
        b.pad(x, pad_value, edge_padding_low=(1, -1), edge_padding_high=(0, 2), interior_padding=(1, 1)),
    ])
    _exact(runner, contract, g, [np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5, np.array(-0.0, np.float32)])


def test_gather_scatter_take_along_axis(runner, contract):
    b = GraphBuilder()
    x, idx, upd = b.input(f32[3, 4]), b.input(i64[2, 5]), b.input(f32[2, 5])
    idx8 = b.input(u8[3, 2])
    g = b.build([b.gather(x, idx, axis=1), b.scatter(x, idx, upd, axis=1, reduce="add"),
                 b.gather(x, idx8, axis=0), b.scatter(x, b.convert(idx, dtype=u32), upd, axis=1, reduce="add")])
    # indices smaller than x on the other dim; duplicates accumulate; out of range clamps
    indices = np.array([[0, 3, 3, -5, 9], [1, 1, 2, 0, 3]], np.int64)
    args = [np.arange(12, dtype=np.float32).reshape(3, 4), indices, np.ones((2, 5), np.float32),
            np.array([[2, 0], [1, 200], [0, 0]], np.uint8)]
    got = _exact(runner, contract, g, args)
    assert got[0].tolist() == [[0, 3, 3, 0, 3], [5, 5, 6, 4, 7]]


def test_scatter_replace_and_empty(runner, contract):
    b = GraphBuilder()
    x, idx, upd = b.input(i32[2, 3]), b.input(i32[2, 3]), b.input(i32[2, 3])
    e, eidx = b.input(i32[2, 0]), b.input(i32[2, 0])
    g = b.build([b.scatter(x, idx, upd, axis=1, reduce="replace"), b.gather(e, eidx, axis=1),
                 b.scatter(x, b.input(i32[0, 3]), b.input(i32[0, 3]), axis=0, reduce="add")])
    perm = np.array([[2, 0, 1], [1, 2, 0]], np.int32)  # no duplicates: the winner is defined
    got = _exact(runner, contract, g, [np.zeros((2, 3), np.int32), perm, np.arange(6, dtype=np.int32).reshape(2, 3),
                                       np.zeros((2, 0), np.int32), np.zeros((2, 0), np.int32),
                                       np.zeros((0, 3), np.int32), np.zeros((0, 3), np.int32)])
    assert got[0].tolist() == [[1, 2, 0], [5, 3, 4]]


@pytest.mark.parametrize("start", [-3, 0, 2, 7, 2**31 - 1])
def test_dynamic_slices_clamp_and_never_wrap(runner, contract, start):
    b = GraphBuilder()
    x, s, t = b.input(f32[6]), b.input(i32[()]), b.input(u32[()])
    g = b.build([b.dynamic_slice(x, s, slice_sizes=(3,)), b.dynamic_slice(x, t, slice_sizes=(2,)),
                 b.dynamic_update_slice(x, b.input(f32[2]), s)])
    args = [np.arange(6, dtype=np.float32), np.array(start, np.int32), np.array(start % 2**32, np.uint32),
            np.array([-1, -2], np.float32)]
    got = _exact(runner, contract, g, args)
    assert got[0][0] == min(max(start, 0), 3)


@pytest.mark.parametrize("n", [5, 4097, 100_000])
def test_max_min_reductions_propagate_nan_on_long_rows(runner, contract, n):
    b = GraphBuilder()
    x = b.input(f32[3, n])
    g = b.build([b.reduce_max(x, axes=(1,)), b.reduce_min(x, axes=(1,)), b.argmax(x, axis=1),
                 b.argmin(x, axis=1), b.reduce_window(x, kind="max", window_dimensions=(1, n), window_strides=(1, 1),
                                                      padding=((0, 0), (0, 0)), window_dilations=(1, 1))])
    data = np.tile(np.arange(n, dtype=np.float32), (3, 1))
    data[0, n // 2] = np.nan
    data[1, -1] = np.nan
    got = _exact(runner, contract, g, [data])
    assert np.isnan(got[0][:2]).all() and got[0][2] == n - 1 and got[2].tolist() == [n // 2, n - 1, n - 1]


@pytest.mark.parametrize("dtype", [f32, bf16, i8, u32, f64, i64], ids=lambda d: d.short)
def test_reductions(runner, contract, dtype):
    b = GraphBuilder()
    x, e = b.input(dtype[4, 6]), b.input(dtype[0, 3])
    ops = ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min"]
    g = b.build([b.op(op, x, axes=(1,)) for op in ops] + [b.op(op, e, axes=(0,)) for op in ops]
                + [b.argmax(x, axis=0, index_dtype=u8), b.argmin(x, axis=1)])
    rng = np.random.default_rng(3)
    if dtype.is_float:
        data = rng.integers(-4, 5, (4, 6)).astype(dtype.numpy)  # sums and products are exact
        data[0] = -0.0
        data[1, 2] = np.nan
    else:
        info = dtype.iinfo
        data = rng.integers(info.min, info.max, (4, 6), endpoint=True, dtype=np.int64).astype(dtype.numpy)
        data[2] = 3  # ties
    _exact(runner, contract, g, [data, np.zeros((0, 3), dtype.numpy)], signed_zero=True)


def test_bool_reductions(runner, contract):
    b = GraphBuilder()
    x = b.input(bool_[3, 4])
    g = b.build([b.reduce_and(x, axes=(1,)), b.reduce_or(x, axes=(0, 1)), b.reduce_and(b.input(bool_[0]), axes=(0,))])
    _exact(runner, contract, g, [np.array([[1, 1, 1, 1], [1, 0, 1, 1], [0, 0, 0, 0]], bool), np.zeros(0, bool)])


@pytest.mark.parametrize("dtype", [f32, i32, u8], ids=lambda d: d.short)
def test_scans(runner, contract, dtype):
    b = GraphBuilder()
    x = b.input(dtype[3, 5])
    g = b.build([b.op(op, x, axis=1, reverse=rev) for op in ("cumsum", "cumprod", "cummax", "cummin")
                 for rev in (False, True)])
    data = np.array([[1, 2, 3, 4, 5], [2, 0, 1, 3, 1], [5, 4, 3, 2, 1]]).astype(dtype.numpy)
    if dtype.is_float:
        data[1, 2] = np.nan
    elif dtype is u8:
        data[0] = 200  # wraps
    _exact(runner, contract, g, [data])


@pytest.mark.parametrize("descending", [False, True])
def test_sort_is_stable_with_nan_order(runner, contract, descending):
    b = GraphBuilder()
    x = b.input(f32[2, 8])
    g = b.build([*b.sort(x, axis=1, descending=descending), *b.top_k(x, k=3, largest=not descending),
                 *b.sort(x, axis=0, descending=descending)])
    data = np.array([[2, np.nan, -0.0, 0.0, np.inf, -np.inf, 2, np.nan],
                     [1, 1, 1, 0, 0, -1, -1, 1]], np.float32)
    got = _exact(runner, contract, g, [data])
    assert got[1].dtype == np.int64
    if not descending:
        assert got[1][0].tolist() == [5, 2, 3, 0, 6, 4, 1, 7]


def test_sort_ints_top_k_ties(runner, contract):
    b = GraphBuilder()
    x = b.input(i8[10])
    g = b.build([*b.sort(x, axis=0), *b.top_k(x, k=4), *b.top_k(x, k=0), *b.sort(x, axis=0, descending=True)])
    got = _exact(runner, contract, g, [np.array([3, -128, 127, 3, 0, -1, 127, 3, 0, -128], np.int8)])
    assert got[3].tolist() == [2, 6, 0, 3]


@pytest.mark.parametrize("dtype", [f32, f64, bf16], ids=lambda d: d.short)
def test_dot_general_within_accumulation_bound(runner, contract, dtype):
    b = GraphBuilder()
    lhs, rhs = b.input(dtype[3, 4, 64]), b.input(dtype[3, 64, 5])
    g = b.build([b.dot_general(lhs, rhs, lhs_contracting_dims=(2,), rhs_contracting_dims=(1,),
                               lhs_batch_dims=(0,), rhs_batch_dims=(0,))])
    rng = np.random.default_rng(4)
    args = [rng.standard_normal((3, 4, 64)).astype(dtype.numpy), rng.standard_normal((3, 64, 5)).astype(dtype.numpy)]
    (got,) = runner.run(g, args)
    (oracle,) = runner.oracle(g, args)
    (abs_terms,) = runner.oracle(g, [np.abs(a) for a in args])
    assert got.dtype == dtype.numpy and got.shape == (3, 4, 5)
    assert contract.accumulation_ok(got, oracle, abs_terms, 64, dtype)


def test_integer_dot_wraps(runner, contract):
    b = GraphBuilder()
    lhs, rhs = b.input(i32[2, 3]), b.input(i32[3])
    g = b.build([b.dot_general(lhs, rhs, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,),
                               lhs_batch_dims=(), rhs_batch_dims=())])
    _exact(runner, contract, g, [np.full((2, 3), 2**30, np.int32), np.array([1, 2, 3], np.int32)])


@pytest.mark.parametrize("groups,strides,padding,lhs_dil,rhs_dil", [
    (1, (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1)),
    (2, (2, 1), ((1, 2), (-1, 1)), (1, 1), (2, 1)),
    (1, (1, 1), ((1, 1), (1, 1)), (2, 2), (1, 1)),  # transposed-convolution geometry
])
def test_convolution_nchw(runner, contract, groups, strides, padding, lhs_dil, rhs_dil):
    b = GraphBuilder()
    lhs, rhs = b.input(f32[2, 4, 7, 6]), b.input(f32[6, 4 // groups, 3, 2])
    g = b.build([b.convolution(lhs, rhs, window_strides=strides, padding=padding, lhs_dilation=lhs_dil,
                               rhs_dilation=rhs_dil, feature_group_count=groups)])
    rng = np.random.default_rng(5)
    args = [rng.standard_normal((2, 4, 7, 6)).astype(np.float32),
            rng.standard_normal((6, 4 // groups, 3, 2)).astype(np.float32)]
    (got,) = runner.run(g, args)
    (oracle,) = runner.oracle(g, args)
    (abs_terms,) = runner.oracle(g, [np.abs(a) for a in args])
    assert got.shape == oracle.shape
    assert contract.accumulation_ok(got, oracle, abs_terms, 4 * 3 * 2, f32)


def test_convolution_with_no_window_position_is_empty(runner):
    b = GraphBuilder()
    g = b.build([b.convolution(b.input(f32[1, 1, 2]), b.input(f32[1, 1, 3]), window_strides=(1,),
                               padding=((0, 0),), lhs_dilation=(1,), rhs_dilation=(1,))])
    (got,) = runner.run(g, [np.ones((1, 1, 2), np.float32), np.ones((1, 1, 3), np.float32)])
    assert got.shape == (1, 1, 0)


@pytest.mark.parametrize("kind", ["max", "sum"])
@pytest.mark.parametrize("dtype", [f32, i32], ids=lambda d: d.short)
def test_reduce_window(runner, contract, kind, dtype):
    b = GraphBuilder()
    x = b.input(dtype[1, 2, 5, 6])
    g = b.build([b.reduce_window(x, kind=kind, window_dimensions=(1, 1, 3, 2), window_strides=(1, 1, 2, 1),
                                 padding=((0, 0), (0, 0), (1, 1), (0, -1)), window_dilations=(1, 1, 1, 2))])
    data = (np.arange(60).reshape(1, 2, 5, 6) % 7 - 3).astype(dtype.numpy)
    if dtype.is_float:
        data[0, 0, 0, 0] = np.nan
        data[0, 1] = -0.0
    _exact(runner, contract, g, [data])


def _conv1d(runner, x, w, padding, lhs_dilation):
    b = GraphBuilder()
    xi, wi = b.input(DType.float32[1, 1, len(x)]), b.input(DType.float32[1, 1, len(w)])
    g = b.build([b.convolution(xi, wi, window_strides=[1], padding=[padding], lhs_dilation=[lhs_dilation],
                               rhs_dilation=[1], feature_group_count=1)])
    return runner.run(g, [np.array([[x]], np.float32), np.array([[w]], np.float32)])[0][0, 0].tolist()


def test_convolution_multiplies_padding_and_dilation_zeros(runner):
    # The IR (like torch's padded conv) multiplies the zeros: 0 * inf = NaN. XLA skipped
    # them (fuzz regression xla-convolution-f32: [0, -inf] for the dilated case).
    got = _conv1d(runner, [1, 2, 3], [np.inf, 1], [1, 1], 1)
    assert np.isnan(got[0]) and got[1:] == [np.inf] * 3
    got = _conv1d(runner, [-5.788865], [np.inf], [1, 0], 2)
    assert np.isnan(got[0]) and got[1] == -np.inf
    got = _conv1d(runner, [1, 2], [1, np.inf], [0, 0], 2)  # [1, 0, 2]: the hole meets inf first
    assert np.isnan(got[0]) and got[1] == np.inf
    assert _conv1d(runner, [1, 2, 3], [2, 1], [1, 1], 1) == [1, 4, 7, 6]  # finite kernels unchanged
    assert _conv1d(runner, [1, 2, 3], [np.inf, 1], [-1, 0], 1) == [np.inf]  # cropping: no zeros


@pytest.mark.parametrize("n", [5, 4097, 100_000])
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_rule_with_a_plain_max_matches_the_decomposition_bit_for_bit(runner, contract, op, n):
    """The native rule takes the row max with XLA's NaN-dropping max; rows with NaN, +inf,
    only -inf, signed zeros and long rows must still equal the NaN-checking decomposition."""
    from parity.ir.passes.decompose import decompose

    b = GraphBuilder()
    x = b.input(f32[6, n])
    g = b.build([b.op(op, x, axis=1)])
    expanded, changed = decompose(g, lambda name: name != op)
    assert changed and op not in {node.op for node in expanded.nodes}
    data = np.random.default_rng(n).standard_normal((6, n)).astype(np.float32) * 10
    data[0, n // 2] = np.nan
    data[1, [0, -1]] = [np.inf, np.nan]
    data[2] = -np.inf
    data[3, 1] = np.inf
    data[4] = -0.0
    data[4, -1] = 0.0
    rule = runner.run(g, [data])[0]
    contract.assert_exact(rule, runner.run(expanded, [data])[0], what=f"{op} rule vs decomposition")
    assert np.isnan(rule[:4]).all() and not np.isnan(rule[4:]).any()


@pytest.mark.parametrize("window, strides, padding, dilation", [
    ((1, 1, 2, 2), (1, 1, 2, 2), ((0, 0), (0, 0), (0, 0), (0, 0)), (1, 1, 1, 1)),
    ((1, 1, 3, 3), (1, 1, 2, 1), ((0, 0), (0, 0), (1, 1), (1, 2)), (1, 1, 1, 2)),
    ((1, 1, 9, 8), (1, 1, 1, 1), ((0, 0), (0, 0), (4, 4), (0, 0)), (1, 1, 1, 1)),  # 72 taps: reduce_window
])
def test_max_windows_match_the_interpreter_with_nan_and_infinities(runner, contract, window, strides, padding,
                                                                    dilation):
    b = GraphBuilder()
    x = b.input(f32[2, 3, 12, 11])
    g = b.build([b.reduce_window(x, kind="max", window_dimensions=window, window_strides=strides, padding=padding,
                                 window_dilations=dilation)])
    data = np.random.default_rng(7).standard_normal((2, 3, 12, 11)).astype(np.float32)
    data[0, 0, 3, 4] = np.nan
    data[0, 1, :, :] = -np.inf
    data[1, 2, 5, 5] = np.inf
    data[1, 1, 2:6, 2:6] = np.nan
    got = _exact(runner, contract, g, [data], signed_zero=False)[0]
    assert np.isnan(got[0, 0]).any() and (got[0, 1] == -np.inf).all()
    unrolled = np.prod(window) <= 64
    assert ("reduce-window" in runner.backend.compile(g, "cpu").hlo_text()) is not unrolled


@pytest.mark.parametrize("m, k, n", [(74, 175, 431), (33, 1024, 64)])
def test_a_bias_after_a_matmul_is_added_to_the_rounded_product(runner, m, k, n):
    """Were XLA to fold the add into the dot's accumulation (an output fusion with an addend),
    the sum would differ from round(round(a @ w) + b)."""
    b = GraphBuilder()
    x, w, bias = b.input(f32[m, k]), b.input(f32[k, n]), b.input(f32[n])
    product = b.dot_general(x, w, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,), lhs_batch_dims=(),
                            rhs_batch_dims=())
    out = b.add(product, b.broadcast_in_dim(bias, shape=(m, n), broadcast_dimensions=(1,)))
    rng = np.random.default_rng(m)
    args = [(rng.standard_normal((m, k)) * 3).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32),
            (rng.standard_normal(n) * 300).astype(np.float32)]
    (alone,) = runner.run(b.build([out]), args)
    both, rounded_product = runner.run(b.build([out, product]), args)
    np.testing.assert_array_equal(np.asarray(alone), np.asarray(both))
    np.testing.assert_array_equal(np.asarray(alone), np.asarray(rounded_product) + args[2])


@pytest.mark.parametrize("dtype", [f32, f64], ids=lambda d: d.short)
@pytest.mark.parametrize("groups", [4, 2])  # depthwise (one input channel per group) leaked in XLA
def test_a_non_finite_value_stays_in_its_convolution_group(runner, dtype, groups):
    """XLA:CPU runs a depthwise conv as one conv with zeros outside each group, so a NaN in one
    group reached the others (0 * NaN); the rule gives each group a second, zero channel."""
    b = GraphBuilder()
    x, w = b.input(dtype[2, 4, 6]), b.input(dtype[4, 4 // groups, 3])
    g = b.build([b.convolution(x, w, window_strides=(2,), padding=((1, 1),), lhs_dilation=(1,), rhs_dilation=(1,),
                               feature_group_count=groups)])
    rng = np.random.default_rng(5)
    data = rng.standard_normal((2, 4, 6)).astype(dtype.numpy)
    taps = rng.standard_normal((4, 4 // groups, 3)).astype(dtype.numpy)
    data[0, 3, 3] = np.nan  # the last group of batch 0
    taps[0, 0, 2] = np.inf  # output channel 0 (the first group)
    got = np.asarray(runner.run(g, [data, taps])[0])
    want = evaluate(g, [data, taps])[0]
    assert np.array_equal(np.isnan(got), np.isnan(want)) and np.array_equal(np.isinf(got), np.isinf(want))
    assert not np.isnan(got[1, 1:]).any() and not np.isnan(got[0, 1]).any() and np.isnan(got[0, 3]).any()
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-5 if dtype is f32 else 1e-12)
    clean = [rng.standard_normal((2, 4, 6)).astype(dtype.numpy),
             rng.standard_normal((4, 4 // groups, 3)).astype(dtype.numpy)]
    np.testing.assert_allclose(np.asarray(runner.run(g, clean)[0]), evaluate(g, clean)[0], rtol=1e-5)


@pytest.mark.parametrize("dtype", [f32, f64], ids=lambda d: d.short)
def test_a_product_is_rounded_before_the_sum_that_reads_it(runner, dtype):
    """XLA:CPU fuses a·b - c into one FMA (checked below on plain jax.jit, so the workaround's
    reason is still true); parity's executables round the product first, as the IR says."""
    import jax

    b = GraphBuilder()
    x, y, z = b.input(dtype[4, 1]), b.input(dtype[4, 64]), b.input(dtype[4, 64])
    product = b.mul(b.broadcast_in_dim(x, shape=(4, 64), broadcast_dimensions=(0, 1)), y)
    graph = b.build([b.sub(product, z)])
    rng = np.random.default_rng(3)
    a, c = rng.standard_normal((4, 1)).astype(dtype.numpy), rng.standard_normal((4, 64)).astype(dtype.numpy)
    z_data = (a.astype(np.float64) * c + rng.standard_normal((4, 64)) * 1e-4).astype(dtype.numpy)
    got = np.asarray(runner.run(graph, [a, c, z_data])[0])
    two_roundings = (a * c).astype(dtype.numpy) - z_data  # NumPy rounds the product, then the difference
    np.testing.assert_array_equal(got, two_roundings)
    with jax.enable_x64(dtype is f64):
        fused = jax.jit(lambda a, c, z: a * c - z).lower(a, c, z_data).compile(
            {"xla_cpu_enable_fast_min_max": False, "xla_allow_excess_precision": False})
        assert (np.asarray(fused(a, c, z_data)) != two_roundings).mean() > 0.5  # XLA alone fuses


def test_a_graph_without_products_prunes_the_run_time_zero_and_still_runs(runner):
    b = GraphBuilder()
    x = b.input(f32[3])
    assert np.asarray(runner.run(b.build([b.add(x, x)]), [np.array([1, 2, 3], np.float32)])[0]).tolist() == [2, 4, 6]
