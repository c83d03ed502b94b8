"""Masking composites (ir/ops/masking.py) against torch, bit for bit (they only select)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from parity.ir import OP_TABLE, GraphBuilder, Symbol, TypeRuleError, evaluate
from parity.ir.dtypes import ALL_DTYPES, INT_DTYPES, DType, bf16, bool_, f32, i8, i32, i64, u8
from parity.ir.opdef import Accuracy, Group, Kind

sys.path.insert(0, str(Path(__file__).parent))
from torch_reference import decomposition, non_primitives, run_ir, to_torch  # noqa: E402


def values(dtype: DType, shape) -> np.ndarray:
    """Distinct values; floats include NaN, ±inf and -0.0 (a select must move them untouched)."""
    n = int(np.prod(shape))
    if dtype.is_bool:
        return (np.arange(n) % 3 == 1).reshape(shape)
    flat = np.arange(n) * 7 + 1.0
    if dtype.is_float:
        flat[: min(n, 4)] = [np.nan, -np.inf, np.inf, -0.0][: min(n, 4)]
    return flat.astype(dtype.numpy).reshape(shape)


def assert_bits_equal(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    view = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[actual.dtype.itemsize]
    np.testing.assert_array_equal(actual.view(view), expected.view(view))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.short)
def test_tril_triu_all_dtypes(dtype):
    x = values(dtype, (2, 4, 5))
    for diagonal in (-5, -1, 0, 2, 6):
        for op, fn in (("tril", torch.tril), ("triu", torch.triu)):
            # torch lacks u32 tril: compare against NumPy, which agrees with torch elsewhere.
            expected = (np.tril if op == "tril" else np.triu)(x, diagonal)
            if dtype not in (DType.uint32,):
                torch_out = fn(to_torch(x), diagonal)
                assert_bits_equal(torch_out.view(torch.int16).numpy().view(x.dtype) if dtype is bf16
                                  else torch_out.numpy(), expected)
            assert_bits_equal(run_ir(op, [x], diagonal=diagonal), expected)


def test_tril_triu_shapes_and_zeroing():
    x = np.full((3, 2), np.nan, np.float32)
    np.testing.assert_array_equal(run_ir("tril", [x]), np.array([[np.nan, 0], [np.nan, np.nan], [np.nan, np.nan]],
                                                                   np.float32))
    for shape in [(0, 3), (3, 0), (1, 1), (2, 0, 0)]:
        z = np.ones(shape, np.float32)
        np.testing.assert_array_equal(run_ir("triu", [z], diagonal=0), np.triu(z))
    # Symbolic matrix dims: the masks are iotas of the value's own (run-time) shape.
    b = GraphBuilder("tri")
    m, n = Symbol("M"), Symbol("N")
    v = b.input(f32[2, m, n])
    graph = b.build([b.tril(v, diagonal=1)])
    data = np.arange(2 * 3 * 5, dtype=np.float32).reshape(2, 3, 5)
    np.testing.assert_array_equal(evaluate(graph, [data])[0], np.tril(data, 1))


@pytest.mark.parametrize("index_dtype", INT_DTYPES, ids=lambda d: d.short)
def test_one_hot_matches_torch(index_dtype):
    indices = np.array([[0, 3, 1], [2, 2, 0]], index_dtype.numpy)
    expected = F.one_hot(torch.from_numpy(indices.astype(np.int64)), 4).numpy()
    for dtype in (f32, i64, bool_, bf16):
        out = run_ir("one_hot", [indices], num_classes=4, dtype=dtype)
        assert out.dtype == dtype.numpy
        np.testing.assert_array_equal(out.astype(np.int64), expected)


def test_one_hot_out_of_range_rows_are_zero():
    """torch raises; a graph cannot, so indices outside [0, C) give all-zero rows."""
    out = run_ir("one_hot", [np.array([-1, 3, 300, 2], np.int32)], num_classes=3, dtype=i32)
    np.testing.assert_array_equal(out, [[0, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 1]])
    # u8 indices against more than 256 classes: no wraparound of the class counter.
    out = run_ir("one_hot", [np.array([255, 4], np.uint8)], num_classes=300, dtype=u8)
    assert out.shape == (2, 300) and out.sum() == 2 and out[0, 255] == 1 and out[1, 4] == 1
    assert run_ir("one_hot", [np.zeros((3, 0), np.int64)], num_classes=5, dtype=f32).shape == (3, 0, 5)
    assert run_ir("one_hot", [np.array([0, 1], np.int64)], num_classes=0, dtype=f32).shape == (2, 0)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.short)
def test_masked_fill_matches_torch(dtype):
    x = values(dtype, (3, 4))
    mask = np.arange(12).reshape(3, 4) % 5 == 0
    value = np.array(9 if not dtype.is_bool else True).astype(dtype.numpy)
    expected = np.where(mask, value, x)
    assert_bits_equal(run_ir("masked_fill", [x, mask, value]), expected)
    if dtype not in (DType.uint32, bf16):
        torch_out = to_torch(x).masked_fill(torch.from_numpy(mask), to_torch(value))
        assert_bits_equal(torch_out.numpy(), expected)


def test_masked_fill_special_values():
    x = np.array([1.0, 2.0, np.nan, -0.0], np.float32)
    out = run_ir("masked_fill", [x, np.array([True, False, True, False]), np.array(-np.inf, np.float32)])
    assert_bits_equal(out, np.array([-np.inf, 2.0, -np.inf, -0.0], np.float32))
    nan_fill = run_ir("masked_fill", [x, np.array([False, True, False, False]), np.array(np.nan, np.float32)])
    assert np.isnan(nan_fill[1]) and np.isnan(nan_fill[2]) and nan_fill[0] == 1.0


@pytest.mark.parametrize("op", ["one_hot", "tril", "triu", "masked_fill"])
def test_table_entry_and_primitive_only_decomposition(op):
    opdef = OP_TABLE[op]
    assert opdef.kind is Kind.COMPOSITE and opdef.accuracy is Accuracy.EXACT and Group.EXACT in opdef.groups
    types = {"one_hot": [i8[2, 3]], "masked_fill": [f32[2, 3], bool_[2, 3], f32[()]]}.get(op, [bf16[2, 3, 4]])
    attrs = {"num_classes": 5, "dtype": f32} if op == "one_hot" else {}
    graph = decomposition(op, types, **attrs)
    assert non_primitives(graph) == set()
    assert graph.output_types == [f32[2, 3, 5] if op == "one_hot" else types[0]]


def test_type_errors():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(TypeRuleError, match=r"^tril \(operand 0\): needs a matrix"):
        run_ir("tril", [np.zeros(3, np.float32)])
    with pytest.raises(TypeRuleError, match=r"^one_hot \(operand 0\): dtype f32"):
        run_ir("one_hot", [x], num_classes=3, dtype=f32)
    with pytest.raises(TypeRuleError, match=r"^one_hot \(attribute 'num_classes'\): must be >= 0"):
        run_ir("one_hot", [np.zeros(2, np.int64)], num_classes=-1, dtype=f32)
    with pytest.raises(TypeRuleError, match=r"^masked_fill \(operand 1\): mask must be bool"):
        run_ir("masked_fill", [x, np.zeros((2, 3), np.int32), np.float32(0)])
    with pytest.raises(TypeRuleError, match=r"^masked_fill \(operand 1\): mask must be bool"):
        run_ir("masked_fill", [x, np.zeros((3, 2), bool), np.float32(0)])
    with pytest.raises(TypeRuleError, match=r"^masked_fill \(operand 2\): value must be a rank-0 f32"):
        run_ir("masked_fill", [x, np.zeros((2, 3), bool), np.float64(0)])
