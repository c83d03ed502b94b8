"""The ONNX model's peephole rewrites (backends/onnx/simplify.py): the nodes they remove, and
results with the same bits as the model without them."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

from parity.backends.onnx import OnnxBackend, to_model
from parity.ir import GraphBuilder, evaluate, f32

BACKEND = OnnxBackend()


def _linear(batch: tuple[int, ...], k: int, n: int, *, back: tuple[int, ...] | None = None, row_operand=False,
            then: tuple[int, ...] | None = None):
    """torch's linear as AOTAutograd records it: view to [M, K], addmm, view back (and ``then``
    to another shape: a projection split into heads)."""
    b = GraphBuilder()
    m = int(np.prod(batch))
    x, w, bias = b.input(f32[(*batch, k)]), b.input(f32[k, n]), b.input(f32[n])
    flat = b.reshape(x, shape=(m, k))
    y = b.dot_general(flat, w, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,), lhs_batch_dims=(),
                      rhs_batch_dims=())
    y = b.add(y, b.broadcast_in_dim(bias, shape=(m, n), broadcast_dimensions=(1,)))
    inputs = [x, w, bias]
    if row_operand:  # a full [M, N] operand: rows are not independent of the flattening
        z = b.input(f32[m, n])
        inputs.append(z)
        y = b.mul(y, z)
    y = b.reshape(y, shape=back or (*batch, n))
    return b.build([b.reshape(y, shape=then) if then else y]), inputs


def _flat_product(x: np.ndarray, w: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """ORT's own [M, K] x [K, N] + bias in float32, on the flattened rows."""
    k, n = w.shape
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["p"]), helper.make_node("Add", ["p", "b"], ["y"])],
                              "flat", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, k]),
                                       helper.make_tensor_value_info("w", TensorProto.FLOAT, [k, n]),
                                       helper.make_tensor_value_info("b", TensorProto.FLOAT, [n])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x.reshape(-1, k), "w": w, "b": bias})[0]


def test_a_linear_on_batched_rows_runs_without_its_reshapes_and_gives_the_same_bits():
    rng = np.random.default_rng(0)
    for batch, k, n in [((1, 1), 64, 192), ((2, 7), 33, 65), ((3, 1, 5), 128, 17), ((4, 16), 256, 64)]:
        graph, _ = _linear(batch, k, n)
        ops = [node.op_type for node in to_model(graph).graph.node]
        assert "Reshape" not in ops and ops.count("MatMul") == 1, (batch, ops)
        x = rng.standard_normal((*batch, k)).astype(np.float32)
        w = rng.standard_normal((k, n)).astype(np.float32)
        bias = rng.standard_normal(n).astype(np.float32)
        (got,) = BACKEND.compile(graph, "cpu")(x, w, bias)
        assert got.shape == (*batch, n)
        np.testing.assert_array_equal(got.reshape(-1, n), _flat_product(x, w, bias))


def test_rows_regrouped_keep_only_the_reshape_after_and_give_the_same_bits():
    rng = np.random.default_rng(2)
    for batch, k, n, back, then in [((1, 1), 32, 16, (1, 1, 2, 8), None), ((2, 3), 8, 6, (3, 2, 2, 3), None),
                                    ((4, 5), 64, 96, (4, 5, 96), (4, 5, 4, 24))]:  # the last: [M, N], [*B, N], heads
        graph, _ = _linear(batch, k, n, back=back, then=then)
        ops = [node.op_type for node in to_model(graph).graph.node]
        assert ops.count("Reshape") == 1 and ops.index("Reshape") > ops.index("MatMul"), (back, ops)
        back = then or back
        x = rng.standard_normal((*batch, k)).astype(np.float32)
        w = rng.standard_normal((k, n)).astype(np.float32)
        bias = rng.standard_normal(n).astype(np.float32)
        (got,) = BACKEND.compile(graph, "cpu")(x, w, bias)
        assert got.shape == back
        np.testing.assert_array_equal(got.reshape(-1, n), _flat_product(x, w, bias))


def test_rows_mixed_with_a_full_operand_keep_their_reshapes():
    rng = np.random.default_rng(1)
    for graph, extra in [(_linear((2, 3), 8, 5, row_operand=True)[0], [rng.standard_normal((6, 5)).astype(np.float32)])]:
        assert [node.op_type for node in to_model(graph).graph.node].count("Reshape") == 2
        args = [rng.standard_normal((2, 3, 8)).astype(np.float32), rng.standard_normal((8, 5)).astype(np.float32),
                rng.standard_normal(5).astype(np.float32), *extra]
        (got,) = BACKEND.compile(graph, "cpu")(*args)
        (want,) = evaluate(graph, args)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_reshape_of_a_reshape_is_one_reshape_and_the_first_is_dropped():
    b = GraphBuilder()
    x = b.input(f32[2, 3, 4])
    y = b.reshape(b.reshape(b.neg(x), shape=(6, 4)), shape=(4, 6))
    graph = b.build([y])
    ops = [node.op_type for node in to_model(graph).graph.node]
    assert ops == ["Neg", "Reshape"]
    x_value = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 8
    (got,) = BACKEND.compile(graph, "cpu")(x_value)
    np.testing.assert_array_equal(got, evaluate(graph, [x_value])[0])


def test_a_transpose_that_moves_only_size_one_dims_is_a_reshape_and_folds():
    rng = np.random.default_rng(3)
    for shape, perm, transposes in [((1, 1, 2, 8), (0, 2, 1, 3), 0),  # a decode step's one-token head swap
                                    ((2, 1, 3), (1, 0, 2), 0), ((1, 4, 1, 5), (2, 1, 3, 0), 0),
                                    ((2, 3, 1), (1, 0, 2), 1), ((1, 2, 3), (0, 2, 1), 1)]:  # real ones
        b = GraphBuilder()
        x = b.input(f32[shape])
        flat = b.reshape(b.neg(x), shape=shape)  # a Reshape before it, as after a projection
        graph = b.build([b.transpose(flat, permutation=perm)])
        ops = [node.op_type for node in to_model(graph).graph.node]
        assert ops.count("Transpose") == transposes and ops.count("Reshape") <= 1, (shape, perm, ops)
        a = rng.standard_normal(shape).astype(np.float32)
        (got,) = BACKEND.compile(graph, "cpu")(a)
        np.testing.assert_array_equal(got, np.transpose(-a, perm))
