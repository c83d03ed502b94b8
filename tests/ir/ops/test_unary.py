"""Elementwise unary primitives (ir/ops/unary.py): hand-checked values, torch/Python
expectations on every accepted dtype, shapes, oracle mode and type-rule errors."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import torch

from parity.ir import OP_TABLE, Accuracy, DType, GraphBuilder, Group, TensorType, TypeRuleError, evaluate
from parity.ir.ops import unary

sys.path.insert(0, str(Path(__file__).parent))
from catalogue import documented_ops  # noqa: E402

NAN, INF = float("nan"), float("inf")
BF16 = ml_dtypes.bfloat16
UNARY = [opdef.name for opdef in unary.OPS]


def run(op, x, *, oracle=False):
    b = GraphBuilder(op)
    out = b.op(op, b.input(TensorType(DType.from_numpy(x.dtype), x.shape)))
    return evaluate(b.build([out]), [x], oracle=oracle)[0]


def assert_same(out, expected):
    """Equal dtype, shape and values, NaN equal to NaN and the sign of zero compared."""
    expected = np.asarray(expected)
    assert out.dtype == expected.dtype and out.shape == expected.shape
    if out.dtype.kind == "f" or out.dtype == BF16:  # NumPy's testing does not know bf16's NaN
        out, expected = out.astype(np.float64), expected.astype(np.float64)
    np.testing.assert_array_equal(out, expected)
    if out.dtype.kind == "f":
        number = ~np.isnan(expected)  # the sign of a NaN means nothing
        np.testing.assert_array_equal(np.signbit(out[number]), np.signbit(expected[number]))


# op, dtype, input, expected (hand-checked)
HAND = [
    ("neg", np.int8, [5, -128, 127, 0], [-5, -128, -127, 0]),  # neg(INT_MIN) wraps
    ("neg", np.int64, [-(2**63), 1], [-(2**63), -1]),
    ("neg", np.float32, [0.0, -0.0, INF, NAN], [-0.0, 0.0, -INF, NAN]),
    ("abs", np.int8, [-128, -127, 5], [-128, 127, 5]),  # abs(INT_MIN) = INT_MIN
    ("abs", np.int32, [-(2**31), -7], [-(2**31), 7]),
    ("abs", np.float16, [-0.0, -INF, -2.5, NAN], [0.0, INF, 2.5, NAN]),
    ("sign", np.int16, [-32768, 0, 9], [-1, 0, 1]),
    ("sign", np.float32, [-0.0, 0.0, NAN, -INF, 1e-45], [-0.0, 0.0, NAN, -1.0, 1.0]),
    ("sign", BF16, [-0.0, 3.0, -1e-40], [-0.0, 1.0, -1.0]),
    ("round", np.float32, [0.5, 1.5, 2.5, -0.5, -2.5, 3.5, -0.4], [0.0, 2.0, 2.0, -0.0, -2.0, 4.0, -0.0]),
    ("round", np.float16, [2049.0, 0.49975586], [2048.0, 0.0]),  # 2049 is not an f16: 2048 stored
    ("floor", np.float32, [-0.5, -0.0, 1.5, -INF], [-1.0, -0.0, 1.0, -INF]),
    ("ceil", np.float32, [-0.5, 0.2, -INF], [-0.0, 1.0, -INF]),
    ("trunc", np.float64, [-2.7, 2.7, -0.2], [-2.0, 2.0, -0.0]),
    ("sqrt", np.float32, [-0.0, 4.0, -1.0, INF, 1e-45], [-0.0, 2.0, NAN, INF, 2**-74.5]),
    ("rsqrt", np.float32, [4.0, 0.0, -0.0, INF], [0.5, INF, -INF, 0.0]),
    ("reciprocal", np.float32, [4.0, 0.0, -0.0, -INF, 3.0], [0.25, INF, -INF, -0.0, 1 / 3]),
    ("reciprocal", np.float16, [1e-7], [INF]),  # 1/f16(1e-7) is past f16's max (65504)
    ("exp", np.float32, [0.0, -INF, 89.0, -104.0], [1.0, 0.0, INF, 0.0]),
    ("log", np.float32, [0.0, -1.0, 1.0, INF], [-INF, NAN, 0.0, INF]),
    ("expm1", np.float64, [1e-20, -0.0], [1e-20, -0.0]),
    ("log1p", np.float64, [1e-20, -1.0], [1e-20, -INF]),
    ("tanh", np.float32, [INF, -0.0, 20.0], [1.0, -0.0, 1.0]),
    ("atanh", np.float32, [1.0, -1.0, 2.0], [INF, -INF, NAN]),
    ("erf", np.float64, [INF, -INF, -0.0, NAN], [1.0, -1.0, -0.0, NAN]),
    # logistic keeps relative accuracy far out: 0.5 * tanh(x/2) + 0.5 would give 0 here.
    ("logistic", np.float64, [-40.0, -700.0, 40.0, 0.0, NAN],
     [math.exp(-40) / (1 + math.exp(-40)), math.exp(-700), 1.0, 0.5, NAN]),
    ("logistic", np.float32, [-100.0, -104.0, -INF, INF], [math.exp(-100), 0.0, 0.0, 1.0]),  # f32 subnormal
    ("is_nan", np.float32, [NAN, INF, 0.0], [True, False, False]),
    ("is_inf", np.float16, [NAN, -INF, 65504.0], [False, True, False]),
    ("is_finite", BF16, [NAN, INF, -0.0, 1e-40], [False, False, True, True]),
    ("logical_not", np.bool_, [True, False], [False, True]),
    ("bitwise_not", np.int8, [0, -1, 127, -128], [-1, 0, -128, 127]),
    ("bitwise_not", np.uint8, [0, 255, 15], [255, 0, 240]),
    ("bitwise_not", np.uint32, [0], [2**32 - 1]),
    ("bitwise_not", np.bool_, [True, False], [False, True]),
]


@pytest.mark.parametrize("op, dtype, x, expected", HAND, ids=[f"{c[0]}-{np.dtype(c[1]).name}" for c in HAND])
def test_hand_checked(op, dtype, x, expected):
    out = run(op, np.array(x, dtype))
    assert_same(out, np.array(expected).astype(np.bool_ if op.startswith("is_") else dtype))


# -- every op on every dtype it accepts, against independent expectations ------------------------


def _torch_sign(t):
    # torch.sign gives 0 for NaN and +0 for -0.0; the IR says sign(nan) = nan, sign(-0.0) = -0.0.
    return torch.where((t == 0) | t.isnan(), t, torch.sign(t))


def _math_sqrt(t):
    # torch's float64 sqrt on CPU is not always correctly rounded (0.3009185525356326 gives
    # ...090d, the exact root rounds to ...090e); C's sqrt is, by IEEE 754.
    def one(v):
        return math.sqrt(v) if v > 0 else (v if v == 0 or math.isnan(v) else NAN)

    return torch.tensor([one(v) for v in t.tolist()], dtype=torch.float64)


# op -> torch function on float64 tensors (the float expectation): torch's namesake
# (torch.expm1 for expm1), except where torch names it otherwise or is not exact enough.
# A new unary op with a torch namesake needs no edit here.
_TORCH_OTHERWISE = {
    "sign": _torch_sign, "sqrt": _math_sqrt, "logistic": torch.sigmoid,
    "is_nan": torch.isnan, "is_inf": torch.isinf, "is_finite": torch.isfinite,
}
TORCH = {op: _TORCH_OTHERWISE.get(op) or getattr(torch, op) for op in UNARY
         if op in _TORCH_OTHERWISE or hasattr(torch, op)}


def test_every_float_unary_op_has_a_torch_expectation():
    missing = [op for op in UNARY if any(d.is_float for d in OP_TABLE[op].dtypes) and op not in TORCH]
    assert not missing, f"no torch namesake for {missing}: name its torch function in _TORCH_OTHERWISE"


# op -> the spec on one Python int/bool (the result is then wrapped to the dtype)
PYTHON = {
    "neg": lambda v: -v, "abs": abs, "sign": lambda v: (v > 0) - (v < 0),
    "bitwise_not": lambda v: (not v) if isinstance(v, bool) else ~v, "logical_not": lambda v: not v,
}


def wrap(value, dtype):
    """Two's complement wrap of a Python int into ``dtype``."""
    if np.dtype(dtype) == np.bool_:
        return bool(value)
    bits = np.dtype(dtype).itemsize * 8
    value &= (1 << bits) - 1
    if np.dtype(dtype).kind == "i" and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def samples(dtype, seed=0):
    """Edge values plus random ones, all representable in ``dtype``."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.array([True, False, True, False])
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        edge = [0, 1, 2, info.max, info.max - 1, info.min, info.min + 1] + ([-1, -2] if info.min else [])
        return np.concatenate([np.array(edge, dtype), rng.integers(info.min, info.max, 24, dtype, endpoint=True)])
    fi = ml_dtypes.finfo(dtype)
    edge = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 0.25, 3.75, -3.75, 10.0, -10.0, 40.0, -40.0,
            INF, -INF, NAN, float(fi.smallest_subnormal), -float(fi.smallest_subnormal), float(fi.tiny),
            float(fi.max), -float(fi.max), float(fi.eps)]
    values = edge + list(rng.standard_normal(24) * 4) + list(rng.uniform(-1, 1, 12))
    with np.errstate(over="ignore"):
        return np.array(values).astype(dtype)


def ulp_diff(a, b):
    """Distance in units in the last place of a's dtype (NaN vs NaN counts 0)."""
    width = a.dtype.itemsize * 8

    def ordered(x):
        bits = x.view(np.dtype(f"u{width // 8}"))
        magnitude = (bits & ((1 << (width - 1)) - 1)).astype(np.int64)
        return np.where(bits >> (width - 1) == 1, -magnitude, magnitude)

    both_nan = np.isnan(a.astype(np.float64)) & np.isnan(b.astype(np.float64))
    return np.where(both_nan, 0, np.abs(ordered(a) - ordered(b)))


