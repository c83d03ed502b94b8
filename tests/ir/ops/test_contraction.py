"""dot_general and convolution (ir/ops/contraction.py) against NumPy and torch."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from parity.ir import OP_TABLE, Accuracy, DType, GraphBuilder, Group, Symbol, TensorType, TypeRuleError, evaluate

NAN, INF = float("nan"), float("inf")
DOT_DIMS = ("lhs_contracting_dims", "rhs_contracting_dims", "lhs_batch_dims", "rhs_batch_dims")
CONV_ATTRS = ("window_strides", "padding", "lhs_dilation", "rhs_dilation", "feature_group_count")


def run(op, lhs, rhs, **attrs):
    """Evaluate one two-operand op on NumPy arrays; return its result."""
    b = GraphBuilder(op)
    params = [b.input(TensorType(DType.from_numpy(a.dtype), a.shape)) for a in (lhs, rhs)]
    return evaluate(b.build([b.op(op, *params, **attrs)]), [lhs, rhs])[0]


def dot(lhs, rhs, lc, rc, lb=(), rb=()):
    return run("dot_general", lhs, rhs, **dict(zip(DOT_DIMS, (lc, rc, lb, rb))))


def within_accumulation_bound(out, expected, terms, n, dtype):
    """The contract for accumulation ops: |error| <= n * eps * sum(|terms|), element by element."""
    eps = float(np.finfo(dtype).eps)
    return bool(np.all(np.abs(out.astype(np.float64) - expected) <= n * eps * terms))


# -- dot_general ----------------------------------------------------------------------------

# lhs shape, rhs shape, (lc, rc, lb, rb), the same contraction as an einsum equation
DOT_CASES = [
    ((3, 4), (4, 5), ((1,), (0,), (), ()), "ij,jk->ik"),
    ((4,), (4,), ((0,), (0,), (), ()), "i,i->"),
    ((3,), (2,), ((), (), (), ()), "i,j->ij"),  # outer product
    ((2, 3, 4), (2, 4, 5), ((2,), (1,), (0,), (0,)), "bij,bjk->bik"),
    ((3, 2, 4), (4, 5, 2), ((2,), (0,), (1,), (2,)), "ibj,jkb->bik"),  # batch dims not leading
    ((2, 3, 4), (4, 3, 5), ((1, 2), (1, 0), (), ()), "ijk,kjl->il"),  # two contracting dims
    ((2, 3, 4), (4, 3, 5), ((2, 1), (0, 1), (), ()), "ijk,kjl->il"),  # listed in another order
    ((2, 3, 4, 5), (3, 2, 5, 6), ((3,), (2,), (0, 1), (1, 0)), "abij,bajk->abik"),
    ((3, 0), (0, 2), ((1,), (0,), (), ()), "ij,jk->ik"),  # empty contraction: zeros
    ((0, 3), (3, 2), ((1,), (0,), (), ()), "ij,jk->ik"),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, ml_dtypes.bfloat16])
@pytest.mark.parametrize("lhs_shape, rhs_shape, dims, equation", DOT_CASES)
def test_dot_general_matches_einsum(dtype, lhs_shape, rhs_shape, dims, equation):
    rng = np.random.default_rng(len(equation))
    # Small integers: every product and sum is exact, so any summation order gives these bits.
    lhs = rng.integers(-4, 5, lhs_shape).astype(dtype)
    rhs = rng.integers(-4, 5, rhs_shape).astype(dtype)
    out = dot(lhs, rhs, *dims)
    expected = np.einsum(equation, lhs.astype(np.float64), rhs.astype(np.float64)).astype(dtype)
    assert out.dtype == np.dtype(dtype) and out.shape == expected.shape
    assert out.tobytes() == expected.tobytes()


def test_dot_general_rounds_once():
    ones = np.ones(3, np.float16)
    # 2048 + 1 + 1 in float16 step by step stays 2048 (ULP 2); wide and rounded once: 2050.
    assert dot(np.array([2048, 1, 1], np.float16), ones, (0,), (0,)) == np.float16(2050)
    n = 10**6
    tenth = np.full(n, 0.1, np.float32)
    # n * f32(0.1) is exact in float64, so the one rounding gives exactly this:
    assert dot(tenth, np.ones(n, np.float32), (0,), (0,)) == np.float32(n * np.float64(np.float32(0.1)))


def test_dot_general_long_random_float32_against_float64_math():
    rng = np.random.default_rng(7)
    lhs, rhs = rng.standard_normal((2, 10**6)).astype(np.float32), rng.standard_normal(10**6).astype(np.float32)
    out = dot(lhs, rhs, (1,), (0,))
    exact = lhs.astype(np.float64) @ rhs.astype(np.float64)
    # Computed in float64 and rounded once: at most one f32 ULP from float64 math (half + a hair).
    assert np.all(np.abs(out - exact) <= np.spacing(np.abs(exact).astype(np.float32)))
    naive = np.cumsum(lhs[0] * rhs, dtype=np.float32)[-1]
    assert abs(naive - exact[0]) > abs(out[0] - exact[0])  # float32 accumulation is visibly worse


def test_dot_general_propagates_nan_and_inf():
    lhs = np.array([[1, INF], [NAN, 0], [INF, -INF]], np.float32)
    out = dot(lhs, np.array([1, 0], np.float32), (1,), (0,))
    np.testing.assert_array_equal(out, [NAN, NAN, NAN])  # inf * 0 is NaN
    np.testing.assert_array_equal(dot(lhs[:1], np.array([1, 1], np.float32), (1,), (0,)), [INF])


# dtype, lhs, rhs, expected (hand-checked vector dot products that wrap)
INT_DOTS = [
    (np.int32, [2**30, 2**30], [2, 2], 0),
    (np.int32, [2**31 - 1], [2], -2),
    (np.int32, [-(2**31)], [-1], -(2**31)),
    (np.int32, [2**31 - 1, 1], [1, 1], -(2**31)),
    (np.int64, [2**62], [4], 0),
    (np.int64, [2**63 - 1, 2**63 - 1], [1, 2], 2**63 - 3),
    (np.int64, [-3, 5], [7, 2], -11),
]


@pytest.mark.parametrize("dtype, lhs, rhs, expected", INT_DOTS)
def test_integer_dot_wraps(dtype, lhs, rhs, expected):
    out = dot(np.array(lhs, dtype), np.array(rhs, dtype), (0,), (0,))
    assert out.dtype == np.dtype(dtype) and out == expected


@pytest.mark.parametrize("dtype, bits", [(np.int32, 32), (np.int64, 64)])
def test_integer_matmul_matches_exact_math_mod_2_to_the_bits(dtype, bits):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(bits)
    lhs = rng.integers(info.min, info.max, (3, 4, 5), dtype=dtype, endpoint=True)
    rhs = rng.integers(info.min, info.max, (3, 5, 2), dtype=dtype, endpoint=True)
    out = dot(lhs, rhs, (2,), (1,), (0,), (0,))
    exact = np.matmul(lhs.astype(object), rhs.astype(object))  # Python ints: no overflow
    wrapped = [(int(v) + 2 ** (bits - 1)) % 2**bits - 2 ** (bits - 1) for v in exact.reshape(-1)]
    assert out.reshape(-1).tolist() == wrapped


def test_dot_general_against_torch_float32():
    rng = np.random.default_rng(3)
    lhs, rhs = rng.standard_normal((4, 6, 50)).astype(np.float32), rng.standard_normal((4, 50, 3)).astype(np.float32)
    out = dot(lhs, rhs, (2,), (1,), (0,), (0,))
    expected = torch.bmm(torch.from_numpy(lhs), torch.from_numpy(rhs)).numpy().astype(np.float64)
    terms = np.abs(lhs).astype(np.float64) @ np.abs(rhs).astype(np.float64)
    assert within_accumulation_bound(out, expected, terms, 50, np.float32)


# -- convolution ----------------------------------------------------------------------------

def conv(x, w, strides, padding, lhs_dilation, rhs_dilation, groups=1):
    return run("convolution", x, w, **dict(zip(CONV_ATTRS, (strides, padding, lhs_dilation, rhs_dilation, groups))))


def torch_conv(x, w, stride, padding, dilation, groups):
    fn = (F.conv1d, F.conv2d, F.conv3d)[x.ndim - 3]
    return fn(torch.from_numpy(x), torch.from_numpy(w), None, stride, padding, dilation, groups).numpy()


# lhs shape, rhs shape, stride, padding (symmetric), dilation, groups — torch's arguments
CONV_CASES = [
    ((2, 4, 9), (6, 2, 3), (2,), (1,), (1,), 2),
    ((1, 3, 10), (2, 3, 4), (1,), (0,), (3,), 1),
    ((2, 3, 7, 6), (4, 3, 3, 2), (2, 1), (1, 0), (1, 2), 1),
    ((1, 4, 5, 5), (4, 1, 3, 3), (1, 1), (1, 1), (1, 1), 4),  # depthwise
    ((2, 8, 3, 3), (4, 4, 1, 1), (1, 1), (0, 0), (1, 1), 2),  # 1x1, grouped
    ((1, 2, 5, 4, 6), (3, 2, 2, 3, 2), (1, 2, 1), (1, 0, 1), (2, 1, 1), 1),
    ((2, 6, 4, 3, 3), (6, 2, 3, 1, 2), (2, 1, 1), (1, 0, 1), (1, 1, 2), 3),
]


@pytest.mark.parametrize("lhs_shape, rhs_shape, stride, padding, dilation, groups", CONV_CASES)
def test_convolution_matches_torch(lhs_shape, rhs_shape, stride, padding, dilation, groups):
    rng = np.random.default_rng(sum(lhs_shape))
    x, w = rng.standard_normal(lhs_shape), rng.standard_normal(rhs_shape)
    ones = (1,) * len(stride)
    out = conv(x, w, stride, tuple((p, p) for p in padding), ones, dilation, groups)
    expected = torch_conv(x, w, stride, padding, dilation, groups)
    assert out.shape == expected.shape
    terms = torch_conv(np.abs(x), np.abs(w), stride, padding, dilation, groups)
    n = int(np.prod(rhs_shape[1:]))
    assert within_accumulation_bound(out, expected, terms, n, np.float64)
    # float32 in, float32 out: the float64 result rounded once.
    out32 = conv(x.astype(np.float32), w.astype(np.float32), stride, tuple((p, p) for p in padding),
                 ones, dilation, groups)
    exact32 = torch_conv(x.astype(np.float32).astype(np.float64), w.astype(np.float32).astype(np.float64),
                         stride, padding, dilation, groups)
    assert np.all(np.abs(out32 - exact32) <= np.spacing(np.abs(exact32).astype(np.float32)))


def test_asymmetric_and_negative_padding():
    rng = np.random.default_rng(11)
    x, w = rng.integers(-3, 4, (1, 2, 6, 5)).astype(np.float64), rng.integers(-3, 4, (3, 2, 2, 2)).astype(np.float64)
    out = conv(x, w, (1, 2), ((2, 0), (-1, 3)), (1, 1), (1, 1))
    # F.pad takes (last dim low, high, next dim low, high); negative amounts crop there too.
    padded = F.pad(torch.from_numpy(x), (-1, 3, 2, 0))
    expected = F.conv2d(padded, torch.from_numpy(w), stride=(1, 2)).numpy()
    np.testing.assert_array_equal(out, expected)  # small integers: exact


# stride, padding, output_padding, dilation, kernel — torch.conv_transpose2d arguments
TRANSPOSED = [
    ((2, 2), (1, 1), (1, 1), (1, 1), (3, 3)),
    ((3, 1), (0, 1), (0, 0), (2, 1), (2, 3)),
    ((2, 2), (2, 0), (1, 0), (1, 1), (2, 2)),  # padding > dilation * (kernel - 1): a crop
]


@pytest.mark.parametrize("stride, padding, output_padding, dilation, kernel", TRANSPOSED)
def test_transposed_convolution_via_lhs_dilation(stride, padding, output_padding, dilation, kernel):
    rng = np.random.default_rng(sum(kernel))
    x = rng.integers(-3, 4, (2, 3, 5, 4)).astype(np.float64)
    w = rng.integers(-3, 4, (3, 2) + kernel).astype(np.float64)  # [C_in, C_out, *k], torch's layout
    expected = F.conv_transpose2d(torch.from_numpy(x), torch.from_numpy(w), None, stride, padding,
                                  output_padding, 1, dilation).numpy()
    # The transpose of a strided convolution: dilate the input by the stride, pad by
    # dilation * (k - 1) - padding, and correlate with the flipped, in/out-swapped kernel.
    flipped = np.ascontiguousarray(np.flip(w, (2, 3)).transpose(1, 0, 2, 3))
    pads = tuple((d * (k - 1) - p, d * (k - 1) - p + o) for d, k, p, o in zip(dilation, kernel, padding,
                                                                               output_padding))
    out = conv(x, flipped, (1, 1), pads, stride, dilation)
    np.testing.assert_array_equal(out, expected)  # small integers: exact


# lhs, rhs, expected (1-d, hand-checked)
CONV_HAND = [
    ([1, INF, 2], [1, 0], [NAN, INF]),  # inf * 0 is NaN
    ([1, NAN, 2, 3, 4], [1, 1], [NAN, NAN, 5, 7]),
    ([1, 2], [1, 1, 1], []),  # the kernel does not fit: an empty result
]


@pytest.mark.parametrize("x, w, expected", CONV_HAND)
def test_convolution_hand_checked(x, w, expected):
    out = conv(np.array([[x]], np.float32), np.array([[w]], np.float32), (1,), ((0, 0),), (1,), (1,))
    np.testing.assert_array_equal(out, np.array([[expected]], np.float32))


def test_convolution_rounds_once_and_empty_batch():
    out = conv(np.array([[[2048, 1, 1]]], np.float16), np.ones((1, 1, 3), np.float16), (1,), ((0, 0),), (1,), (1,))
    assert out.dtype == np.float16 and out.tolist() == [[[2050.0]]]
    empty = conv(np.zeros((0, 2, 5), np.float32), np.ones((3, 2, 2), np.float32), (2,), ((0, 0),), (1,), (1,))
    assert empty.shape == (0, 3, 2)


def test_symbolic_batch_dim():
    b = GraphBuilder()
    x, w = b.input(TensorType(DType.float32, (Symbol("N"), 2, 5))), b.input(TensorType(DType.float32, (3, 2, 2)))
    y = b.convolution(x, w, window_strides=(1,), padding=((0, 0),), lhs_dilation=(1,), rhs_dilation=(1,))
    assert y.type == TensorType(DType.float32, (Symbol("N"), 3, 4))
    a, c = b.input(TensorType(DType.float32, (Symbol("B"), 3))), b.input(TensorType(DType.float32, (3, 4)))
    assert b.dot_general(a, c, **DOT_OK).type == TensorType(DType.float32, (Symbol("B"), 4))


@pytest.mark.parametrize("op, dtypes", [("dot_general", ("f16", "bf16", "f32", "f64", "i32", "i64", "c64", "c128")),
                                        ("convolution", ("f16", "bf16", "f32", "f64"))])
def test_op_table_entries(op, dtypes):
    opdef = OP_TABLE[op]
    assert opdef.accuracy is Accuracy.ACCUMULATION and Group.CONTRACTION in opdef.groups
    assert {d.short for d in opdef.dtypes} == set(dtypes)


# -- type rules -----------------------------------------------------------------------------

DOT_OK = dict(zip(DOT_DIMS, ((1,), (0,), (), ())))

# lhs type, rhs type, attribute overrides, offending operand/attribute, message fragment
DOT_ERRORS = [
    ("f32[2,3]", "f16[3,4]", {}, 1, "dtype f16 differs from lhs's f32"),
    ("bool[2,3]", "bool[3,4]", {}, 0, "dtype bool is not accepted"),
    ("i8[2,3]", "i8[3,4]", {}, 0, "dtype i8 is not accepted"),
    ("f32[2,3]", "f32[4,4]", {}, "rhs_contracting_dims", "rhs dim 0 (4) does not match lhs dim 1 (3)"),
    ("f32[2,3]", "f32[3,4]", {"lhs_contracting_dims": (2,)}, "lhs_contracting_dims", "axis 2 is out of range"),
    ("f32[2,3]", "f32[3,4]", {"rhs_contracting_dims": (0, 1)}, "rhs_contracting_dims",
     "lists 2 dims but lhs_contracting_dims lists 1"),
    ("f32[2,3]", "f32[3,4]", {"lhs_contracting_dims": (1, 1), "rhs_contracting_dims": (0, 0)},
     "lhs_contracting_dims", "repeat"),
    ("f32[2,3]", "f32[3,2]", {"lhs_batch_dims": (1,), "rhs_batch_dims": (1,)}, "lhs_batch_dims",
     "dims [1] are also contracting dims"),
    ("f32[2,3]", "f32[3,5]", {"lhs_batch_dims": (0,), "rhs_batch_dims": (1,)}, "rhs_batch_dims",
     "rhs dim 1 (5) does not match lhs dim 0 (2)"),
    ("f32[2,3]", "f32[3,2]", {"lhs_batch_dims": (0,)}, "rhs_batch_dims", "lists 0 dims but lhs_batch_dims lists 1"),
]

CONV_OK = dict(zip(CONV_ATTRS, ((1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1), 1)))

CONV_ERRORS = [
    ("f32[1,4,5,5]", "f64[2,4,3,3]", {}, 1, "dtype f64 differs from lhs's f32"),
    ("i32[1,4,5,5]", "i32[2,4,3,3]", {}, 0, "dtype i32 is not accepted"),
    ("f32[4,5]", "f32[2,4]", {}, 0, "at least one spatial dim"),
    ("f32[1,4,5,5]", "f32[2,4,3]", {}, 1, "of lhs's rank 4"),
    ("f32[1,4,5,5]", "f32[2,4,3,3]", {"window_strides": (1,)}, "window_strides",
     "lists 1 entries, expected 2 (one per spatial dim)"),
    ("f32[1,4,5,5]", "f32[2,4,3,3]", {"padding": ((0, 0),)}, "padding", "lists 1 entries, expected 2"),
    ("f32[1,4,5,5]", "f32[2,4,3,3]", {"rhs_dilation": (0, 1)}, "rhs_dilation", "entries must be >= 1"),
    ("f32[1,4,5,5]", "f32[2,4,3,3]", {"lhs_dilation": (1, 0)}, "lhs_dilation", "entries must be >= 1"),
    ("f32[1,4,5,5]", "f32[2,4,3,3]", {"feature_group_count": 0}, "feature_group_count", "entries must be >= 1"),
    ("f32[1,4,5,5]", "f32[2,1,3,3]", {"feature_group_count": 3}, "feature_group_count",
     "3 groups must divide lhs's 4 input channels and rhs's 2 output channels"),
    ("f32[1,4,5,5]", "f32[3,2,3,3]", {"feature_group_count": 2}, "feature_group_count", "rhs's 3 output channels"),
    ("f32[1,4,5,5]", "f32[2,4,3,3]", {"feature_group_count": 2}, 1,
     "rhs dim 1 is 4 but lhs has 4 channels in 2 group(s), so it must be 2"),
    ("f32[1,4,5,5]", "f32[2,4,0,3]", {}, 1, "kernel dims must be >= 1"),
]


def _parse_type(text):
    dtype, dims = text[:-1].split("[")
    return TensorType(DType.from_short(dtype), tuple(int(d) for d in dims.split(",")))


@pytest.mark.parametrize("op, ok, lhs, rhs, overrides, where, message",
                         [("dot_general", DOT_OK, *row) for row in DOT_ERRORS]
                         + [("convolution", CONV_OK, *row) for row in CONV_ERRORS])
def test_type_rule_errors(op, ok, lhs, rhs, overrides, where, message):
    b = GraphBuilder()
    params = b.input(_parse_type(lhs)), b.input(_parse_type(rhs))
    with pytest.raises(TypeRuleError, match=re.escape(message)) as info:
        b.op(op, *params, **(ok | overrides))
    assert info.value.op == op and info.value.operand == where


def test_convolution_needs_static_channels_and_kernel():
    b = GraphBuilder()
    x = b.input(TensorType(DType.float32, (1, 2, Symbol("H"))))
    w = b.input(TensorType(DType.float32, (3, 2, 2)))
    with pytest.raises(TypeRuleError, match="channel and spatial dims of lhs must be static") as info:
        b.convolution(x, w, window_strides=(1,), padding=((0, 0),), lhs_dilation=(1,), rhs_dilation=(1,))
    assert info.value.operand == 0
