"""The loop op on the onnx backend: claimed and lowered to one ONNX Scan (backends/onnx/control.py),
with results equal to the reference interpreter's; the loops it declines are unrolled and still right."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from parity.backends.onnx.backend import OnnxBackend
from parity.backends.onnx.lowering import CLAIM_PREDICATES, to_model
from parity.ir import DType, GraphBuilder, Symbol, evaluate, f32, f64
from parity.ir.passes import decompose
from parity.ir.types import tensor

B = Symbol("B")
I32 = tensor(DType.int32)  # an int32 scalar
RNG = np.random.default_rng(0)


def _body(in_types, make):
    b = GraphBuilder("step")
    return b.build(list(make(b, *[b.input(t) for t in in_types])))


def _loop_graph(operand_types, body_types, make, **attrs):
    b = GraphBuilder("looped")
    operands = [b.input(t) for t in operand_types]
    out = b.loop(*operands, body=_body(body_types, make), **attrs)
    return b.build(list(out) if isinstance(out, tuple) else [out])


def _running_sum(b, total, x):
    new = b.add(total, x)
    return new, new


def running_sum(length=6, reverse=False):
    return _loop_graph([f32[4], f32[length, 4]], [f32[4], f32[4]], _running_sum, length=length, num_carry=1,
                       reverse=reverse)


def _normal(shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def scans(graph) -> list[str]:
    """The op types of the ONNX model's top-level nodes."""
    return [n.op_type for n in to_model(graph).graph.node]


def _check(graph, args):
    """The onnx backend's results are the reference interpreter's, bit for bit (the bodies here
    are single adds and products, or exact), in shape and dtype."""
    got = OnnxBackend().compile(graph, "cpu")(*args)
    want = evaluate(graph, args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)
    return got


def test_running_sum_is_one_scan_and_equals_the_reference():
    g = running_sum()
    assert scans(g) == ["Scan"]
    xs = np.arange(24, dtype=np.float32).reshape(6, 4)
    final, ys = _check(g, [np.ones(4, np.float32), xs])
    np.testing.assert_array_equal(ys, 1 + np.cumsum(xs, axis=0))
    np.testing.assert_array_equal(final, ys[-1])


def test_reverse_reads_and_writes_row_i_at_position_i():
    g = running_sum(reverse=True)
    xs = np.arange(24, dtype=np.float32).reshape(6, 4)
    final, ys = _check(g, [np.zeros(4, np.float32), xs])
    # the steps run from the last row up: ys[i] is the sum of rows i..5
    np.testing.assert_array_equal(ys, np.flip(np.cumsum(np.flip(xs, 0), axis=0), 0))
    np.testing.assert_array_equal(final, xs.sum(0))


def test_one_step():
    g = running_sum(length=1)
    assert scans(g) == ["Scan"]
    _check(g, [_normal(4), _normal((1, 4))])


def _max_and_count(b, m, count, x):
    return b.max(m, x), b.add(count, b.constant(1, DType.int32)), b.mul(m, x)


@pytest.mark.parametrize("reverse", [False, True])
def test_carries_of_different_dtypes(reverse):
    """An int32 counter beside a float carry: each state keeps its own dtype and order."""
    g = _loop_graph([f32[4], I32, f32[7, 4]], [f32[4], I32, f32[4]], _max_and_count, length=7, num_carry=2,
                    reverse=reverse)
    assert scans(g) == ["Scan"]
    m, count, ys = _check(g, [_normal(4), np.array(5, np.int32), _normal((7, 4))])
    assert count.dtype == np.int32 and int(count) == 12


def test_consts_are_read_every_step():
    def affine(b, a, h, x):
        new = b.add(b.mul(a, h), x)
        return new, b.mul(new, new)

    g = _loop_graph([f32[3, 4], f32[3, 4], f32[5, 3, 4]], [f32[3, 4], f32[3, 4], f32[3, 4]], affine, length=5,
                    num_consts=1, num_carry=1)
    model = to_model(g)
    assert [n.op_type for n in model.graph.node] == ["Scan"]
    scan = model.graph.node[0]
    assert list(scan.input) == ["in1", "in2"]  # the const is no state: the body reads in0 by name
    assert "in0" in {x for n in scan.attribute[0].g.node for x in n.input}
    _check(g, [_normal((3, 4)), _normal((3, 4)), _normal((5, 3, 4))])


