"""Elementwise binary primitives (ir/ops/binary.py): hand-checked values, Python-int and
torch expectations on every accepted dtype over a grid of edge values, shapes, oracle mode
and type-rule errors."""

from __future__ import annotations

import itertools
import math
import re
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import torch

from parity.ir import OP_TABLE, Accuracy, DType, GraphBuilder, Group, TensorType, TypeRuleError, evaluate
from parity.ir.ops import binary

sys.path.insert(0, str(Path(__file__).parent))
from catalogue import documented_ops  # noqa: E402

NAN, INF = float("nan"), float("inf")
BF16 = ml_dtypes.bfloat16
BINARY = [opdef.name for opdef in binary.OPS]
COMPARISONS = {"eq", "ne", "lt", "le", "gt", "ge"}


def run(op, x, y, *, oracle=False):
    b = GraphBuilder(op)
    inputs = [b.input(TensorType(DType.from_numpy(a.dtype), a.shape)) for a in (x, y)]
    return evaluate(b.build([b.op(op, *inputs)]), [x, y], oracle=oracle)[0]


def as_float64(a):
    return np.asarray(a).astype(np.float64)


def assert_same(out, expected):
    """Same dtype and shape, equal values with NaN == NaN, and equal signs of zeros."""
    assert out.dtype == expected.dtype and out.shape == expected.shape
    if out.dtype.kind in "biu":
        np.testing.assert_array_equal(out, expected)
        return
    out, expected = as_float64(out), as_float64(expected)
    np.testing.assert_array_equal(out, expected)
    number = ~np.isnan(expected)
    np.testing.assert_array_equal(np.signbit(out[number]), np.signbit(expected[number]))


I8_MIN, I32_MIN, I64_MIN = -(2**7), -(2**31), -(2**63)