def allowed_ulps(accuracy, dtype):
    # The reference and torch both have float64 libms; after one rounding to a narrower
    # dtype they may differ by one ULP there, and by the transcendental bound in float64.
    if accuracy is not Accuracy.TRANSCENDENTAL:
        return 0
    return 4 if np.dtype(dtype) == np.float64 else 1


def expected_result(op, x):
    if x.dtype.kind in "iub":
        out_dtype = np.bool_ if op == "logical_not" else x.dtype
        return np.array([wrap(PYTHON[op](v), out_dtype) for v in x.tolist()], out_dtype)
    wide = TORCH[op](torch.from_numpy(x.astype(np.float64))).numpy()
    with np.errstate(over="ignore"):  # overflow to inf is the expected result
        return wide if wide.dtype == np.bool_ else wide.astype(x.dtype)


# complex operands: tests/ir/ops/test_complex_numbers.py (expected values computed in complex128)
SWEEP = [(op, d) for op in UNARY for d in OP_TABLE[op].dtypes if not d.is_complex]


@pytest.mark.parametrize("op, dtype", SWEEP, ids=[f"{op}-{d.short}" for op, d in SWEEP])
def test_every_dtype_matches_torch_or_python(op, dtype):
    x = samples(dtype.numpy)
    out = run(op, x)
    expected = expected_result(op, x)
    assert out.dtype == expected.dtype and out.shape == x.shape
    if expected.dtype.kind in "iub":
        np.testing.assert_array_equal(out, expected)
        return
    np.testing.assert_array_equal(np.isnan(out.astype(np.float64)), np.isnan(expected.astype(np.float64)))
    ulps = ulp_diff(out, expected)
    assert ulps.max() <= allowed_ulps(OP_TABLE[op].accuracy, dtype.numpy), (x[ulps.argmax()], out[ulps.argmax()])
    if OP_TABLE[op].accuracy is not Accuracy.TRANSCENDENTAL:
        assert_same(out, expected)  # bit-exact, signed zeros included


