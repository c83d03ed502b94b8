"""sort and top_k (ir/ops/sorting.py) against hand-checked orders, NumPy and torch."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from parity.ir import OP_TABLE, Accuracy, DType, GraphBuilder, Group, Symbol, TensorType, TypeRuleError, evaluate
from parity.ir.dtypes import ALL_DTYPES

NAN, INF = float("nan"), float("inf")
I64_MIN, I64_MAX = -(2**63), 2**63 - 1


def run(op, *arrays, **attrs):
    """Evaluate one op on NumPy arrays through a built graph; return the list of results."""
    b = GraphBuilder(op)
    out = b.op(op, *(b.input(TensorType(DType.from_numpy(a.dtype), a.shape)) for a in arrays), **attrs)
    return evaluate(b.build(list(out) if isinstance(out, tuple) else [out]), list(arrays))


MIXED = [0.0, -0.0, NAN, 1, -INF, NAN, -0.0, 0.0, INF]

# dtype, input, descending, expected indices (hand-checked, axis 0)
SORT_HAND = [
    # NaN after +inf ascending; -0.0 and 0.0 equal, so they keep their original order.
    (np.float32, MIXED, False, [4, 0, 1, 6, 7, 3, 8, 2, 5]),
    # Descending: NaN first (in original order), ties still in original order.
    (np.float32, MIXED, True, [2, 5, 8, 3, 0, 1, 6, 7, 4]),
    (np.float64, [3, 1, 3, 1, 2], False, [1, 3, 4, 0, 2]),
    (np.float64, [3, 1, 3, 1, 2], True, [0, 2, 4, 1, 3]),
    (np.int64, [I64_MAX, I64_MIN, 0, I64_MIN], False, [1, 3, 2, 0]),
    (np.int64, [I64_MAX, I64_MIN, 0, I64_MIN], True, [0, 2, 1, 3]),
    (np.uint8, [255, 0, 255, 7], True, [0, 2, 3, 1]),
    (np.int8, [5], True, [0]),
]


@pytest.mark.parametrize("dtype, x, descending, order", SORT_HAND)
def test_sort_hand_checked(dtype, x, descending, order):
    x = np.array(x, dtype)
    values, indices = run("sort", x, axis=0, descending=descending)
    assert values.dtype == x.dtype and indices.dtype == np.int64
    assert indices.tolist() == order
    # Values are the elements themselves, bit for bit: -0.0 stays where its index says.
    assert values.tobytes() == x[order].tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8])
@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_matches_torch_stable(dtype, axis, descending):
    x = np.random.default_rng(axis).integers(0, 4, (3, 5, 6)).astype(dtype)  # many ties
    if np.dtype(dtype).kind == "f":
        x[0, 1, 2] = x[1, 1, 2] = x[2, 4, 5] = NAN
        x[1, 0, 0] = -0.0
    values, indices = run("sort", x, axis=axis, descending=descending)
    expected = torch.sort(torch.from_numpy(x), dim=axis, descending=descending, stable=True)
    np.testing.assert_array_equal(indices, expected.indices.numpy())
    np.testing.assert_array_equal(values, expected.values.numpy())


def test_sort_float16_keeps_values_exactly():
    x = np.array([65504, -65504, 6e-8, -6e-8, 0.1], np.float16)  # max, min, subnormals
    values, indices = run("sort", x, axis=0)
    assert indices.tolist() == [1, 3, 2, 4, 0]
    assert values.tobytes() == x[[1, 3, 2, 4, 0]].tobytes()


@pytest.mark.parametrize("shape, axis", [((0,), 0), ((2, 0), 1), ((0, 3), 1), ((4, 1), 1)])
def test_sort_empty_and_size_one(shape, axis):
    x = np.ones(shape, np.float32)
    values, indices = run("sort", x, axis=axis, descending=True)
    assert values.shape == indices.shape == shape
    np.testing.assert_array_equal(indices, np.zeros(shape, np.int64))


# dtype, input (last axis), k, largest, expected indices (hand-checked)
TOP_K_HAND = [
    (np.float32, [1, 5, 3, 5, 2], 3, True, [1, 3, 2]),  # ties: lower index first
    (np.float32, [1, 5, 3, 5, 2], 2, False, [0, 4]),
    (np.float32, [2, 2, 2], 2, False, [0, 1]),
    (np.float32, [1, NAN, INF, NAN], 3, True, [1, 3, 2]),  # NaN counts as the largest
    (np.float32, [1, NAN, -INF, NAN], 2, False, [2, 0]),
    (np.float32, [0.0, -0.0, 0.0], 2, True, [0, 1]),  # -0.0 == 0.0: a tie
    (np.float32, [4, 3], 0, True, []),
    (np.float32, [4, 3], 2, False, [1, 0]),
    (np.int32, [[-(2**31), 2**31 - 1, 0], [7, 7, 7]], 2, True, [[1, 2], [0, 1]]),
    (np.uint32, [2**32 - 1, 0, 5], 1, False, [1]),
]


@pytest.mark.parametrize("dtype, x, k, largest, order", TOP_K_HAND)
def test_top_k_hand_checked(dtype, x, k, largest, order):
    x = np.array(x, dtype)
    values, indices = run("top_k", x, k=k, largest=largest)
    assert values.dtype == x.dtype and indices.dtype == np.int64
    assert indices.tolist() == order
    np.testing.assert_array_equal(values, np.take_along_axis(x, np.array(order, np.int64).reshape(
        x.shape[:-1] + (k,)), -1))


@pytest.mark.parametrize("k", [1, 4, 7])
@pytest.mark.parametrize("largest", [False, True])
def test_top_k_matches_torch(k, largest):
    # Distinct values, so torch.topk's order is fully determined (it does not promise a tie order).
    x = np.random.default_rng(k).permutation(3 * 7).reshape(3, 7).astype(np.float32) - 10
    values, indices = run("top_k", x, k=k, largest=largest)
    expected = torch.topk(torch.from_numpy(x), k, dim=-1, largest=largest, sorted=True)
    np.testing.assert_array_equal(values, expected.values.numpy())
    np.testing.assert_array_equal(indices, expected.indices.numpy())


def test_top_k_with_ties_agrees_with_descending_stable_sort():
    x = np.random.default_rng(5).integers(0, 3, (4, 9)).astype(np.float64)
    x[1, 4] = NAN
    values, indices = run("top_k", x, k=5)
    ordered = torch.sort(torch.from_numpy(x), dim=-1, descending=True, stable=True)
    np.testing.assert_array_equal(indices, ordered.indices[:, :5].numpy())
    np.testing.assert_array_equal(values, ordered.values[:, :5].numpy())


@pytest.mark.parametrize("op", ["sort", "top_k"])
def test_op_table_entries(op):
    opdef = OP_TABLE[op]
    assert opdef.accuracy is Accuracy.EXACT and Group.EXACT in opdef.groups and opdef.num_results == 2
    assert set(opdef.dtypes) == {d for d in ALL_DTYPES if not d.is_bool}


def test_symbolic_dims_pass_through():
    b = GraphBuilder()
    x = b.input(TensorType(DType.float32, (Symbol("B"), 6)))
    values, indices = b.sort(x, axis=0)
    assert values.type == x.type and indices.type == TensorType(DType.int64, (Symbol("B"), 6))
    values, indices = b.top_k(x, k=2)
    assert values.type == TensorType(DType.float32, (Symbol("B"), 2)) and indices.dtype is DType.int64


# op, dtype, shape, attrs, offending operand/attribute, message fragment
ERRORS = [
    ("sort", np.float32, (2, 3), {"axis": 2}, "axis", "axis 2 is out of range for rank 2"),
    ("sort", np.bool_, (2,), {"axis": 0}, 0, "dtype bool is not accepted"),
    ("top_k", np.float32, (2, 3), {"k": 4}, "k", "k=4 must be in [0, 3] (the last dimension of f32[2,3])"),
    ("top_k", np.float32, (3,), {"k": -1}, "k", "must be in [0, 3]"),
    ("top_k", np.float32, (), {"k": 1}, 0, "needs at least one axis"),
    ("top_k", np.int8, (3,), {}, "k", "missing required attribute"),
]


@pytest.mark.parametrize("op, dtype, shape, attrs, where, message", ERRORS)
def test_type_rule_errors(op, dtype, shape, attrs, where, message):
    b = GraphBuilder()
    x = b.input(TensorType(DType.from_numpy(dtype), shape))
    with pytest.raises(TypeRuleError, match=re.escape(message)) as info:
        b.op(op, x, **attrs)
    assert info.value.op == op and info.value.operand == where


def test_top_k_needs_static_last_dim():
    b = GraphBuilder()
    x = b.input(TensorType(DType.float32, (4, Symbol("N"))))
    with pytest.raises(TypeRuleError, match="must be static"):
        b.top_k(x, k=1)