# op, dtype, x, y, expected (hand-checked)
HAND = [
    ("add", np.int8, [127, -128, 100], [1, -1, 100], [-128, 127, -56]),  # wraps
    ("add", np.uint8, [255, 200], [1, 100], [0, 44]),
    ("add", np.uint32, [2**32 - 1], [2], [1]),
    ("add", np.float16, [65504.0, 1.0, -0.0], [32.0, 2**-11, 0.0], [INF, 1.0, 0.0]),  # ties to even
    ("add", np.float16, [65504.0], [15.0], [65504.0]),  # below max + half an ULP (65520)
    ("add", np.float16, [65504.0, 1.0], [65504.0, 3 * 2**-11], [INF, 1.001953125]),
    ("add", np.float32, [INF, 1e-45, -0.0], [-INF, 1e-45, -0.0], [NAN, 2.8e-45, -0.0]),
    ("sub", np.int8, [-128, 0], [1, -128], [127, -128]),
    ("sub", np.uint8, [0], [1], [255]),
    ("sub", np.float64, [0.0, INF], [0.0, INF], [0.0, NAN]),
    ("mul", np.int8, [16, -128, 64], [16, -1, 3], [0, -128, -64]),
    ("mul", np.int64, [2**62], [4], [0]),
    ("mul", np.float32, [INF, -0.0, 1e-30], [0.0, 5.0, 1e-30], [NAN, -0.0, 0.0]),
    ("div", np.int32, [-7, 7, -7, 7, I32_MIN, 5, -5, 0], [2, -2, -2, 2, -1, 0, 0, 0], [-3, -3, 3, 3, I32_MIN, -1, -1, -1]),
    ("div", np.int8, [I8_MIN, I8_MIN], [-1, 2], [I8_MIN, -64]),
    ("div", np.int64, [I64_MIN], [-1], [I64_MIN]),
    ("div", np.uint8, [255, 7, 9], [2, 0, 3], [127, 255, 3]),  # x / 0: all bits set
    ("div", np.float32, [1.0, -1.0, 0.0, -0.0, 1.0], [0.0, 0.0, 0.0, 1.0, 3.0], [INF, -INF, NAN, -0.0, 1 / 3]),
    ("rem", np.int32, [-7, 7, -7, 7, I32_MIN, 5, -5], [2, -2, -2, 2, -1, 0, 0], [-1, 1, -1, 1, 0, 5, -5]),
    ("rem", np.int8, [I8_MIN, I8_MIN], [-1, 3], [0, -2]),
    ("rem", np.uint32, [2**32 - 1, 4], [10, 0], [5, 4]),
    ("rem", np.float32, [-7.5, 7.5, -0.0, 5.0, INF, 1.0], [2.0, -2.0, 3.0, INF, 1.0, 0.0],
     [-1.5, 1.5, -0.0, 5.0, NAN, NAN]),
    ("pow", np.float32, [2.0, NAN, 1.0, -8.0, 0.0, -0.0, 4.0], [-1.0, 0.0, NAN, 1 / 3, -1.0, -1.0, 0.5],
     [0.5, 1.0, 1.0, NAN, INF, -INF, 2.0]),
    ("max", np.float32, [NAN, 1.0, -INF, 3.0], [1.0, NAN, 2.0, 3.0], [NAN, NAN, 2.0, 3.0]),
    ("min", np.float64, [NAN, 1.0, INF], [1.0, NAN, 2.0], [NAN, NAN, 2.0]),
    ("max", np.int8, [-128, 127], [127, -128], [127, 127]),
    ("min", np.uint32, [2**32 - 1], [0], [0]),
    ("atan2", np.float64, [0.0, -0.0, 0.0, -0.0, 1.0, INF], [-0.0, -0.0, 0.0, 0.0, 0.0, INF],
     [math.pi, -math.pi, 0.0, -0.0, math.pi / 2, math.pi / 4]),
    # bf16: atan2 is 0x1.710000fep+0 in float64; through float32 it would tie down to 1.4375.
    ("atan2", BF16, [2.0384788513183594e-05], [2.652406692504883e-06], [1.4453125]),
    ("eq", np.float32, [NAN, -0.0, 1.0], [NAN, 0.0, 1.0], [False, True, True]),
    ("ne", np.float32, [NAN, -0.0, 1.0], [NAN, 0.0, 2.0], [True, False, True]),
    ("lt", np.float32, [NAN, -0.0, -INF], [1.0, 0.0, INF], [False, False, True]),
    ("le", np.float16, [NAN, -0.0], [NAN, 0.0], [False, True]),
    ("gt", np.int8, [-128, 127], [127, -128], [False, True]),
    ("ge", np.uint32, [2**32 - 1, 0], [0, 0], [True, True]),
    ("eq", np.bool_, [True, True, False], [True, False, False], [True, False, True]),
    ("logical_and", np.bool_, [True, True, False, False], [True, False, True, False], [True, False, False, False]),
    ("logical_or", np.bool_, [True, True, False, False], [True, False, True, False], [True, True, True, False]),
    ("logical_xor", np.bool_, [True, True, False, False], [True, False, True, False], [False, True, True, False]),
    ("bitwise_and", np.int8, [-1, 0x0F], [0x55, -16], [0x55, 0]),
    ("bitwise_or", np.uint8, [0xF0], [0x0F], [0xFF]),
    ("bitwise_xor", np.int32, [-1], [0x7FFFFFFF], [I32_MIN]),
    ("bitwise_and", np.bool_, [True, True], [True, False], [True, False]),
    ("shift_left", np.int8, [1, 1, 1, 1, -1], [7, 8, 100, -1, 1], [-128, 0, 0, 0, -2]),
    ("shift_left", np.int64, [1, 3], [63, 64], [I64_MIN, 0]),
    ("shift_left", np.uint32, [1, 3], [31, 32], [2**31, 0]),
    ("shift_right_logical", np.int8, [-128, -1, -1, 64], [1, 7, 8, -3], [64, 1, 0, 0]),
    ("shift_right_logical", np.uint8, [255, 255], [7, 8], [1, 0]),
    ("shift_right_arithmetic", np.int8, [-128, -1, -7, 5, -5, -5], [1, 100, 1, 8, 8, -1], [-64, -1, -4, 0, -1, -1]),
    ("shift_right_arithmetic", np.int32, [I32_MIN, 7], [31, 32], [-1, 0]),
    ("shift_right_arithmetic", np.uint8, [128, 255], [7, 8], [1, 0]),  # floor(x / 2**y): unsigned fills 0
]