@pytest.mark.parametrize("op, dtype", SWEEP, ids=[f"{op}-{d.short}" for op, d in SWEEP])
def test_oracle_mode_is_float64_and_unrounded(op, dtype):
    x = samples(dtype.numpy, seed=1)
    out = run(op, x, oracle=True)
    expected = expected_result(op, x) if not dtype.is_float else TORCH[op](torch.from_numpy(x.astype(np.float64))).numpy()
    assert out.dtype == expected.dtype
    if out.dtype == np.float64:
        assert ulp_diff(out, expected).max() <= allowed_ulps(OP_TABLE[op].accuracy, np.float64)
    else:
        np.testing.assert_array_equal(out, expected)


def test_oracle_mode_skips_rounding():
    x = np.array([1.0, 0.1], np.float16)
    native, oracle = run("exp", x), run("exp", x, oracle=True)
    assert native.dtype == np.float16 and oracle.dtype == np.float64
    assert oracle[0] == math.e and native[0] == np.float16(math.e) and oracle[0] != native[0]


@pytest.mark.parametrize("shape", [(0,), (3, 0), (1,), (1, 1), ()])
@pytest.mark.parametrize("op", UNARY)
def test_empty_and_size_one_shapes(op, shape):
    dtype = OP_TABLE[op].dtypes[0]
    x = np.ones(shape, dtype.numpy)
    out = run(op, x)
    assert out.shape == shape
    assert out.dtype == (np.bool_ if op.startswith("is_") else dtype.numpy)
    if out.size:
        np.testing.assert_array_equal(out.reshape(-1), expected_result(op, x.reshape(-1)))