def _sum_and_product(b, total, product, x):
    return b.add(total, x), b.mul(product, x)


def test_no_ys():
    g = _loop_graph([f32[5], f32[5], f32[4, 5]], [f32[5], f32[5], f32[5]], _sum_and_product, length=4,
                    num_carry=2)
    assert scans(g) == ["Scan"]
    _check(g, [_normal(5), _normal(5), _normal((4, 5))])


def test_no_carry():
    g = _loop_graph([f32[4], f32[3, 4]], [f32[4], f32[4]], lambda b, s, x: (b.mul(s, x),), length=3,
                    num_consts=1)
    assert scans(g) == ["Scan"]
    _check(g, [_normal(4), _normal((3, 4))])


@pytest.mark.parametrize("reverse", [False, True])
def test_no_xs_scans_an_empty_tensor(reverse):
    """A loop without xs (fori_loop) is a Scan too; its ys are written in step order (reversed
    when ``reverse``), and the body returns a carry it did not change."""
    def doubling(b, h, k):
        twice = b.add(h, h)
        kf = b.broadcast_in_dim(b.convert(k, dtype=DType.float32), shape=(3,), broadcast_dimensions=())
        return twice, k, b.add(twice, kf)

    g = _loop_graph([f32[3], I32], [f32[3], I32], doubling, length=5, num_carry=2, reverse=reverse)
    assert scans(g) == ["Scan"]
    final, k, ys = _check(g, [np.ones(3, np.float32), np.array(7, np.int32)])
    np.testing.assert_array_equal(final, np.full(3, 32, np.float32))
    rows = [2 ** (i + 1) + 7 for i in range(5)]
    np.testing.assert_array_equal(ys[:, 0], rows[::-1] if reverse else rows)


def test_a_composite_in_the_body():
    """softmax in the body: lowered natively inside the Scan body (onnx claims it)."""
    def step(b, h, x):
        new = b.softmax(b.add(h, x), axis=1)
        return new, b.log_softmax(new, axis=0)

    g = _loop_graph([f32[2, 5], f32[4, 2, 5]], [f32[2, 5], f32[2, 5]], step, length=4, num_carry=1)
    model = to_model(g)
    assert [n.op_type for n in model.graph.node] == ["Scan"]
    body_ops = [n.op_type for n in model.graph.node[0].attribute[0].g.node]
    assert "Softmax" in body_ops and "LogSoftmax" in body_ops
    args = [_normal((2, 5)), _normal((4, 2, 5))]
    got = OnnxBackend().compile(g, "cpu")(*args)
    for a, w in zip(got, evaluate(g, args)):
        np.testing.assert_allclose(a, w, rtol=2e-6, atol=1e-6)


def _symbolic_step(b, h, x):
    one = b.broadcast_in_dim(b.constant(1.0, DType.float32), shape=(B, 4), broadcast_dimensions=())
    new = b.add(b.mul(h, x), one)
    return new, b.reshape(new, shape=(B * 4,))


def symbolic():
    return _loop_graph([f32[B, 4], f32[3, B, 4]], [f32[B, 4], f32[B, 4]], _symbolic_step, length=3, num_carry=1)


def test_symbolic_dims_in_the_body():
    g = symbolic()
    model = to_model(g)
    body = model.graph.node[0].attribute[0].g
    assert [[d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim] for v in body.output] == [
        ["B", 4], ["B*4"]]
    run = OnnxBackend().compile(g, "cpu")
    for batch in (1, 3, 8):  # one session for every size
        args = [_normal((batch, 4)), _normal((3, batch, 4))]
        for a, w in zip(run(*args), evaluate(g, args)):
            assert a.shape == w.shape
            np.testing.assert_array_equal(a, w)


def _lstm_like(length: int):
    """h' = tanh(h @ w + x); a fixed body whatever the length."""
    def step(b, w, h, x):
        pre = b.dot_general(h, w, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,), lhs_batch_dims=(),
                            rhs_batch_dims=())
        new = b.tanh(b.add(pre, x))
        return new, b.logistic(new)

    return _loop_graph([f32[4, 4], f32[2, 4], f32[length, 2, 4]], [f32[4, 4], f32[2, 4], f32[2, 4]], step,
                       length=length, num_consts=1, num_carry=1)