def _result_dtype(op, dtype):
    return np.bool_ if op in COMPARISONS else dtype


@pytest.mark.parametrize("op, dtype, x, y, expected", HAND, ids=[f"{c[0]}-{np.dtype(c[1]).name}" for c in HAND])
def test_hand_checked(op, dtype, x, y, expected):
    out = run(op, np.array(x).astype(dtype), np.array(y).astype(dtype))
    assert_same(out, np.array(expected).astype(_result_dtype(op, dtype)))


def test_oracle_mode_does_not_round():
    big = np.array([65504.0], np.float16)
    assert run("add", big, big)[0] == INF
    oracle = run("add", big, big, oracle=True)
    assert oracle.dtype == np.float64 and oracle[0] == 131008.0


# -- every op on every dtype it accepts, against independent expectations ------------------------


def c_div(a, b):
    """C integer division (toward zero); the reference's choice x / 0 = -1."""
    if b == 0:
        return -1
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def shift_amount_ok(b, bits):
    return 0 <= b < bits


# op -> spec on Python ints/bools (and the bit width); wrapped to the dtype afterwards
PYTHON = {
    "add": lambda a, b, w: a + b, "sub": lambda a, b, w: a - b, "mul": lambda a, b, w: a * b,
    "div": lambda a, b, w: c_div(a, b), "rem": lambda a, b, w: a if b == 0 else a - b * c_div(a, b),
    "max": lambda a, b, w: max(a, b), "min": lambda a, b, w: min(a, b),
    "eq": lambda a, b, w: a == b, "ne": lambda a, b, w: a != b, "lt": lambda a, b, w: a < b,
    "le": lambda a, b, w: a <= b, "gt": lambda a, b, w: a > b, "ge": lambda a, b, w: a >= b,
    "logical_and": lambda a, b, w: a and b, "logical_or": lambda a, b, w: a or b,
    "logical_xor": lambda a, b, w: a != b,
    "bitwise_and": lambda a, b, w: a & b, "bitwise_or": lambda a, b, w: a | b, "bitwise_xor": lambda a, b, w: a ^ b,
    "shift_left": lambda a, b, w: a << b if shift_amount_ok(b, w) else 0,
    "shift_right_logical": lambda a, b, w: (a % 2**w) >> b if shift_amount_ok(b, w) else 0,
    "shift_right_arithmetic": lambda a, b, w: a >> b if b >= 0 else -(a < 0),  # Python >> floors
}

def _c_fmod(x, y):
    # torch's vectorized float64 fmod gives NaN when x / y is huge (fmod(1.0, 5e-324) is 0.0);
    # Python's math.fmod is C's fmod, which is exact.
    def one(a, b):
        if math.isnan(a) or math.isnan(b) or math.isinf(a) or b == 0:
            return NAN
        return a if math.isinf(b) else math.fmod(a, b)

    return torch.tensor([one(a, b) for a, b in zip(x.tolist(), y.tolist())], dtype=torch.float64)


# op -> torch function on float64 tensors
TORCH = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "rem": _c_fmod,
    "pow": torch.pow, "max": torch.maximum, "min": torch.minimum, "atan2": torch.atan2,
    "eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge,
}


def wrap(value, dtype):
    if dtype == np.bool_:
        return bool(value)
    bits = dtype.itemsize * 8
    value &= (1 << bits) - 1
    return value - (1 << bits) if dtype.kind == "i" and value >= 1 << (bits - 1) else value


def edge_values(dtype):
    if dtype == np.bool_:
        return [False, True]
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return [0, 1, 2, 3, 7, info.max, info.max - 1, info.min, info.min + 1] + ([-1, -2, -7] if info.min else [])
    fi = ml_dtypes.finfo(dtype)
    return [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -2.5, 3.0, 7.5, 1e-3, INF, -INF, NAN, float(fi.smallest_subnormal),
            -float(fi.tiny), float(fi.max), -float(fi.max), 1 + float(fi.eps)]


