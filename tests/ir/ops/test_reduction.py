"""Reductions (ir/ops/reduction.py) against hand-checked values, NumPy and torch."""

from __future__ import annotations

import math
import re

import ml_dtypes
import numpy as np
import pytest
import torch

from parity.ir import OP_TABLE, Accuracy, DType, GraphBuilder, Group, Symbol, TensorType, TypeRuleError, evaluate
from parity.ir.dtypes import ALL_DTYPES, COMPLEX_DTYPES

NAN, INF = float("nan"), float("inf")


def run(op, *arrays, **attrs):
    """Evaluate one op on NumPy arrays through a built graph; return the list of results."""
    b = GraphBuilder(op)
    out = b.op(op, *(b.input(TensorType(DType.from_numpy(a.dtype), a.shape)) for a in arrays), **attrs)
    return evaluate(b.build(list(out) if isinstance(out, tuple) else [out]), list(arrays))


# op, dtype, input, axes, expected (hand-checked)
HAND = [
    ("reduce_sum", np.float32, [[1, 2], [3, 4]], (0,), [4, 6]),
    ("reduce_sum", np.float32, [[1, 2], [3, 4]], (1,), [3, 7]),
    ("reduce_sum", np.float32, [[1, 2], [3, 4]], (0, 1), 10),
    ("reduce_sum", np.float32, [[1, 2], [3, 4]], (), [[1, 2], [3, 4]]),
    ("reduce_sum", np.float64, [1, INF, -INF], (0,), NAN),
    ("reduce_sum", np.int8, [100, 100, 100], (0,), 44),  # 300 - 256
    ("reduce_sum", np.uint8, [200, 100], (0,), 44),
    ("reduce_sum", np.int64, [2**62, 2**62], (0,), -(2**63)),
    ("reduce_sum", np.uint32, [2**31, 2**31, 5], (0,), 5),
    ("reduce_prod", np.float32, [[1, 2], [3, 4]], (0,), [3, 8]),
    ("reduce_prod", np.int8, [3, 3, 3, 3, 3], (0,), -13),  # 243 - 256
    ("reduce_prod", np.int8, [16, 16], (0,), 0),
    ("reduce_prod", np.uint32, [65536, 65537], (0,), 65536),
    ("reduce_prod", np.int32, [-(2**31), -1], (0,), -(2**31)),
    ("reduce_prod", np.float64, [0.0, INF], (0,), NAN),
    ("reduce_max", np.float32, [[1, 5], [7, -2]], (1,), [5, 7]),
    ("reduce_max", np.float32, [1, NAN, 3], (0,), NAN),
    ("reduce_max", np.float32, [NAN, 1, 3], (0,), NAN),
    ("reduce_max", np.float32, [-INF, -INF], (0,), -INF),
    ("reduce_max", np.float16, [1, INF, 3], (0,), INF),
    ("reduce_max", np.int8, [-128, -127], (0,), -127),
    ("reduce_max", np.uint32, [2**32 - 1, 0], (0,), 2**32 - 1),
    ("reduce_min", np.float32, [[1, 5], [7, -2]], (0,), [1, -2]),
    ("reduce_min", np.float64, [1, 3, NAN], (0,), NAN),
    ("reduce_min", np.float32, [INF, 2, -INF], (0,), -INF),
    ("reduce_min", np.int64, [2**63 - 1, -(2**63)], (0,), -(2**63)),
    ("reduce_and", np.bool_, [[True, False], [True, True]], (1,), [False, True]),
    ("reduce_and", np.bool_, [[True, False], [True, True]], (0,), [True, False]),
    ("reduce_or", np.bool_, [[True, False], [False, False]], (1,), [True, False]),
    ("reduce_or", np.bool_, [[True, False], [False, False]], (0, 1), True),
]


@pytest.mark.parametrize("op, dtype, x, axes, expected", HAND)
def test_hand_checked(op, dtype, x, axes, expected):
    (out,) = run(op, np.array(x, dtype), axes=axes)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out, np.array(expected, dtype))


IDENTITIES = [
    ("reduce_sum", np.float32, 0), ("reduce_sum", np.int8, 0), ("reduce_sum", np.uint32, 0),
    ("reduce_prod", np.float16, 1), ("reduce_prod", np.int64, 1),
    ("reduce_max", np.float32, -INF), ("reduce_max", ml_dtypes.bfloat16, -INF),
    ("reduce_max", np.int32, -(2**31)), ("reduce_max", np.uint8, 0),
    ("reduce_min", np.float64, INF), ("reduce_min", np.int8, 127), ("reduce_min", np.uint32, 2**32 - 1),
    ("reduce_and", np.bool_, True), ("reduce_or", np.bool_, False),
]