# -- the table itself ---------------------------------------------------------------------


def test_catalogue_is_complete():
    # docs/ir.md's "Elementwise unary primitives" names exactly this family's ops
    assert documented_ops("Elementwise unary primitives") == set(UNARY)


EXACT = {"neg", "abs", "sign", "floor", "ceil", "round", "trunc", "is_nan", "is_inf", "is_finite",
         "logical_not", "bitwise_not"}


@pytest.mark.parametrize("op", UNARY)
def test_accuracy_and_groups(op):
    opdef = OP_TABLE[op]
    accuracy = (Accuracy.EXACT if op in EXACT
                else Accuracy.CORRECTLY_ROUNDED if op in {"sqrt", "reciprocal"} else Accuracy.TRANSCENDENTAL)
    groups = {Group.ELEMENTWISE} | ({Group.EXACT} if op in EXACT else set())
    groups |= {Group.COMPARISON} if op.startswith("is_") else set()
    groups |= {Group.NO_FUSED_ADD} if op.startswith("is_") or op == "abs" else set()
    assert (opdef.accuracy, opdef.groups) == (accuracy, frozenset(groups))
    assert opdef.operands == ("x",) and opdef.reference is not None


DTYPES = {
    "neg": "i8 i16 i32 i64 f16 bf16 f32 f64 c64 c128", "exp": "f16 bf16 f32 f64 c64 c128",
    "log": "f16 bf16 f32 f64 c64 c128", "sqrt": "f16 bf16 f32 f64 c64 c128", "abs": "i8 i16 i32 i64 f16 bf16 f32 f64",
    "sign": "i8 i16 i32 i64 f16 bf16 f32 f64", "logical_not": "bool",
    "bitwise_not": "i8 i16 i32 i64 u8 u32 bool",
}


@pytest.mark.parametrize("op", UNARY)
def test_accepted_dtypes(op):
    expected = DTYPES.get(op, "f16 bf16 f32 f64").split()
    assert sorted(d.short for d in OP_TABLE[op].dtypes) == sorted(expected)


# op, operand dtype that it rejects
REJECTED = [("exp", DType.int32), ("sqrt", DType.bool), ("neg", DType.uint8), ("abs", DType.uint32),
            ("sign", DType.bool), ("reciprocal", DType.int64), ("is_nan", DType.int32),
            ("logical_not", DType.int8), ("bitwise_not", DType.float32), ("round", DType.int16)]


@pytest.mark.parametrize("op, dtype", REJECTED)
def test_type_rule_rejects_dtype(op, dtype):
    b = GraphBuilder()
    with pytest.raises(TypeRuleError, match=rf"^{op} \(operand 0\): dtype {dtype.short} is not accepted") as info:
        b.op(op, b.input(TensorType(dtype, (2,))))
    assert info.value.op == op and info.value.operand == 0


def test_type_rule_rejects_operand_count():
    b = GraphBuilder()
    x = b.input(TensorType(DType.float32, (2,)))
    with pytest.raises(TypeRuleError, match=r"^exp: takes 1 operand\(s\) \(x\), got 2"):
        b.op("exp", x, x)
