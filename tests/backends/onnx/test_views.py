"""Broadcasts left to ONNX's own broadcasting (backends/onnx/lowering.py ``_Views``): which
nodes a model holds, and results equal to the interpreter's whether or not a broadcast is
expanded."""

from __future__ import annotations

import numpy as np
import pytest

from parity.backends.onnx import OnnxBackend, to_model
from parity.ir import GraphBuilder, bf16, evaluate, f16, f32

BACKEND = OnnxBackend()


def _scalar(b, value, dtype, shape):
    return b.broadcast_in_dim(b.constant(np.array(value, dtype.numpy)), shape=shape, broadcast_dimensions=())


def _run_both(graph, args):
    got = BACKEND.compile(graph, "cpu")(*args)
    want = evaluate(graph, args)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g).astype(np.float64), np.asarray(w).astype(np.float64))
    return got


def test_elementwise_ops_read_scalars_and_rows_unexpanded():
    b = GraphBuilder()
    x, bias = b.input(f32[64, 32]), b.input(f32[32])
    row = b.broadcast_in_dim(bias, shape=(64, 32), broadcast_dimensions=(1,))
    y = b.sub(b.mul(b.add(x, row), _scalar(b, 2.0, f32, (64, 32))), b.exp(row))  # exp on 32 values
    graph = b.build([y])
    nodes = [n.op_type for n in to_model(graph).graph.node]
    assert "Expand" not in nodes and nodes.count("Exp") == 1
    rng = np.random.default_rng(1)
    _run_both(graph, [rng.standard_normal((64, 32)).astype(np.float32), rng.standard_normal(32).astype(np.float32)])


def test_a_broadcast_is_expanded_for_consumers_that_do_not_broadcast_and_for_outputs():
    b = GraphBuilder()
    x, bias = b.input(f32[4, 3]), b.input(f32[3])
    row = b.broadcast_in_dim(bias, shape=(4, 3), broadcast_dimensions=(1,))
    doubled = b.add(row, row)  # still [1, 3] in the model
    total = b.reduce_sum(doubled, axes=(0,))  # a reduction needs the [4, 3] tensor
    graph = b.build([total, doubled, b.mul(x, row)])
    model = to_model(graph)
    assert [n.op_type for n in model.graph.node].count("Expand") == 1  # one per value, shared
    got = _run_both(graph, [np.arange(12, dtype=np.float32).reshape(4, 3), np.array([1.0, -0.0, 2.5], np.float32)])
    assert got[1].shape == (4, 3) and got[0].tolist() == [8.0, 0.0, 20.0]


def test_bfloat16_views_are_expanded_through_float32():
    b = GraphBuilder()
    bias = b.input(bf16[3])
    row = b.broadcast_in_dim(bias, shape=(2, 3), broadcast_dimensions=(1,))
    graph = b.build([b.neg(row)])
    got = _run_both(graph, [np.array([1.5, -0.0, 3.0e38], bf16.numpy)])
    assert got[0].dtype == bf16.numpy and got[0].shape == (2, 3) and np.signbit(got[0][1, 1]) == 0


def test_all_operands_broadcast_keeps_the_result_small_until_needed():
    b = GraphBuilder()
    a = b.input(f32[5])
    col = b.broadcast_in_dim(a, shape=(5, 6), broadcast_dimensions=(0,))
    graph = b.build([b.mul(col, _scalar(b, 3.0, f32, (5, 6)))])
    got = _run_both(graph, [np.arange(5, dtype=np.float32)])
    assert got[0].shape == (5, 6) and got[0][:, 4].tolist() == [0.0, 3.0, 6.0, 9.0, 12.0]


def _conv_bias_graph(x_shape, w_shape, stride, pad, keep_conv_output):
    b = GraphBuilder()
    x, w, bias = b.input(f32[x_shape]), b.input(f32[w_shape]), b.input(f32[w_shape[0]])
    conv = b.convolution(x, w, window_strides=(stride, stride), padding=((pad, pad), (pad, pad)),
                         lhs_dilation=(1, 1), rhs_dilation=(1, 1), feature_group_count=1)
    out = b.add(conv, b.broadcast_in_dim(bias, shape=conv.type.shape, broadcast_dimensions=(1,)))
    return b.build([out, conv] if keep_conv_output else [out])