@pytest.mark.parametrize("op, dtype, identity", IDENTITIES)
def test_empty_reduction_gives_identity(op, dtype, identity):
    (out,) = run(op, np.zeros((0, 3), dtype), axes=(0,))
    np.testing.assert_array_equal(out, np.full(3, identity, dtype))
    (whole,) = run(op, np.zeros((2, 0), dtype), axes=(0, 1))
    assert whole.shape == () and whole == np.array(identity, dtype)


@pytest.mark.parametrize("op", ["reduce_sum", "reduce_max", "reduce_and"])
def test_empty_kept_dim_gives_empty_result(op):
    dtype = np.bool_ if op == "reduce_and" else np.float32
    (out,) = run(op, np.ones((3, 0), dtype), axes=(0,))
    assert out.shape == (0,) and out.dtype == np.dtype(dtype)


def test_size_one_axes_and_rank_zero():
    x = np.array([[[-0.0]], [[2.5]]], np.float32)
    (out,) = run("reduce_sum", x, axes=(1, 2))
    np.testing.assert_array_equal(out, [0.0, 2.5])
    (low,) = run("reduce_min", x, axes=(1, 2))
    assert np.signbit(low[0])  # min over one term is that term, -0.0 included
    (scalar,) = run("reduce_max", np.array(3.0, np.float32), axes=())
    assert scalar.shape == () and scalar == 3.0


@pytest.mark.parametrize("n", [1, 4])
def test_sum_of_negative_zeros_is_positive_zero(n):
    # The sum folds from +0.0, as torch.sum and jnp.sum do.
    x = np.full(n, -0.0, np.float32)
    (out,) = run("reduce_sum", x, axes=(0,))
    assert out == 0.0 and not np.signbit(out)
    assert not np.signbit(torch.sum(torch.from_numpy(x)).item())


def test_long_float32_sum_is_computed_in_float64():
    n = 10**6
    x = np.full(n, 0.1, np.float32)
    (out,) = run("reduce_sum", x, axes=(0,))
    # n * f32(0.1) is exact in float64 (24 + 20 bits), so the one rounding gives exactly this:
    assert out == np.float32(n * np.float64(np.float32(0.1)))
    assert out != np.cumsum(x)[-1]  # what sequential float32 accumulation would give
    rng = np.random.default_rng(0)
    y = rng.standard_normal(n).astype(np.float32)
    (got,) = run("reduce_sum", y, axes=(0,))
    exact = math.fsum(y.astype(np.float64))
    # float64 accumulation then one rounding: within half an f32 ULP of the exact sum (plus a hair).
    assert abs(float(got) - exact) <= 0.5 * float(np.spacing(np.float32(exact))) * (1 + 1e-6)


def test_float16_sum_rounds_once():
    # 2048 + 1 + 1 in float16 step by step stays 2048 (ULP is 2); rounded once it is 2050.
    (out,) = run("reduce_sum", np.array([2048, 1, 1], np.float16), axes=(0,))
    assert out == np.float16(2050)


@pytest.mark.parametrize("op, torch_fn", [("reduce_sum", torch.sum), ("reduce_prod", torch.prod),
                                           ("reduce_max", torch.amax), ("reduce_min", torch.amin)])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_matches_torch_float64(op, torch_fn, axis):
    x = np.random.default_rng(axis).uniform(0.5, 1.5, (3, 4, 5))
    x[0, 1, 2] = NAN if op in ("reduce_max", "reduce_min") else x[0, 1, 2]
    (out,) = run(op, x, axes=(axis,))
    expected = torch_fn(torch.from_numpy(x), dim=axis).numpy()
    if op in ("reduce_max", "reduce_min"):
        np.testing.assert_array_equal(out, expected)
    else:  # the order of operations may differ from torch's: the accumulation bound, in float64
        n = x.shape[axis]
        terms = np.abs(x).sum(axis) if op == "reduce_sum" else np.abs(expected)
        assert np.all(np.abs(out - expected) <= n * np.finfo(np.float64).eps * terms)


# -- argmax / argmin ------------------------------------------------------------------------

# op, dtype, input, axis, expected index (hand-checked)
ARG_HAND = [
    ("argmax", np.float32, [1, 5, 5, 2], 0, 1),  # ties: lowest index
    ("argmin", np.float32, [3, 1, 2, 1], 0, 1),
    ("argmax", np.float32, [1, NAN, 9, NAN], 0, 1),  # NaN is the extreme: first NaN
    ("argmin", np.float32, [1, NAN, -9, NAN], 0, 1),
    ("argmax", np.float32, [0.0, -0.0], 0, 0),  # -0.0 == 0.0: a tie
    ("argmax", np.float32, [-0.0, 0.0], 0, 0),
    ("argmin", np.float64, [INF, -INF, -INF], 0, 1),
    ("argmax", np.float64, [-INF, -INF], 0, 0),
    ("argmax", np.int8, [-128, 127, 127], 0, 1),
    ("argmin", np.uint32, [7, 0, 0], 0, 1),
    ("argmax", np.float32, [[1, 9], [8, 2]], 0, [1, 0]),
    ("argmax", np.float32, [[1, 9], [8, 2]], 1, [1, 0]),
    ("argmin", np.int32, [[4]], 1, [0]),
]