def grid(dtype, op):
    """Every pair of edge values (x from the first list, y from the second)."""
    xs = edge_values(dtype)
    if op.startswith("shift"):  # every amount from negative to past the bit width
        ys = list(range(-2 if np.iinfo(dtype).min else 0, dtype.itemsize * 8 + 3))
    else:
        ys = xs
    pairs = list(itertools.product(xs, ys))
    with np.errstate(over="ignore"):
        return (np.array([p[0] for p in pairs]).astype(dtype), np.array([p[1] for p in pairs]).astype(dtype))


def expected_result(op, x, y):
    out_dtype = np.dtype(_result_dtype(op, x.dtype))
    if x.dtype.kind in "iub":
        bits = x.dtype.itemsize * 8
        values = [wrap(PYTHON[op](a, b, bits), out_dtype) for a, b in zip(x.tolist(), y.tolist())]
        return np.array(values, out_dtype)
    wide = TORCH[op](torch.from_numpy(as_float64(x)), torch.from_numpy(as_float64(y))).numpy()
    with np.errstate(over="ignore"):
        return wide.astype(out_dtype)


def ulp_diff(a, b):
    """Distance in units in the last place of a's dtype (NaN vs NaN counts 0)."""
    width = a.dtype.itemsize * 8
    unsigned = np.dtype(f"u{width // 8}")

    def ordered(v):
        bits = v.view(unsigned)
        magnitude = (bits & ((1 << (width - 1)) - 1)).astype(np.int64)
        return np.where(bits >> (width - 1) == 1, -magnitude, magnitude)

    both_nan = np.isnan(as_float64(a)) & np.isnan(as_float64(b))
    return np.where(both_nan, 0, np.abs(ordered(a) - ordered(b)))


# complex operands: tests/ir/ops/test_complex_numbers.py (expected values computed in complex128)
SWEEP = [(op, d) for op in BINARY for d in OP_TABLE[op].dtypes if not d.is_complex]


@pytest.mark.parametrize("oracle", [False, True], ids=["native", "oracle"])
@pytest.mark.parametrize("op, dtype", SWEEP, ids=[f"{op}-{d.short}" for op, d in SWEEP])
def test_every_dtype_on_an_edge_grid(op, dtype, oracle):
    x, y = grid(dtype.numpy, op)
    out = run(op, x, y, oracle=oracle)
    if oracle and dtype.is_float and op not in COMPARISONS:
        wide = TORCH[op](torch.from_numpy(as_float64(x)), torch.from_numpy(as_float64(y))).numpy()
        expected = wide  # the oracle never rounds
    else:
        expected = expected_result(op, x, y)
    if OP_TABLE[op].accuracy is Accuracy.TRANSCENDENTAL:
        # Two float64 libms may differ by one ULP after rounding to a narrower dtype.
        assert out.dtype == expected.dtype
        np.testing.assert_array_equal(np.isnan(as_float64(out)), np.isnan(as_float64(expected)))
        bound = 4 if out.dtype == np.float64 else 1
        assert ulp_diff(out, expected).max() <= bound
    else:
        assert_same(out, expected)  # bit-exact: integers, comparisons, and correctly rounded floats


@pytest.mark.parametrize("shape", [(0,), (2, 0), (1,), (1, 1), ()])
@pytest.mark.parametrize("op", BINARY)
def test_empty_and_size_one_shapes(op, shape):
    dtype = OP_TABLE[op].dtypes[0].numpy
    x, y = np.ones(shape, dtype), np.ones(shape, dtype)
    out = run(op, x, y)
    assert out.shape == shape and out.dtype == _result_dtype(op, dtype)
    if out.size:
        assert_same(out.reshape(-1), expected_result(op, x.reshape(-1), y.reshape(-1)))


# -- the table itself ---------------------------------------------------------------------


def test_catalogue_is_complete():
    # docs/ir.md's "Elementwise binary primitives" names exactly this family's ops
    assert documented_ops("Elementwise binary primitives") == set(BINARY)