@pytest.mark.parametrize("x_shape, w_shape, stride, pad", [
    ((2, 3, 17, 17), (8, 3, 3, 3), 1, 1), ((1, 16, 12, 12), (32, 16, 3, 3), 2, 1), ((3, 8, 9, 9), (16, 8, 1, 1), 1, 0),
    ((2, 32, 20, 20), (64, 32, 5, 5), 1, 2)])
def test_convolution_plus_a_channel_bias_is_one_conv_and_bit_identical(x_shape, w_shape, stride, pad):
    fused = _conv_bias_graph(x_shape, w_shape, stride, pad, keep_conv_output=False)
    plain = _conv_bias_graph(x_shape, w_shape, stride, pad, keep_conv_output=True)  # the sum is used twice
    fused_nodes = [(n.op_type, len(n.input)) for n in to_model(fused).graph.node]
    assert ("Conv", 3) in fused_nodes and not any(op in ("Add", "Reshape") for op, _ in fused_nodes)
    assert ("Conv", 2) in [(n.op_type, len(n.input)) for n in to_model(plain).graph.node]
    rng = np.random.default_rng(sum(x_shape))
    args = [(rng.standard_normal(x_shape) * 100).astype(np.float32), rng.standard_normal(w_shape).astype(np.float32),
            (rng.standard_normal(w_shape[0]) * 1000).astype(np.float32)]
    args[2][0] = -0.0
    got, want = BACKEND.compile(fused, "cpu")(*args)[0], BACKEND.compile(plain, "cpu")(*args)[0]
    assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want))


def test_a_half_precision_convolution_keeps_its_own_rounding_before_the_bias():
    b = GraphBuilder()
    x, w, bias = b.input(f16[1, 2, 5, 5]), b.input(f16[4, 2, 3, 3]), b.input(f16[4])
    conv = b.convolution(x, w, window_strides=(1, 1), padding=((1, 1), (1, 1)), lhs_dilation=(1, 1),
                         rhs_dilation=(1, 1), feature_group_count=1)
    graph = b.build([b.add(conv, b.broadcast_in_dim(bias, shape=conv.type.shape, broadcast_dimensions=(1,)))])
    assert all(len(n.input) == 2 for n in to_model(graph).graph.node if n.op_type == "Conv")


@pytest.mark.parametrize("m, k, n", [(74, 175, 431), (296, 509, 487), (33, 1024, 64)])
def test_a_bias_after_a_matmul_is_added_to_the_rounded_product(m, k, n):
    """ORT's MatMulAddFusion would add the bias inside the accumulation (disabled)."""
    b = GraphBuilder()
    x, w, bias = b.input(f32[m, k]), b.input(f32[k, n]), b.input(f32[n])
    product = b.dot_general(x, w, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,), lhs_batch_dims=(),
                            rhs_batch_dims=())
    out = b.add(product, b.broadcast_in_dim(bias, shape=(m, n), broadcast_dimensions=(1,)))
    rng = np.random.default_rng(m)
    args = [(rng.standard_normal((m, k)) * 3).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32),
            (rng.standard_normal(n) * 300).astype(np.float32)]
    (alone,) = BACKEND.compile(b.build([out]), "cpu")(*args)
    both, rounded_product = BACKEND.compile(b.build([out, product]), "cpu")(*args)  # the product is kept
    np.testing.assert_array_equal(alone, both)
    np.testing.assert_array_equal(alone, rounded_product + args[2])  # one rounding after the rounded product


def test_a_bias_on_a_symbolic_batch_is_not_expanded_and_empty_batches_stay_empty():
    from parity.ir import Symbol

    batch = Symbol("B")
    b = GraphBuilder()
    x, bias = b.input(f32[batch, 5]), b.input(f32[5])
    row = b.broadcast_in_dim(bias, shape=(batch, 5), broadcast_dimensions=(1,))
    scaled = b.mul(row, _scalar(b, 2.0, f32, (batch, 5)))  # compact too: [5] * []
    graph = b.build([b.add(x, scaled), scaled])  # the second output needs the full [B, 5]
    ops = [n.op_type for n in to_model(graph).graph.node]
    assert ops.count("Expand") == 1, ops  # only for the second output
    rng = np.random.default_rng(2)
    compiled = BACKEND.compile(graph, "cpu")
    for rows in (3, 1, 0):
        args = [rng.standard_normal((rows, 5)).astype(np.float32), rng.standard_normal(5).astype(np.float32)]
        got = compiled(*args)
        want = evaluate(graph, args)
        for g, w in zip(got, want):
            assert g.shape == w.shape == (rows, 5)
            np.testing.assert_array_equal(g, w)
