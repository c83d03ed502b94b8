"""Scans (ir/ops/scan.py) against hand-checked values, NumPy and torch."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from parity.ir import OP_TABLE, Accuracy, DType, GraphBuilder, Group, Symbol, TensorType, TypeRuleError, evaluate
from parity.ir.dtypes import ALL_DTYPES

NAN, INF = float("nan"), float("inf")


def run(op, *arrays, **attrs):
    """Evaluate one op on NumPy arrays through a built graph; return the list of results."""
    b = GraphBuilder(op)
    out = b.op(op, *(b.input(TensorType(DType.from_numpy(a.dtype), a.shape)) for a in arrays), **attrs)
    return evaluate(b.build(list(out) if isinstance(out, tuple) else [out]), list(arrays))


# op, dtype, input, reverse, expected (hand-checked, axis 0)
HAND = [
    ("cumsum", np.float32, [1, 2, 3, 4], False, [1, 3, 6, 10]),
    ("cumsum", np.float32, [1, 2, 3, 4], True, [10, 9, 7, 4]),
    ("cumsum", np.float64, [1, INF, -INF, 2], False, [1, INF, NAN, NAN]),
    ("cumsum", np.int8, [100, 100, 100], False, [100, -56, 44]),  # wraps mod 256
    ("cumsum", np.int8, [100, 100, 100], True, [44, -56, 100]),
    ("cumsum", np.uint8, [255, 1, 2], False, [255, 0, 2]),
    ("cumsum", np.int64, [2**63 - 1, 1], False, [2**63 - 1, -(2**63)]),
    ("cumprod", np.float32, [1, 2, 3, 4], False, [1, 2, 6, 24]),
    ("cumprod", np.float32, [1, 2, 3, 4], True, [24, 24, 12, 4]),
    ("cumprod", np.float64, [2, 0, INF], False, [2, 0, NAN]),
    ("cumprod", np.uint8, [16, 16, 2], False, [16, 0, 0]),
    ("cumprod", np.int32, [-(2**31), -1, 3], False, [-(2**31), -(2**31), -(2**31)]),  # INT_MIN * -1 wraps
    ("cummax", np.float32, [1, 3, 2, 5], False, [1, 3, 3, 5]),
    ("cummax", np.float32, [1, 3, 2, 5], True, [5, 5, 5, 5]),
    ("cummax", np.float32, [1, NAN, 5, 0], False, [1, NAN, NAN, NAN]),  # NaN sticks
    ("cummax", np.float32, [1, NAN, 5, 0], True, [NAN, NAN, 5, 0]),
    ("cummax", np.float64, [-INF, -INF, INF], False, [-INF, -INF, INF]),
    ("cummax", np.int8, [-128, -128, 127], False, [-128, -128, 127]),
    ("cummin", np.float32, [4, 2, 3, 1], False, [4, 2, 2, 1]),
    ("cummin", np.float32, [4, 2, 3, 1], True, [1, 1, 1, 1]),
    ("cummin", np.float16, [NAN, -INF, 0], False, [NAN, NAN, NAN]),
    ("cummin", np.uint32, [2**32 - 1, 7, 9], False, [2**32 - 1, 7, 7]),
]


@pytest.mark.parametrize("op, dtype, x, reverse, expected", HAND)
def test_hand_checked(op, dtype, x, reverse, expected):
    (out,) = run(op, np.array(x, dtype), axis=0, reverse=reverse)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out, np.array(expected, dtype))


def test_cumsum_starts_at_positive_zero():
    x = np.array([-0.0, -0.0, 1.0], np.float32)
    (out,) = run("cumsum", x, axis=0)
    assert out.tolist() == [0.0, 0.0, 1.0] and not np.signbit(out).any()
    assert not torch.cumsum(torch.from_numpy(x), 0).signbit().any()
    (low,) = run("cummin", x, axis=0)
    assert np.signbit(low).tolist() == [True, True, True]  # cummin passes each -0.0 through


@pytest.mark.parametrize("op, torch_fn", [
    ("cumsum", torch.cumsum), ("cumprod", torch.cumprod),
    ("cummax", lambda t, dim: torch.cummax(t, dim).values),
    ("cummin", lambda t, dim: torch.cummin(t, dim).values),
])
@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("reverse", [False, True])
def test_matches_torch(op, torch_fn, axis, reverse):
    x = np.random.default_rng(axis).uniform(0.5, 1.5, (3, 4, 5))
    x[1, 2, 3] = NAN
    t = torch.from_numpy(x)
    expected = (torch_fn(t.flip(axis), dim=axis).flip(axis) if reverse else torch_fn(t, dim=axis)).numpy()
    (out,) = run(op, x, axis=axis, reverse=reverse)
    if op in ("cummax", "cummin"):
        np.testing.assert_array_equal(out, expected)
    else:  # the order of operations may differ from torch's: the accumulation bound, in float64
        n = x.shape[axis]
        terms = np.abs(out)  # inputs are positive: |partial sum| = sum of |terms|; products are relative
        assert np.array_equal(np.isnan(out), np.isnan(expected))
        ok = np.isnan(out) | (np.abs(out - expected) <= n * np.finfo(np.float64).eps * terms)
        assert ok.all()


@pytest.mark.parametrize("op, dtype", [("cumsum", np.int32), ("cumprod", np.int64), ("cummax", np.int16)])
def test_integers_match_torch(op, dtype):
    x = np.random.default_rng(3).integers(-50, 50, (4, 30)).astype(dtype)
    (out,) = run(op, x, axis=1)
    t = torch.from_numpy(x)
    expected = torch.cummax(t, 1).values if op == "cummax" else getattr(torch, op)(t, 1, dtype=t.dtype)
    np.testing.assert_array_equal(out, expected.numpy())


def test_long_float32_cumsum_is_computed_in_float64():
    n = 10**6
    x = np.full(n, 0.1, np.float32)
    (out,) = run("cumsum", x, axis=0)
    # Every partial sum k * f32(0.1) is exact in float64, so each output is that, rounded once.
    expected = (np.arange(1, n + 1) * np.float64(np.float32(0.1))).astype(np.float32)
    np.testing.assert_array_equal(out, expected)
    assert out[-1] != np.cumsum(x)[-1]  # sequential float32 accumulation drifts


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "cummax", "cummin"])
@pytest.mark.parametrize("shape, axis", [((0,), 0), ((3, 0), 1), ((0, 3), 1), ((1, 3), 0)])
def test_empty_and_size_one(op, shape, axis):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) + 2
    (out,) = run(op, x, axis=axis, reverse=True)
    assert out.shape == shape
    np.testing.assert_array_equal(out, x)  # empty, or one element per scanned line


@pytest.mark.parametrize("op, accuracy", [("cumsum", Accuracy.ACCUMULATION), ("cumprod", Accuracy.ACCUMULATION),
                                          ("cummax", Accuracy.EXACT), ("cummin", Accuracy.EXACT)])
def test_op_table_entries(op, accuracy):
    opdef = OP_TABLE[op]
    assert opdef.accuracy is accuracy and Group.SCAN in opdef.groups
    assert (Group.EXACT in opdef.groups) == (accuracy is Accuracy.EXACT)
    assert set(opdef.dtypes) == {d for d in ALL_DTYPES if not d.is_bool}
    assert opdef.attr_specs["reverse"].default is False


def test_symbolic_dims_pass_through():
    b = GraphBuilder()
    t = TensorType(DType.float32, (Symbol("B"), 4))
    assert b.cumsum(b.input(t), axis=0).type == t


# op, dtype, shape, attrs, offending operand/attribute, message fragment
ERRORS = [
    ("cumsum", np.float32, (2, 3), {"axis": 2}, "axis", "axis 2 is out of range for rank 2"),
    ("cummax", np.float32, (), {"axis": 0}, "axis", "axis 0 is out of range for rank 0"),
    ("cumprod", np.bool_, (2,), {"axis": 0}, 0, "dtype bool is not accepted"),
    ("cummin", np.float32, (2,), {}, "axis", "missing required attribute"),
    ("cumsum", np.float32, (2,), {"axis": 0, "reverse": 1}, "reverse", "expected a value of kind bool"),
]


@pytest.mark.parametrize("op, dtype, shape, attrs, where, message", ERRORS)
def test_type_rule_errors(op, dtype, shape, attrs, where, message):
    b = GraphBuilder()
    x = b.input(TensorType(DType.from_numpy(dtype), shape))
    with pytest.raises(TypeRuleError, match=re.escape(message)) as info:
        b.op(op, x, **attrs)
    assert info.value.op == op and info.value.operand == where