@pytest.mark.parametrize("op, dtype, x, axis, expected", ARG_HAND)
def test_arg_hand_checked(op, dtype, x, axis, expected):
    (out,) = run(op, np.array(x, dtype), axis=axis)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("op, torch_fn", [("argmax", torch.argmax), ("argmin", torch.argmin)])
@pytest.mark.parametrize("axis", [0, 1])
def test_arg_matches_torch_with_ties_and_nan(op, torch_fn, axis):
    x = np.random.default_rng(1).integers(0, 3, (6, 7)).astype(np.float32)  # many ties
    x[2, 3] = x[4, 3] = x[5, 0] = NAN
    (out,) = run(op, x, axis=axis)
    np.testing.assert_array_equal(out, torch_fn(torch.from_numpy(x), dim=axis).numpy())


def test_arg_index_dtype():
    (out,) = run("argmax", np.array([[1, 3, 2]], np.float32), axis=1, index_dtype=DType.int32)
    assert out.dtype == np.int32 and out.tolist() == [1]


# -- the op table entries -------------------------------------------------------------------

@pytest.mark.parametrize("op, accuracy", [
    ("reduce_sum", Accuracy.ACCUMULATION), ("reduce_prod", Accuracy.ACCUMULATION),
    ("reduce_max", Accuracy.EXACT), ("reduce_min", Accuracy.EXACT), ("reduce_and", Accuracy.EXACT),
    ("reduce_or", Accuracy.EXACT), ("argmax", Accuracy.EXACT), ("argmin", Accuracy.EXACT),
])
def test_op_table_entries(op, accuracy):
    opdef = OP_TABLE[op]
    assert opdef.accuracy is accuracy and Group.REDUCTION in opdef.groups
    assert (Group.EXACT in opdef.groups) == (accuracy is Accuracy.EXACT)
    expected = (DType.bool,) if op in ("reduce_and", "reduce_or") else tuple(d for d in ALL_DTYPES if not d.is_bool)
    if op == "reduce_sum":  # the one reduction complex numbers take (docs/ir.md, "Complex numbers")
        expected += COMPLEX_DTYPES
    assert set(opdef.dtypes) == set(expected)


def test_symbolic_dims_pass_through():
    b = GraphBuilder()
    x = b.input(TensorType(DType.float32, (Symbol("B"), 4)))
    assert b.reduce_sum(x, axes=(1,)).type == TensorType(DType.float32, (Symbol("B"),))
    assert b.argmax(x, axis=1).type == TensorType(DType.int64, (Symbol("B"),))


# -- type rules -----------------------------------------------------------------------------

# op, dtype, shape, attrs, offending operand/attribute, message fragment
ERRORS = [
    ("reduce_sum", np.float32, (2, 3), {"axes": (2,)}, "axes", "axis 2 is out of range for rank 2"),
    ("reduce_sum", np.float32, (2, 3), {"axes": (1, 1)}, "axes", "repeat"),
    ("reduce_sum", np.bool_, (2,), {"axes": (0,)}, 0, "dtype bool is not accepted"),
    ("reduce_max", np.bool_, (2,), {"axes": (0,)}, 0, "dtype bool is not accepted"),
    ("reduce_and", np.float32, (2,), {"axes": (0,)}, 0, "dtype f32 is not accepted; accepted: bool"),
    ("reduce_or", np.int32, (2,), {"axes": (0,)}, 0, "accepted: bool"),
    ("reduce_sum", np.float32, (2,), {}, "axes", "missing required attribute"),
    ("argmax", np.float32, (2, 0), {"axis": 1}, "axis", "axis 1 of f32[2,0] is empty"),
    ("argmin", np.float32, (2,), {"axis": 1}, "axis", "out of range"),
    ("argmax", np.float32, (2,), {"axis": 0, "index_dtype": DType.float32}, "index_dtype", "integer dtype"),
    ("argmax", np.float32, (300,), {"axis": 0, "index_dtype": DType.int8}, "index_dtype",
     "i8 cannot hold indices up to 299"),
    ("argmax", np.bool_, (2,), {"axis": 0}, 0, "dtype bool is not accepted"),
]


@pytest.mark.parametrize("op, dtype, shape, attrs, where, message", ERRORS)
def test_type_rule_errors(op, dtype, shape, attrs, where, message):
    b = GraphBuilder()
    x = b.input(TensorType(DType.from_numpy(dtype), shape))
    with pytest.raises(TypeRuleError, match=re.escape(message)) as info:
        b.op(op, x, **attrs)
    assert info.value.op == op and info.value.operand == where
    assert str(info.value).startswith(op)
