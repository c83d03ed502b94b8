"""select and clamp (ir/ops/selection.py): every dtype, bit-exact picks (signed zeros, NaN
payloads), NaN propagation, shapes and type-rule errors."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest
import torch

from parity.ir import OP_TABLE, Accuracy, DType, GraphBuilder, Group, TensorType, TypeRuleError, evaluate

NAN, INF = float("nan"), float("inf")


def run(op, *arrays, oracle=False):
    b = GraphBuilder(op)
    inputs = [b.input(TensorType(DType.from_numpy(a.dtype), a.shape)) for a in arrays]
    return evaluate(b.build([b.op(op, *inputs)]), list(arrays), oracle=oracle)[0]


def bits(a):
    """The raw bits of an array (floats compared bit for bit)."""
    return a.view(np.dtype(f"u{a.dtype.itemsize}")) if a.dtype.kind not in "biu" else a


def values(dtype, seed):
    """A mix of edge and random values of ``dtype``; floats include -0.0, ±inf and a NaN payload."""
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.integers(0, 2, 12).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return np.concatenate([np.array([info.min, info.max, 0], dtype), rng.integers(info.min, info.max, 9, dtype)])
    unsigned = np.dtype(f"u{dtype.itemsize}")
    quiet_nan_payload = (np.array([NAN]).astype(dtype).view(unsigned) | 1).view(dtype)  # a quiet NaN, payload 1
    specials = np.array([-0.0, 0.0, INF, -INF, 1.5, -2.5]).astype(dtype)
    return np.concatenate([specials, quiet_nan_payload, rng.standard_normal(5).astype(dtype)])


ALL = [DType.from_numpy(d) for d in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32,
                                     np.float16, ml_dtypes.bfloat16, np.float32, np.float64)]


@pytest.mark.parametrize("oracle", [False, True], ids=["native", "oracle"])
@pytest.mark.parametrize("dtype", ALL, ids=[d.short for d in ALL])
def test_select_picks_bits_exactly(dtype, oracle):
    on_true, on_false = values(dtype.numpy, 0), values(dtype.numpy, 1)
    pred = np.random.default_rng(2).integers(0, 2, on_true.shape).astype(bool)
    out = run("select", pred, on_true, on_false, oracle=oracle)
    expected = torch.where(torch.from_numpy(pred), torch.from_numpy(bits(on_true).astype(np.int64)),
                           torch.from_numpy(bits(on_false).astype(np.int64))).numpy()
    if oracle and dtype.is_float:  # float64, holding the operands' values (NaN payloads included)
        wide = [torch.from_numpy(bits(a.astype(np.float64)).astype(np.int64)) for a in (on_true, on_false)]
        expected = torch.where(torch.from_numpy(pred), *wide).numpy()
        assert out.dtype == np.float64
    else:
        assert out.dtype == dtype.numpy
    np.testing.assert_array_equal(bits(out).astype(np.int64), expected)


def test_select_hand_checked():
    pred = np.array([True, False, True, False])
    out = run("select", pred, np.array([-0.0, 1.0, NAN, 2.0], np.float32), np.array([9.0, -0.0, 0.0, -INF], np.float32))
    np.testing.assert_array_equal(out, np.array([-0.0, -0.0, NAN, -INF], np.float32))
    assert np.signbit(out).tolist() == [True, True, False, True]


@pytest.mark.parametrize("shape", [(0,), (3, 0), (1,), (1, 1), ()])
def test_select_empty_and_size_one_shapes(shape):
    pred = np.ones(shape, bool)
    out = run("select", pred, np.full(shape, 7, np.int16), np.zeros(shape, np.int16))
    assert out.shape == shape and out.dtype == np.int16
    np.testing.assert_array_equal(out, np.full(shape, 7, np.int16))


# dtype, lo, x, hi, expected (hand-checked)
CLAMP = [
    (np.float32, [0.0, 0.0, 0.0, 0.0, NAN, 0.0], [-1.0, 0.5, 7.0, NAN, 0.5, 0.5], [1.0, 1.0, 1.0, 1.0, 1.0, NAN],
     [0.0, 0.5, 1.0, NAN, NAN, NAN]),
    (np.float64, [-INF, 2.0], [-1e308, 0.0], [INF, 1.0], [-1e308, 1.0]),  # lo > hi gives hi
    (np.float16, [-1.0], [-INF], [65504.0], [-1.0]),
    (ml_dtypes.bfloat16, [0.0], [1e-40], [1.0], [1e-40]),  # a subnormal stays
    (np.int8, [-128, -5, 0], [127, -128, 5], [127, 5, 3], [127, -5, 3]),
    (np.uint32, [0, 10], [2**32 - 1, 0], [2**32 - 1, 20], [2**32 - 1, 10]),
    (np.int64, [-(2**63)], [2**62], [2**63 - 1], [2**62]),
]


@pytest.mark.parametrize("dtype, lo, x, hi, expected", CLAMP, ids=[np.dtype(c[0]).name for c in CLAMP])
def test_clamp_hand_checked(dtype, lo, x, hi, expected):
    out = run("clamp", *(np.array(v).astype(dtype) for v in (lo, x, hi)))
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out.astype(np.float64), np.array(expected).astype(dtype).astype(np.float64))


NUMERIC = [d for d in ALL if not d.is_bool]


@pytest.mark.parametrize("dtype", NUMERIC, ids=[d.short for d in NUMERIC])
def test_clamp_matches_torch_on_every_dtype(dtype):
    lo, x, hi = values(dtype.numpy, 3), values(dtype.numpy, 4), values(dtype.numpy, 5)
    out = run("clamp", lo, x, hi)
    wide = [torch.from_numpy(a.astype(np.float64 if dtype.is_float else np.int64)) for a in (lo, x, hi)]
    expected = torch.minimum(torch.maximum(wide[1], wide[0]), wide[2]).numpy().astype(dtype.numpy)
    assert out.dtype == dtype.numpy
    number = ~np.isnan(expected.astype(np.float64)) if dtype.is_float else slice(None)
    np.testing.assert_array_equal(out.astype(np.float64), expected.astype(np.float64))  # NaNs at the same places
    if dtype.is_float:  # every non-NaN result is one of the operands, bit for bit (zeros keep signs)
        np.testing.assert_array_equal(bits(out)[number], bits(expected)[number])


def test_table_entries():
    for op in ("select", "clamp"):
        opdef = OP_TABLE[op]
        assert opdef.accuracy is Accuracy.EXACT
        assert opdef.groups == frozenset({Group.ELEMENTWISE, Group.EXACT, Group.NO_FUSED_ADD})
    assert OP_TABLE["select"].operands == ("pred", "on_true", "on_false")
    assert OP_TABLE["clamp"].operands == ("lo", "x", "hi")
    assert DType.bool in OP_TABLE["select"].dtypes and DType.bool not in OP_TABLE["clamp"].dtypes


f32, i32, b8 = DType.float32, DType.int32, DType.bool
# op, operand types, the operand the error names, a fragment of the message
REJECTED = [
    ("select", (i32[3], f32[3], f32[3]), 0, "the predicate must be bool, got i32[3]"),
    ("select", (b8[4], f32[3], f32[3]), 0, "predicate shape bool[4] differs from on_true's f32[3]"),
    ("select", (b8[3], f32[3], i32[3]), 2, "dtype i32 differs from on_true's f32; insert a convert"),
    ("select", (b8[3], f32[3], f32[1]), 2, "shape f32[1] differs from on_true's f32[3]; insert a broadcast_in_dim"),
    ("clamp", (b8[3], b8[3], b8[3]), 1, "dtype bool is not accepted"),
    ("clamp", (i32[3], f32[3], f32[3]), 0, "dtype i32 differs from x's f32"),
    ("clamp", (f32[3], f32[3], f32[()]), 2, "shape f32[] differs from x's f32[3]"),
]


@pytest.mark.parametrize("op, types, operand, message", REJECTED)
def test_type_rule_errors_name_op_and_operand(op, types, operand, message):
    b = GraphBuilder()
    with pytest.raises(TypeRuleError, match=rf"^{op} \(operand {operand}\): {re.escape(message)}") as info:
        b.op(op, *(b.input(t) for t in types))
    assert (info.value.op, info.value.operand) == (op, operand)
