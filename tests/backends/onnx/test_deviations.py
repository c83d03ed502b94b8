"""Recorded deviations are re-measured, and the ORT quirks the lowering works around are
checked to still exist (when ORT fixes one, a test here fails and the workaround can go).
"""

from __future__ import annotations

import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from onnx import helper

sys.path.insert(0, str(Path(__file__).parent))

from parity.backends.onnx import OPSET, OnnxBackend, to_model  # noqa: E402
from parity.backends.onnx.backend import OnnxExecutable, make_session  # noqa: E402
from parity.backends.onnx.deviations import DEVIATIONS, MEASURED  # noqa: E402
from parity.backends.onnx.emitter import ONNX_DTYPES, value_info  # noqa: E402
from parity.conformance.metrics import ulp_error  # noqa: E402
from parity.ir import DType, GraphBuilder, evaluate  # noqa: E402

BACKEND = OnnxBackend()
f32, f64 = DType.float32, DType.float64


def max_ulp(got, exact, dtype: DType) -> float:
    """Worst error of ``got`` in ULPs of ``dtype`` at the oracle (the conformance metric)."""
    return float(ulp_error(dtype, exact, got).max())


def native(op_type: str, inputs: list[np.ndarray], out_dtype: DType, outputs: int = 1, **attrs):
    """Run one bare ONNX node on ORT (no parity lowering)."""
    from parity.ir.types import TensorType

    in_types = [TensorType(DType.from_numpy(a.dtype), a.shape) for a in inputs]
    names = [f"in{i}" for i in range(len(inputs))]
    outs = [f"out{i}" for i in range(outputs)]
    node = helper.make_node(op_type, names, outs, **attrs)
    graph = helper.make_graph([node], "native", [value_info(n, t) for n, t in zip(names, in_types)],
                              [helper.make_tensor_value_info(o, ONNX_DTYPES[out_dtype], None) for o in outs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    return make_session(model).run(None, dict(zip(names, inputs)))


def lowered(op: str, x: np.ndarray, **attrs) -> np.ndarray:
    b = GraphBuilder(op)
    xi = b.input(DType.from_numpy(x.dtype)[x.shape])
    graph = b.build([b.op(op, xi, **attrs)])
    return BACKEND.compile(graph, "cpu")(x)[0], evaluate(graph, [x], oracle=True)[0]


def test_every_deviation_is_published():
    assert {(d.op, d.dtype) for d in DEVIATIONS} == set(MEASURED)
    assert all(d.reason and d.max_error.endswith("ulp") for d in DEVIATIONS)


@pytest.mark.parametrize("op, x", [("sin", 12.566370617500558), ("cos", 1.570796326561926)])
def test_ort_float64_sin_cos_are_off_near_small_multiples_of_half_pi_so_they_are_reduced_first(op, x):
    # ORT's vectorized float64 Sin/Cos (8 elements take the SIMD path) at 4pi and pi/2.
    import mpmath

    mpmath.mp.prec = 200
    exact = np.full(8, float(getattr(mpmath, op)(mpmath.mpf(x))))
    assert max_ulp(native(op.capitalize(), [np.full(8, x)], f64)[0], exact, f64) == 1_184_405_708
    ours, _ = lowered(op, np.full(8, x))  # the range-reduced lowering meets the contract there
    assert max_ulp(ours, exact, f64) <= 1


@pytest.mark.parametrize("k0", [2**20, 2**30, 2**50])
def test_float64_sin_beyond_the_reduction_range_is_the_native_kernel_and_accurate_there(k0):
    # Past 2**20 * pi/2 the lowering falls back to ORT's Sin, which is accurate there
    # (measured <= 3 ULP next to multiples of pi/2 up to 2**50).
    import mpmath

    mpmath.mp.prec = 400
    x = np.array([float(mpmath.mpf(k) * mpmath.pi / 2) for k in range(k0 + 40, k0 + 72)])
    exact = np.array([float(mpmath.sin(mpmath.mpf(v))) for v in x])
    ours, _ = lowered("sin", x)
    np.testing.assert_array_equal(ours, native("Sin", [x], f64)[0])
    assert max_ulp(ours, exact, f64) <= 3


def test_float64_tan_error_is_recorded():
    x = np.random.default_rng(3).uniform(-20, 20, 200_000)
    got, exact = lowered("tan", x)
    assert max_ulp(got, exact, f64) == MEASURED[("tan", f64)][0]


# -- ORT quirks the lowering works around ---------------------------------------------------


def test_ort_sigmoid_flushes_so_logistic_is_lowered_by_exp():
    x = np.array([-20.0, -16.0] * 4, np.float32)
    assert native("Sigmoid", [x], f32)[0][0] == 0.0  # true value 2.06e-9
    ours, exact = lowered("logistic", x)
    assert max_ulp(ours, exact, f32) <= 2


def test_ort_float32_tanh_is_28_ulp_off_so_it_runs_in_float64():
    x = np.array([-1.1754944e-38, 1.4367121e-02] * 4, np.float32)
    exact = np.tanh(x.astype(np.float64))
    assert max_ulp(native("Tanh", [x], f32)[0], exact, f32) == 28
    ours, _ = lowered("tanh", x)
    assert max_ulp(ours, exact, f32) <= 0.5


def test_ort_where_drops_negative_zero_so_floats_select_bits():
    cond = np.array([True, True, False])
    got = native("Where", [cond, np.array([-0.0, -0.0, 1.0], np.float32), np.full(3, 5.0, np.float32)], f32)[0]
    assert not np.signbit(got[0])
    b = GraphBuilder()
    p, a, c = b.input(DType.bool[3]), b.input(f32[3]), b.input(f32[3])
    run = BACKEND.compile(b.build([b.select(p, a, c)]), "cpu")
    assert np.signbit(run(cond, np.array([-0.0, -0.0, 1.0], np.float32), np.full(3, 5.0, np.float32))[0][:2]).all()


def _select_graph(on_true, on_false, *, cond_shape=(2, 4)):
    """select(cond, a, b) with each of a, b a float constant broadcast to [2, 4], or None: an input."""
    b = GraphBuilder()
    cond = b.input(DType.bool[cond_shape])
    inputs = [cond]

    def operand(value):
        if value is None:
            inputs.append(b.input(f32[2, 4]))
            return inputs[-1]
        return b.broadcast_in_dim(b.constant(value, f32), shape=(2, 4), broadcast_dimensions=())

    a, c = operand(on_true), operand(on_false)
    spread = cond if cond_shape == (2, 4) else b.broadcast_in_dim(cond, shape=(2, 4), broadcast_dimensions=())
    return b.build([b.select(spread, a, c)])


def _select_runs(graph, arrays):
    ops = [n.op_type for n in to_model(graph).graph.node]
    got = BACKEND.compile(graph, "cpu")(*arrays)[0]
    want = evaluate(graph, arrays)[0]
    assert got.tobytes() == want.tobytes(), (got, want)  # every bit, the sign of a zero included
    return ops


@pytest.mark.parametrize("fill", [-np.inf, float(np.finfo(np.float32).min)])
def test_a_mask_of_constants_without_negative_zero_is_one_plain_where(fill):
    cond = np.array([[True, False, True, False], [False, False, True, True]])
    ops = _select_runs(_select_graph(0.0, fill), [cond])
    assert ops.count("Where") == 1 and "BitCast" not in ops, ops


@pytest.mark.parametrize("on_true, on_false, cond_shape", [
    (-0.0, 1.0, (2, 4)),  # a constant -0.0 on the true side: ORT's Where would make it +0.0
    (None, -np.inf, (2, 4)),  # a computed operand (holding -0.0 here) against a mask fill
    (1.0, -0.0, ()),  # -0.0 on the false side under a one-element condition: lost there too
])
def test_a_negative_zero_that_may_be_selected_keeps_the_bit_exact_select(on_true, on_false, cond_shape):
    graph = _select_graph(on_true, on_false, cond_shape=cond_shape)
    rng = np.random.default_rng(0)
    for cond in (np.ones(cond_shape, bool), np.zeros(cond_shape, bool), np.asarray(rng.random(cond_shape) < 0.5)):
        arrays = [cond] + ([np.array([[-0.0, 1.0, -0.0, 2.0]] * 2, np.float32)] if on_true is None else [])
        ops = _select_runs(graph, arrays)
        assert "BitCast" in ops, ops


def test_ort_expand_of_one_to_zero_gives_one_so_empty_broadcasts_are_cut():
    # f16 -> f32, Expand [1, 3] to [0, 3], f32 -> f16: with graph optimizations on, ORT
    # yields one row (bound to a [0, 3] buffer it complains; as an intermediate it is silent).
    from onnx import TensorProto, numpy_helper

    nodes = [helper.make_node("Cast", ["x"], ["c"], to=TensorProto.FLOAT), helper.make_node("Expand", ["c", "s"], ["e"]),
             helper.make_node("Cast", ["e"], ["y"], to=TensorProto.FLOAT16)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT16, None)],
                              initializer=[numpy_helper.from_array(np.array([0, 3], np.int64), "s")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    assert make_session(model).run(None, {"x": np.ones((1, 3), np.float16)})[0].shape == (1, 3)
    b = GraphBuilder()
    xi = b.input(DType.bfloat16[1, 3])  # bfloat16 runs in float32: Cast, Expand, Cast
    out = b.broadcast_in_dim(xi, shape=(0, 3), broadcast_dimensions=(0, 1))
    assert BACKEND.compile(b.build([out]), "cpu")(np.ones((1, 3), ml_dtypes.bfloat16))[0].shape == (0, 3)


def test_ort_integer_reduce_sum_saturates_so_ints_sum_by_cumsum():
    x = np.array([2**30, 2**30, 2**30], np.int32)
    assert native("ReduceSum", [x, np.array([0], np.int64)], DType.int32, keepdims=0)[0] == 2**31 - 1
    b = GraphBuilder()
    xi = b.input(DType.int32[3])
    assert BACKEND.compile(b.build([b.reduce_sum(xi, axes=(0,))]), "cpu")(x)[0] == np.int32(-(2**30))  # wraps


def test_ort_reduce_max_and_argmax_skip_nan_so_a_nan_mask_is_reduced_too():
    x = np.array([1.0, np.nan, 3.0], np.float32)
    assert native("ReduceMax", [x, np.array([0], np.int64)], f32, keepdims=0)[0] == 3.0
    assert native("ArgMax", [x], DType.int64, axis=0, keepdims=0)[0] == 2
    b = GraphBuilder()
    xi = b.input(f32[3])
    got = BACKEND.compile(b.build([b.reduce_max(xi, axes=(0,)), b.argmax(xi, axis=0)]), "cpu")(x)
    assert np.isnan(got[0]) and got[1] == 1


def test_ort_sign_of_negative_zero_is_positive_so_zeros_pass_through():
    assert not np.signbit(native("Sign", [np.array([-0.0], np.float32)], f32)[0][0])
    ours, _ = lowered("sign", np.array([-0.0, np.nan], np.float16))
    assert np.signbit(ours[0]) and np.isnan(ours[1])


def test_ort_casts_float64_to_float16_through_float32_so_convert_rounds_to_odd():
    x = np.array([1 + 2**-11 + 2**-40])  # just above a float16 tie: rounds up
    assert native("Cast", [x], DType.float16, to=ONNX_DTYPES[DType.float16])[0][0] == 1.0  # rounded twice
    b = GraphBuilder()
    xi = b.input(f64[1])
    assert BACKEND.compile(b.build([b.convert(xi, dtype=DType.float16)]), "cpu")(x)[0][0] == np.float16(1 + 2**-10)


def test_executable_runs_a_probe_model_too():
    # make_session + OnnxExecutable is how probe_kernels.py runs unlegalized models.
    b = GraphBuilder()
    xi = b.input(f32[2])
    graph = b.build([b.neg(xi)])
    from parity.backends.onnx import to_model

    run = OnnxExecutable(graph, "cpu", make_session(to_model(graph)))
    assert run(np.array([1.0, -0.0], np.float32))[0].tolist() == [-1.0, 0.0]
