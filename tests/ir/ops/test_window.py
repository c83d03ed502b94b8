"""reduce_window (ir/ops/window.py) against hand-checked values and torch pooling."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from parity.ir import OP_TABLE, Accuracy, DType, GraphBuilder, Symbol, TensorType, TypeRuleError, evaluate
from parity.ir.dtypes import ALL_DTYPES

NAN, INF = float("nan"), float("inf")


def reduce_window(x, kind, window, strides=None, padding=None, dilations=None):
    """Evaluate reduce_window on a NumPy array; unspecified geometry is the trivial one."""
    rank = x.ndim
    b = GraphBuilder()
    y = b.reduce_window(b.input(TensorType(DType.from_numpy(x.dtype), x.shape)), kind=kind,
                        window_dimensions=window, window_strides=strides or (1,) * rank,
                        padding=padding or ((0, 0),) * rank, window_dilations=dilations or (1,) * rank)
    return evaluate(b.build([y]), [x])[0]


# dtype, input, kind, window, strides, padding, dilations, expected (hand-checked, 1-d)
HAND = [
    (np.float32, [1, 3, 2, -1, 7], "max", 2, 1, (0, 0), 1, [3, 3, 2, 7]),
    (np.float32, [1, 3, 2, -1, 7], "sum", 2, 2, (0, 1), 1, [4, 1, 7]),
    (np.float32, [1, 3, 2, -1, 7], "max", 2, 1, (0, 0), 2, [2, 3, 7]),  # dilated window: x[i], x[i+2]
    (np.float32, [-5, -6], "max", 2, 1, (1, 1), 1, [-5, -5, -6]),  # padding with -inf never wins
    (np.float32, [1, NAN, 2, 3], "max", 2, 1, (0, 0), 1, [NAN, NAN, 3]),
    (np.float64, [INF, -INF, 1], "sum", 2, 1, (0, 0), 1, [NAN, -INF]),
    (np.float32, [1, 2, 3, 4, 5], "sum", 2, 1, (-1, -1), 1, [5, 7]),  # negative padding crops
    (np.float32, [1, 2], "sum", 3, 1, (0, 0), 1, []),  # the window does not fit
    (np.float32, [1, 2], "max", 3, 1, (1, 0), 1, [2]),
    (np.int8, [-128, -100], "max", 2, 1, (1, 1), 1, [-128, -100, -100]),  # ints pad with the dtype's min
    (np.int8, [100, 100, 100], "sum", 3, 1, (0, 0), 1, [44]),  # ints wrap
    (np.uint8, [200, 100], "sum", 2, 1, (1, 1), 1, [200, 44, 100]),
]


@pytest.mark.parametrize("dtype, x, kind, window, stride, pad, dilation, expected", HAND)
def test_hand_checked(dtype, x, kind, window, stride, pad, dilation, expected):
    out = reduce_window(np.array(x, dtype), kind, (window,), (stride,), (pad,), (dilation,))
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out, np.array(expected, dtype))


def test_float16_sum_rounds_once():
    # 2048 + 1 + 1 step by step in float16 stays 2048 (ULP 2); summed wide and rounded once: 2050.
    out = reduce_window(np.array([2048, 1, 1], np.float16), "sum", (3,))
    assert out.tolist() == [2050.0]


def test_negative_zero_max_window_keeps_negative_zero():
    out = reduce_window(np.array([-0.0, -0.0], np.float32), "max", (2,))
    assert np.signbit(out).tolist() == [True]


# torch pooling geometry: kernel, stride, padding, dilation (per spatial dim)
POOL_2D = [
    ((2, 2), (2, 2), (0, 0), (1, 1)),
    ((3, 3), (1, 1), (1, 1), (1, 1)),
    ((3, 2), (2, 1), (1, 0), (1, 1)),
    ((2, 3), (1, 2), (1, 1), (2, 1)),
    ((1, 1), (3, 3), (0, 0), (1, 1)),
]


def _geometry(kernel, stride, padding, dilation):
    """torch's per-spatial-dim pooling arguments as reduce_window's per-dim attributes."""
    return ((1, 1) + kernel, (1, 1) + stride, ((0, 0), (0, 0)) + tuple((p, p) for p in padding),
            (1, 1) + dilation)


@pytest.mark.parametrize("kernel, stride, padding, dilation", POOL_2D)
def test_max_pool2d(kernel, stride, padding, dilation):
    x = np.random.default_rng(0).standard_normal((2, 3, 7, 8)).astype(np.float32)
    x[0, 1, 3, 3] = NAN
    x[1, 2, 0, 0] = INF
    out = reduce_window(x, "max", *_geometry(kernel, stride, padding, dilation))
    expected = F.max_pool2d(torch.from_numpy(x), kernel, stride, padding, dilation).numpy()
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("kernel, stride, padding, dilation", [g for g in POOL_2D if g[3] == (1, 1)])
def test_avg_pool2d_is_sum_over_window_size(kernel, stride, padding, dilation):
    x = np.random.default_rng(1).standard_normal((2, 3, 7, 8))
    out = reduce_window(x, "sum", *_geometry(kernel, stride, padding, dilation))
    n = kernel[0] * kernel[1]
    average = F.avg_pool2d(torch.from_numpy(x), kernel, stride, padding, count_include_pad=True).numpy()
    terms = reduce_window(np.abs(x), "sum", *_geometry(kernel, stride, padding, dilation))
    # Different operation order than torch: the accumulation bound, in float64.
    assert np.all(np.abs(out - average * n) <= n * np.finfo(np.float64).eps * terms)


@pytest.mark.parametrize("torch_pool, spatial", [(F.max_pool1d, 1), (F.max_pool3d, 3)])
def test_max_pool_1d_3d(torch_pool, spatial):
    x = np.random.default_rng(spatial).standard_normal((2, 2) + (5,) * spatial).astype(np.float32)
    kernel, stride, padding, dilation = (2,) * spatial, (2,) * spatial, (1,) * spatial, (2,) * spatial
    out = reduce_window(x, "max", *_geometry(kernel, stride, padding, dilation))
    np.testing.assert_array_equal(out, torch_pool(torch.from_numpy(x), kernel, stride, padding, dilation).numpy())


def test_windows_over_batch_dims_and_empty_input():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    out = reduce_window(x, "sum", (3, 2), (1, 2))  # a window spanning the leading dim too
    np.testing.assert_array_equal(out, [[0 + 1 + 4 + 5 + 8 + 9, 2 + 3 + 6 + 7 + 10 + 11]])
    empty = reduce_window(np.zeros((0, 4), np.float32), "max", (1, 2))
    assert empty.shape == (0, 3)


def test_op_table_entry():
    opdef = OP_TABLE["reduce_window"]
    assert opdef.accuracy is Accuracy.ACCUMULATION
    assert set(opdef.dtypes) == {d for d in ALL_DTYPES if not d.is_bool}
    assert all(spec.required for spec in opdef.attrs)  # every dimension is always spelled out


def test_symbolic_dim_needs_a_trivial_window():
    b = GraphBuilder()
    x = b.input(TensorType(DType.float32, (Symbol("B"), 6)))
    y = b.reduce_window(x, kind="max", window_dimensions=(1, 2), window_strides=(1, 2),
                        padding=((0, 0), (0, 0)), window_dilations=(1, 1))
    assert y.type == TensorType(DType.float32, (Symbol("B"), 3))
    with pytest.raises(TypeRuleError, match="dimension 0 of f32\\[B,6\\] is symbolic"):
        b.reduce_window(x, kind="max", window_dimensions=(2, 2), window_strides=(1, 2),
                        padding=((0, 0), (0, 0)), window_dilations=(1, 1))


GOOD = {"kind": "max", "window_dimensions": (2, 2), "window_strides": (1, 1), "padding": ((0, 0), (0, 0)),
        "window_dilations": (1, 1)}

# attribute overrides, offending operand/attribute, message fragment (operand f32[4,4])
ERRORS = [
    ({"window_dimensions": (2,)}, "window_dimensions", "lists 1 entries, expected 2 (one per dimension of x)"),
    ({"padding": ((0, 0),) * 3}, "padding", "lists 3 entries, expected 2"),
    ({"window_strides": (1, 0)}, "window_strides", "entries must be >= 1, got [1, 0]"),
    ({"window_dimensions": (0, 2)}, "window_dimensions", "entries must be >= 1"),
    ({"window_dilations": (1, -1)}, "window_dilations", "entries must be >= 1"),
    ({"kind": "min"}, "kind", "must be one of ['max', 'sum'], got 'min'"),
    ({"padding": ((0, 0), (1,))}, "padding", "expected a value of kind pairs"),
]


@pytest.mark.parametrize("overrides, where, message", ERRORS)
def test_type_rule_errors(overrides, where, message):
    b = GraphBuilder()
    x = b.input(TensorType(DType.float32, (4, 4)))
    with pytest.raises(TypeRuleError, match=re.escape(message)) as info:
        b.reduce_window(x, **(GOOD | overrides))
    assert info.value.op == "reduce_window" and info.value.operand == where


def test_bool_is_rejected():
    b = GraphBuilder()
    x = b.input(TensorType(DType.bool, (4, 4)))
    with pytest.raises(TypeRuleError, match="dtype bool is not accepted") as info:
        b.reduce_window(x, **GOOD)
    assert info.value.operand == 0
