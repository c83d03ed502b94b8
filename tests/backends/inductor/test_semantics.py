"""The IR's semantics where torch's defaults differ, against the reference interpreter.

Each dtype family is one graph with many outputs, compiled once (Inductor compiles take
seconds): edge values (NaN, ±inf, -0.0, INT_MIN, zero divisors, shifts past the width,
out-of-range indices, empty reductions) through the ops whose rules fix torch's
behaviour up. Exact ops must match the interpreter bit for bit; float math ops within
the contract's 4 ULP (transcendental) or 1 ULP (correctly rounded).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from parity.ir import GraphBuilder, OP_TABLE, evaluate, f32, i32, i64, u32
from parity.ir.dtypes import DType
from parity.ir.opdef import Accuracy

NAN, INF = np.nan, np.inf
X32 = np.array([-0.0, 0.0, NAN, INF, -INF, 2.5, -2.5, 0.5, -1.5, 3.0, -7.25, 1e-30, -100.0, -90.0, 88.0, 1.0],
               np.float32)
Y32 = np.array([0.0, -0.0, 1.0, 2.0, NAN, -2.0, 0.75, INF, -INF, 0.0, 2.0, 1.0, 3.0, -0.0, 1.5, NAN], np.float32)
I32_MIN = np.iinfo(np.int32).min
XI = np.array([-7, 7, 5, I32_MIN, I32_MIN, -1, 0, 12345, -12345, 9, -9, 1, 100, -100, 3, I32_MIN], np.int32)
YI = np.array([2, -2, 0, -1, 1, 0, 3, 31, 32, -1, 33, 40, -3, 7, 1, 5], np.int32)
XU = np.array([0, 1, 2**32 - 1, 2**31, 7, 2**32 - 5, 123456789, 3, 0, 5, 2**31 - 1, 9, 10, 11, 12, 13], np.uint32)
YU = np.array([1, 2**32 - 1, 2, 3, 0, 6, 31, 32, 4, 2**31, 1, 2, 3, 4, 5, 6], np.uint32)
IDX = np.array([0, 3, -1, 16, 99, -99, 15, 2], np.int64)  # out of range: clamped by the IR


def _float_graph():
    b = GraphBuilder("floats")
    x, y, idx = b.input(f32[16]), b.input(f32[16]), b.input(i64[8])
    empty = b.input(f32[2, 0])
    outs = {
        "div": b.div(x, y), "rem": b.rem(x, y), "max": b.max(x, y), "min": b.min(x, y),
        "pow": b.pow(x, y), "atan2": b.atan2(x, y), "sign": b.sign(x), "logistic": b.logistic(x),
        "round": b.round(x), "exp": b.exp(x), "tanh": b.tanh(x), "erf": b.erf(x),
        "rsqrt": b.rsqrt(x), "reciprocal": b.reciprocal(x),
        "cumsum": b.cumsum(b.neg(b.abs(x)), axis=0, reverse=False),
        "cummax": b.cummax(x, axis=0, reverse=True),
        "convert": b.convert(x, dtype=DType.bool),
        "sort": b.sort(x, axis=0, descending=True)[0],
        "argmax": b.argmax(x, axis=0),
        "gather": b.gather(x, idx, axis=0),
        "reduce_max": b.reduce_max(empty, axes=(1,)),
        "reshape": b.reshape(x, shape=(4, 4)),
    }
    return b.build(list(outs.values())), list(outs), [X32, Y32, IDX, np.zeros((2, 0), np.float32)]


def _int_graph():
    b = GraphBuilder("ints")
    x, y = b.input(i32[16]), b.input(i32[16])
    outs = {
        "div": b.div(x, y), "rem": b.rem(x, y), "shift_left": b.shift_left(x, y),
        "shift_right_logical": b.shift_right_logical(x, y),
        "shift_right_arithmetic": b.shift_right_arithmetic(x, y),
        "abs": b.abs(x), "mul": b.mul(x, y), "reduce_sum": b.reduce_sum(x, axes=(0,)),
    }
    return b.build(list(outs.values())), list(outs), [XI, YI]


def _u32_graph():
    b = GraphBuilder("u32")
    x, y = b.input(u32[16]), b.input(u32[16])
    outs = {
        "add": b.add(x, y), "sub": b.sub(x, y), "mul": b.mul(x, y), "div": b.div(x, y),
        "shift_right_logical": b.shift_right_logical(x, y), "lt": b.lt(x, y),
        "bitcast_convert": b.bitcast_convert(x, dtype=DType.int32),
        "convert": b.convert(b.bitcast_convert(x, dtype=DType.int32), dtype=DType.uint32),
    }
    return b.build(list(outs.values())), list(outs), [XU, YU]


GRAPHS = {"f32": _float_graph, "i32": _int_graph, "u32": _u32_graph}


@pytest.fixture(scope="module")
def results(backend):
    """family -> (output names, what inductor gave, what the interpreter gave)."""
    out = {}
    for family, make in GRAPHS.items():
        graph, names, inputs = make()
        got = backend.compile(graph, "cpu")(*inputs)
        with np.errstate(all="ignore"):
            want = evaluate(graph, inputs)
        out[family] = (graph, names, inputs, got, want)
    return out


def _as_numpy(t: torch.Tensor) -> np.ndarray:
    return t.numpy()


def _check(op: str, got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape, (op, got.dtype, got.shape, want.dtype, want.shape)
    accuracy = OP_TABLE[op].accuracy
    if got.dtype.kind != "f" or accuracy is Accuracy.EXACT or op in ("cumsum", "div", "convert"):
        # exact, or correctly rounded where the inputs make the exact result representable
        number = ~np.isnan(want) if got.dtype.kind == "f" else np.ones(want.shape, bool)
        np.testing.assert_array_equal(np.signbit(got[number]), np.signbit(want[number]),
                                      err_msg=f"{op}: signs of zero differ")
        np.testing.assert_array_equal(got, want, err_msg=op)  # (NaN equals NaN here)
        return
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{op}: NaN positions differ")
    finite = ~np.isnan(want)
    ulps = 1 if accuracy is Accuracy.CORRECTLY_ROUNDED else 4
    np.testing.assert_array_max_ulp(got[finite], want[finite], maxulp=ulps)


@pytest.mark.parametrize("family", list(GRAPHS))
def test_ops_match_the_interpreter(results, family):
    graph, names, inputs, got, want = results[family]
    for name, g, w in zip(names, got, want):
        _check(graph.outputs[names.index(name)].producer.op, _as_numpy(g), w)


def test_results_never_alias_inputs(results, backend):
    graph, names, inputs, got, _ = results["f32"]
    x = torch.from_numpy(inputs[0].copy())
    out = backend.compile(graph, "cpu")(x, *inputs[1:])[names.index("reshape")]
    assert out.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    out.fill_(7.0)
    assert not torch.equal(x, out.reshape(-1))