NUMERIC = "i8 i16 i32 i64 u8 u32 f16 bf16 f32 f64"
DTYPES = {
    **dict.fromkeys(["add", "sub", "mul", "div"], NUMERIC + " c64 c128"),
    **dict.fromkeys(["rem", "max", "min", "lt", "le", "gt", "ge"], NUMERIC),
    **dict.fromkeys(["eq", "ne"], NUMERIC + " bool c64 c128"),
    **dict.fromkeys(["pow", "atan2"], "f16 bf16 f32 f64"),
    **dict.fromkeys(["logical_and", "logical_or", "logical_xor"], "bool"),
    **dict.fromkeys(["bitwise_and", "bitwise_or", "bitwise_xor"], "i8 i16 i32 i64 u8 u32 bool"),
    **dict.fromkeys(["shift_left", "shift_right_logical", "shift_right_arithmetic"], "i8 i16 i32 i64 u8 u32"),
}
CORRECTLY_ROUNDED, TRANSCENDENTAL = {"add", "sub", "mul", "div"}, {"pow", "atan2"}


@pytest.mark.parametrize("op", BINARY)
def test_dtypes_accuracy_and_groups(op):
    opdef = OP_TABLE[op]
    assert sorted(d.short for d in opdef.dtypes) == sorted(DTYPES[op].split())
    accuracy = (Accuracy.CORRECTLY_ROUNDED if op in CORRECTLY_ROUNDED
                else Accuracy.TRANSCENDENTAL if op in TRANSCENDENTAL else Accuracy.EXACT)
    groups = {Group.ELEMENTWISE} | ({Group.EXACT} if accuracy is Accuracy.EXACT else set())
    groups |= {Group.COMPARISON} if op in COMPARISONS else set()
    groups |= {Group.NO_FUSED_ADD} if op in COMPARISONS or op in ("mul", "div", "max", "min") else set()
    assert (opdef.accuracy, opdef.groups) == (accuracy, frozenset(groups))


def test_implementation_defined_cases_are_listed():
    for op in ("div", "rem"):
        assert any("division by zero" in text for text in OP_TABLE[op].implementation_defined)
    for op in ("max", "min"):
        assert any("-0.0" in text for text in OP_TABLE[op].implementation_defined)
    assert OP_TABLE["add"].implementation_defined == ()


# op, operand types, the operand the error names, a fragment of the message
REJECTED = [
    ("add", (DType.float32[3], DType.int32[3]), 1, "dtype i32 differs from operand 0's f32"),
    ("mul", (DType.float32[3], DType.float32[4]), 1, "shape f32[4] differs from operand 0's f32[3]"),
    ("eq", (DType.int8[2, 3], DType.int8[3, 2]), 1, "insert a broadcast_in_dim"),
    ("sub", (DType.bool[3], DType.bool[3]), 0, "dtype bool is not accepted"),
    ("pow", (DType.int32[3], DType.int32[3]), 0, "dtype i32 is not accepted"),
    ("atan2", (DType.int64[3], DType.int64[3]), 0, "dtype i64 is not accepted"),
    ("lt", (DType.bool[3], DType.bool[3]), 0, "dtype bool is not accepted"),
    ("logical_and", (DType.int8[3], DType.int8[3]), 0, "dtype i8 is not accepted"),
    ("bitwise_or", (DType.float32[3], DType.float32[3]), 0, "dtype f32 is not accepted"),
    ("shift_left", (DType.bool[3], DType.bool[3]), 0, "dtype bool is not accepted"),
    ("shift_right_logical", (DType.int32[3], DType.uint32[3]), 1, "dtype u32 differs"),
]


@pytest.mark.parametrize("op, types, operand, message", REJECTED, ids=[r[0] for r in REJECTED])
def test_type_rule_errors_name_op_and_operand(op, types, operand, message):
    b = GraphBuilder()
    with pytest.raises(TypeRuleError, match=rf"^{op} \(operand {operand}\): .*{re.escape(message)}") as info:
        b.op(op, *(b.input(t) for t in types))
    assert (info.value.op, info.value.operand) == (op, operand)