def _node_count(model) -> int:
    def count(graph):
        return sum(1 + sum(count(a.g) for a in n.attribute if a.HasField("g")) for n in graph.node)
    return count(model.graph)


def test_node_count_does_not_grow_with_the_length():
    short, long = to_model(_lstm_like(8)), to_model(_lstm_like(64))
    assert [n.op_type for n in long.graph.node] == ["Scan"]
    assert _node_count(short) == _node_count(long)
    unrolled, _ = decompose(_lstm_like(64), claimed=lambda op: False)
    assert _node_count(to_model(unrolled)) > 8 * _node_count(long)
    args = [_normal((4, 4)) * 0.5, _normal((2, 4)), _normal((64, 2, 4))]
    got = OnnxBackend().compile(_lstm_like(64), "cpu")(*args)
    for a, w in zip(got, evaluate(_lstm_like(64), args)):
        np.testing.assert_allclose(a, w, rtol=1e-5, atol=1e-6)


# -- declined: unrolled, still correct -----------------------------------------------------------

def test_zero_steps_are_unrolled():
    g = running_sum(length=0)
    assert CLAIM_PREDICATES["loop"](g.nodes[0]) == "it has zero steps, and onnxruntime's Scan fails on an empty scan axis"
    assert "Scan" not in scans(g)
    final, ys = _check(g, [_normal(4), np.zeros((0, 4), np.float32)])
    assert ys.shape == (0, 4)


def test_an_unsupported_body_is_declined_and_unrolled():
    """float64 asinh has no ORT kernel: the loop is declined, unrolled, and the backend's error
    names the op, as it does for the op outside a loop."""
    g = _loop_graph([f64[2], f64[3, 2]], [f64[2], f64[2]], lambda b, h, x: (b.asinh(b.add(h, x)),), length=3,
                    num_carry=1)
    why = OnnxBackend().claims()["loop"].declines(g.nodes[0])
    assert why.startswith("its body holds asinh in f64")
    with pytest.raises(Exception, match="asinh"):
        to_model(g)


def test_a_composite_expanded_into_an_unsupported_op_is_declined():
    """gelu in float64 is not native (no float64 Erf): expanded, its erf declines the loop."""
    g = _loop_graph([f64[2], f64[3, 2]], [f64[2], f64[2]],
                    lambda b, h, x: (b.gelu(b.add(h, x), approximate="none"),), length=3, num_carry=1)
    assert CLAIM_PREDICATES["loop"](g.nodes[0]).startswith("its body holds erf in f64")


def test_a_declined_inner_loop_is_unrolled_inside_the_outer_scan():
    def outer(b, h, x):
        inner = b.loop(h, body=_body([f32[2]], lambda bb, c: (bb.add(c, c),)), length=0, num_carry=1)
        return b.add(inner, x), inner

    g = _loop_graph([f32[2], f32[3, 2]], [f32[2], f32[2]], outer, length=3, num_carry=1)
    assert CLAIM_PREDICATES["loop"](g.nodes[0]) is None
    assert scans(g) == ["Scan"]
    _check(g, [_normal(2), _normal((3, 2))])


def test_nested_loops_are_nested_scans():
    def outer(b, h, x):
        inner = b.loop(h, x, body=_body([f32[2], f32[2]], _running_sum), length=4, num_carry=1)
        return inner[0], inner[1]

    g = _loop_graph([f32[2], f32[3, 4, 2]], [f32[2], f32[4, 2]], outer, length=3, num_carry=1)
    body = to_model(g).graph.node[0].attribute[0].g
    assert "Scan" in [n.op_type for n in body.node]
    _check(g, [_normal(2), _normal((3, 4, 2))])


def test_export_runs_on_plain_onnxruntime(tmp_path):
    g = symbolic()
    path = tmp_path / "loop.onnx"
    OnnxBackend().export(g, path, input_names=["h", "xs"], output_names=["final", "ys"], dim_names={"B": "batch"})
    model = onnx.load(str(path))
    body = model.graph.node[0].attribute[0].g
    assert body.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert [d.dim_param for d in model.graph.output[1].type.tensor_type.shape.dim][1] == "batch*4"
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    args = [_normal((5, 4)), _normal((3, 5, 4))]
    for a, w in zip(session.run(None, {"h": args[0], "xs": args[1]}), evaluate(g, args)):
        np.testing.assert_array_equal(a, w)
