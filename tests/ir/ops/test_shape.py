"""Shape primitives (ir/ops/shape.py) against NumPy and hand-checked values, bit for bit."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

from parity.ir import OP_TABLE, GraphBuilder, Symbol, TypeRuleError, evaluate
from parity.ir.dtypes import ALL_DTYPES, COMPLEX_DTYPES, DType, bf16, f16, f32, f64, i8, i32, i64, u8
from parity.ir.opdef import Accuracy, Group
from parity.ir.types import TensorType

SHAPE_OPS = ("reshape", "broadcast_in_dim", "transpose", "slice", "concatenate", "pad", "reverse")
B, C = Symbol("B"), Symbol("C")


def sample(dtype: DType, shape, offset: int = 0) -> np.ndarray:
    """Distinct, dtype-specific values; floats include NaN, ±inf and -0.0 (exactness of moves)."""
    n = int(np.prod(shape))
    if dtype.is_bool:
        flat = (np.arange(n) + offset) % 3 == 0
    elif dtype.is_float:
        specials = np.array([np.nan, -0.0, np.inf, -np.inf, 0.5, -1.25], np.float64)
        flat = np.where(np.arange(n) < len(specials), np.resize(specials, n), np.arange(n) + offset - 3.0)
    else:
        flat = np.arange(n) * 37 - 5 + offset  # wraps into each int range (exercises sign bits)
    return flat.astype(np.float64 if dtype.is_float else np.int64).astype(dtype.numpy).reshape(shape)


def fill(dtype: DType):
    """A rank-0 padding value that differs from sample()'s values where it matters."""
    return np.array(True if dtype.is_bool else (-0.0 if dtype.is_float else 9), dtype.numpy)


def run(op: str, *arrays: np.ndarray, **attrs) -> np.ndarray:
    b = GraphBuilder()
    xs = [b.input(TensorType(DType.from_numpy(a.dtype), a.shape)) for a in arrays]
    (out,) = evaluate(b.build([b.op(op, *xs, **attrs)]), list(arrays))
    return out


def assert_bits(got: np.ndarray, want: np.ndarray) -> None:
    """Same dtype, shape and bytes: -0.0 vs 0.0 and NaN placement count."""
    want = np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    assert got.tobytes() == want.tobytes(), (got, want)  # tobytes() is C order for any layout


def pad_by_definition(x, value, low, high, interior):
    """Element by element from the definition: out[j] = x[k] where j = low + k*(interior+1)."""
    out_shape = tuple(lo + d + max(d - 1, 0) * i + hi for d, lo, hi, i in zip(x.shape, low, high, interior))
    out = np.empty(out_shape, x.dtype)
    for j in itertools.product(*map(range, out_shape)):
        k = []
        for jj, d, lo, i in zip(j, x.shape, low, interior):
            q, r = divmod(jj - lo, i + 1)
            k.append(q if r == 0 and 0 <= q < d else None)
        out[j] = value if None in k else x[tuple(k)]
    return out


def broadcast_by_definition(x, shape, broadcast_dimensions):
    """out[j] = x[k] with k[i] = j[broadcast_dimensions[i]], or 0 where x's dim i is 1."""
    out = np.empty(shape, x.dtype)
    for j in itertools.product(*map(range, shape)):
        out[j] = x[tuple(0 if x.shape[i] == 1 else j[d] for i, d in enumerate(broadcast_dimensions))]
    return out


# (op, operand shapes, attrs, NumPy expectation of (arrays, attrs))
CASES = [
    ("reshape", [(2, 3)], dict(shape=(3, 2)), lambda xs, a: xs[0].reshape(a["shape"])),
    ("reshape", [(2, 3, 4)], dict(shape=(4, 6)), lambda xs, a: xs[0].reshape(a["shape"])),
    ("reshape", [(0, 3)], dict(shape=(3, 0)), lambda xs, a: xs[0].reshape(a["shape"])),
    ("reshape", [(1,)], dict(shape=()), lambda xs, a: xs[0].reshape(())),
    ("reshape", [()], dict(shape=(1, 1)), lambda xs, a: xs[0].reshape((1, 1))),
    ("broadcast_in_dim", [()], dict(shape=(2, 3), broadcast_dimensions=()),
     lambda xs, a: np.broadcast_to(xs[0], (2, 3))),
    ("broadcast_in_dim", [(3,)], dict(shape=(2, 3), broadcast_dimensions=(1,)),
     lambda xs, a: broadcast_by_definition(xs[0], **a)),
    ("broadcast_in_dim", [(3,)], dict(shape=(3, 2), broadcast_dimensions=(0,)),
     lambda xs, a: np.repeat(xs[0][:, None], 2, axis=1)),
    ("broadcast_in_dim", [(3, 1)], dict(shape=(3, 2, 5), broadcast_dimensions=(0, 2)),
     lambda xs, a: broadcast_by_definition(xs[0], **a)),
    ("broadcast_in_dim", [(2,)], dict(shape=(2, 0), broadcast_dimensions=(0,)),
     lambda xs, a: np.zeros((2, 0), xs[0].dtype)),
    ("transpose", [(2, 3, 4)], dict(permutation=(2, 0, 1)), lambda xs, a: np.transpose(xs[0], (2, 0, 1))),
    ("transpose", [(0, 3)], dict(permutation=(1, 0)), lambda xs, a: xs[0].T),
    ("transpose", [()], dict(permutation=()), lambda xs, a: xs[0]),
    ("slice", [(5,)], dict(start_indices=(1,), limit_indices=(4,), strides=(1,)), lambda xs, a: xs[0][1:4]),
    ("slice", [(7,)], dict(start_indices=(0,), limit_indices=(7,), strides=(3,)), lambda xs, a: xs[0][0:7:3]),
    ("slice", [(4, 6)], dict(start_indices=(1, 1), limit_indices=(3, 6), strides=(1, 2)),
     lambda xs, a: xs[0][1:3, 1:6:2]),
    ("slice", [(3,)], dict(start_indices=(2,), limit_indices=(2,), strides=(1,)), lambda xs, a: xs[0][2:2]),
    ("slice", [(0, 2)], dict(start_indices=(0, 1), limit_indices=(0, 2), strides=(4, 4)),
     lambda xs, a: xs[0][0:0, 1:2:4]),
    ("concatenate", [(2, 3), (1, 3)], dict(dimension=0), lambda xs, a: np.concatenate(xs, 0)),
    ("concatenate", [(2, 1), (2, 0), (2, 2)], dict(dimension=1), lambda xs, a: np.concatenate(xs, 1)),
    ("concatenate", [(4,)], dict(dimension=0), lambda xs, a: xs[0]),
    ("pad", [(3,), ()], dict(edge_padding_low=(1,), edge_padding_high=(2,), interior_padding=(0,)),
     lambda xs, a: np.pad(xs[0], (1, 2), constant_values=xs[1])),
    ("pad", [(2, 3), ()], dict(edge_padding_low=(0, 2), edge_padding_high=(1, 0), interior_padding=(0, 0)),
     lambda xs, a: np.pad(xs[0], ((0, 1), (2, 0)), constant_values=xs[1])),
    ("pad", [(3,), ()], dict(edge_padding_low=(0,), edge_padding_high=(0,), interior_padding=(2,)),
     lambda xs, a: pad_by_definition(xs[0], xs[1], (0,), (0,), (2,))),
    ("pad", [(2, 3), ()], dict(edge_padding_low=(-1, 1), edge_padding_high=(0, -2), interior_padding=(1, 0)),
     lambda xs, a: pad_by_definition(xs[0], xs[1], (-1, 1), (0, -2), (1, 0))),
    ("pad", [(3,), ()], dict(edge_padding_low=(-2,), edge_padding_high=(-1,), interior_padding=(1,)),
     lambda xs, a: pad_by_definition(xs[0], xs[1], (-2,), (-1,), (1,))),
    ("pad", [(0,), ()], dict(edge_padding_low=(1,), edge_padding_high=(1,), interior_padding=(3,)),
     lambda xs, a: np.full((2,), xs[1])),
    ("pad", [(4,), ()], dict(edge_padding_low=(-2,), edge_padding_high=(-2,), interior_padding=(0,)),
     lambda xs, a: xs[0][2:2]),
    ("reverse", [(2, 3)], dict(dimensions=(0,)), lambda xs, a: xs[0][::-1]),
    ("reverse", [(2, 3)], dict(dimensions=(1, 0)), lambda xs, a: xs[0][::-1, ::-1]),
    ("reverse", [(2, 3)], dict(dimensions=()), lambda xs, a: xs[0]),
    ("reverse", [(0, 2)], dict(dimensions=(1,)), lambda xs, a: xs[0]),
]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.short)
@pytest.mark.parametrize("op, shapes, attrs, expect", CASES, ids=lambda v: None if callable(v) else str(v))
def test_matches_numpy(op, shapes, attrs, expect, dtype):
    arrays = [sample(dtype, s, offset=7 * k) for k, s in enumerate(shapes)]
    if op == "pad":
        arrays[1] = fill(dtype)
    want = np.asarray(expect(arrays, attrs)).astype(dtype.numpy)
    assert_bits(run(op, *arrays, **attrs), want)


def test_pad_by_definition_is_a_real_check():
    # The test's own oracle, hand-checked: [1,2,3] low -1, high 2, interior 1 -> [0,2,0,3,0,0].
    got = pad_by_definition(np.array([1, 2, 3]), 0, (-1,), (2,), (1,))
    assert got.tolist() == [0, 2, 0, 3, 0, 0]


# Hand-checked values: (op, operands as (dtype, nested list), attrs, expected nested list)
HAND = [
    ("reshape", [(i32, [[1, 2, 3], [4, 5, 6]])], dict(shape=(3, 2)), [[1, 2], [3, 4], [5, 6]]),
    ("transpose", [(i32, [[1, 2, 3], [4, 5, 6]])], dict(permutation=(1, 0)), [[1, 4], [2, 5], [3, 6]]),
    ("broadcast_in_dim", [(i64, [7, 8])], dict(shape=(2, 3), broadcast_dimensions=(0,)),
     [[7, 7, 7], [8, 8, 8]]),
    ("slice", [(i32, list(range(10)))], dict(start_indices=(1,), limit_indices=(9,), strides=(3,)), [1, 4, 7]),
    ("slice", [(i32, [[1, 2, 3], [4, 5, 6]])], dict(start_indices=(1, 0), limit_indices=(2, 3), strides=(1, 2)),
     [[4, 6]]),
    ("concatenate", [(u8, [[1], [2]]), (u8, [[3, 4], [5, 6]])], dict(dimension=1), [[1, 3, 4], [2, 5, 6]]),
    ("pad", [(i32, [1, 2, 3]), (i32, 0)], dict(edge_padding_low=(2,), edge_padding_high=(-1,),
                                               interior_padding=(1,)), [0, 0, 1, 0, 2, 0]),
    ("pad", [(i8, [[1, 2], [3, 4]]), (i8, -1)],
     dict(edge_padding_low=(0, -1), edge_padding_high=(1, 1), interior_padding=(1, 1)),
     [[-1, 2, -1], [-1, -1, -1], [-1, 4, -1], [-1, -1, -1]]),
    ("reverse", [(i32, [[1, 2, 3], [4, 5, 6]])], dict(dimensions=(1,)), [[3, 2, 1], [6, 5, 4]]),
    ("reverse", [(f32, [-0.0, np.nan, np.inf])], dict(dimensions=(0,)), [np.inf, np.nan, -0.0]),
]


@pytest.mark.parametrize("op, operands, attrs, want", HAND, ids=[f"{c[0]}-{k}" for k, c in enumerate(HAND)])
def test_hand_checked(op, operands, attrs, want):
    arrays = [np.array(v, d.numpy) for d, v in operands]
    assert_bits(run(op, *arrays, **attrs), np.array(want, operands[0][0].numpy))


def test_bf16_and_f16_values_survive_unchanged():
    # The smallest subnormals and largest finite values: a move must not round or flush them.
    for dtype in (bf16, f16):
        info = ml_dtypes.finfo(dtype.numpy)
        x = np.array([info.smallest_subnormal, -info.smallest_subnormal, info.max, -0.0], dtype.numpy)
        assert_bits(run("reverse", x, dimensions=(0,)), x[::-1])


# Symbolic dims: (op, operand types, attrs, expected result type)
SYMBOLIC_OK = [
    ("transpose", [f32[B, 3]], dict(permutation=(1, 0)), f32[3, B]),
    ("reshape", [f32[B, 2, 3]], dict(shape=(B, 6)), f32[B, 6]),
    ("reshape", [f32[B, 6]], dict(shape=(B, 3, 2)), f32[B, 3, 2]),
    ("reshape", [f32[8]], dict(shape=(B, 4)), f32[B, 4]),  # B = 2 at run time
    ("reshape", [f32[B, 6]], dict(shape=(C, 3)), f32[C, 3]),  # unknowns on both sides: run time
    ("broadcast_in_dim", [f32[B]], dict(shape=(B, 4), broadcast_dimensions=(0,)), f32[B, 4]),
    ("broadcast_in_dim", [f32[1, 4]], dict(shape=(B, 4), broadcast_dimensions=(0, 1)), f32[B, 4]),
    ("slice", [f32[B, 5]], dict(start_indices=(0, 1), limit_indices=(B, 3), strides=(1, 1)), f32[B, 2]),
    ("concatenate", [f32[B, 2], f32[B, 3]], dict(dimension=1), f32[B, 5]),
    ("concatenate", [f32[B, 2], f32[0, 2]], dict(dimension=0), f32[B, 2]),
    ("pad", [f32[B, 2], f32[()]], dict(edge_padding_low=(0, 1), edge_padding_high=(0, 1), interior_padding=(0, 0)),
     f32[B, 4]),
    ("reverse", [f32[B, 2]], dict(dimensions=(0,)), f32[B, 2]),
    # Result sizes computed from expressions
    ("slice", [f32[B]], dict(start_indices=(1,), limit_indices=(B,), strides=(1,)), f32[B - 1]),
    ("slice", [f32[B * 4]], dict(start_indices=(1,), limit_indices=(B * 4,), strides=(2,)), f32[B * 2]),
    ("concatenate", [f32[B], f32[3]], dict(dimension=0), f32[B + 3]),
    ("concatenate", [f32[B, 2], f32[C * 2, 2]], dict(dimension=0), f32[B + C * 2, 2]),
    ("pad", [f32[B], f32[()]], dict(edge_padding_low=(0,), edge_padding_high=(0,), interior_padding=(1,)),
     f32[B * 2 - 1]),
    ("reshape", [f32[B * 4, C]], dict(shape=(B, 4 * C)), f32[B, C * 4]),
    ("reshape", [f32[B, C]], dict(shape=(B * C,)), f32[B * C]),
    ("reshape", [f32[B * 6]], dict(shape=(B * 6 // 4, 4)), f32[B + B // 2, 4]),  # B even: run time
    ("broadcast_in_dim", [f32[C]], dict(shape=(B,), broadcast_dimensions=(0,)), f32[B]),  # C in (1, B): run time
]


@pytest.mark.parametrize("op, types, attrs, want", SYMBOLIC_OK, ids=[f"{c[0]}-{k}" for k, c in enumerate(SYMBOLIC_OK)])
def test_symbolic_dims_pass_through(op, types, attrs, want):
    b = GraphBuilder()
    assert b.op(op, *[b.input(t) for t in types], **attrs).type == want


def test_symbolic_graph_evaluates_with_bound_sizes():
    b = GraphBuilder()
    x = b.input(f64[B, 6])
    y = b.reshape(b.transpose(x, permutation=(1, 0)), shape=(3, 2, B))
    z = b.slice(y, start_indices=(1, 0, 0), limit_indices=(3, 2, B), strides=(1, 1, 1))
    data = np.arange(12.0).reshape(2, 6)
    (got,) = evaluate(b.build([z]), [data])
    assert_bits(got, data.T.reshape(3, 2, 2)[1:3])


# Type-rule errors: (op, operand types, attrs, substrings the message must contain)
ERRORS = [
    ("reshape", [f32[2, 3]], dict(shape=(4,)), ["reshape (attribute 'shape')", "f32[2,3]", "[4]", "6 vs 4"]),
    ("reshape", [f32[B, 6]], dict(shape=(B, 4)), ["reshape (attribute 'shape')", "B*6 vs B*4"]),
    ("reshape", [f32[6]], dict(shape=(B, 4)), ["reshape (attribute 'shape')", "6 vs B*4"]),
    ("reshape", [f32[B, 6]], dict(shape=(5,)), ["reshape (attribute 'shape')", "B*6 vs 5"]),
    ("broadcast_in_dim", [f32[3]], dict(shape=(2, 3), broadcast_dimensions=(0,)),
     ["broadcast_in_dim (attribute 'shape')", "operand dim 0 has size 3, result dim 0 has size 2",
      "equal or the operand's must be 1"]),
    ("broadcast_in_dim", [f32[1, 1]], dict(shape=(2, 2), broadcast_dimensions=(1, 0)),
     ["broadcast_in_dim (attribute 'broadcast_dimensions')", "not strictly increasing"]),
    ("broadcast_in_dim", [f32[1, 1]], dict(shape=(2, 2), broadcast_dimensions=(0, 0)),
     ["(attribute 'broadcast_dimensions')", "[0, 0] is not strictly increasing"]),
    ("broadcast_in_dim", [f32[3]], dict(shape=(3,), broadcast_dimensions=()),
     ["broadcast_in_dim (attribute 'broadcast_dimensions')", "0 entries", "rank 1"]),
    ("broadcast_in_dim", [f32[3]], dict(shape=(3,), broadcast_dimensions=(1,)),
     ["broadcast_in_dim (attribute 'broadcast_dimensions')", "out of range for result rank 1"]),
    ("transpose", [f32[2, 3]], dict(permutation=(0, 0)), ["transpose (attribute 'permutation')",
                                                          "[0, 0] is not a permutation of 0..1"]),
    ("transpose", [f32[2, 3]], dict(permutation=(0,)), ["transpose (attribute 'permutation')", "f32[2,3]"]),
    ("slice", [f32[4]], dict(start_indices=(0,), limit_indices=(5,), strides=(1,)),
     ["slice (attribute 'limit_indices')", "limit 5 exceeds the operand's size 4"]),
    ("slice", [f32[4]], dict(start_indices=(3,), limit_indices=(2,), strides=(1,)),
     ["slice (attribute 'limit_indices')", "limit 2 is below start 3"]),
    ("slice", [f32[4]], dict(start_indices=(-1,), limit_indices=(2,), strides=(1,)),
     ["slice (attribute 'start_indices')", "start -1 of dim 0 is negative"]),
    ("slice", [f32[4]], dict(start_indices=(0,), limit_indices=(2,), strides=(0,)),
     ["slice (attribute 'strides')", "stride 0 of dim 0 must be >= 1"]),
    ("slice", [f32[4, 2]], dict(start_indices=(0,), limit_indices=(2, 2), strides=(1, 1)),
     ["slice (attribute 'start_indices')", "1 entries", "rank 2"]),
    ("slice", [f32[B]], dict(start_indices=(0,), limit_indices=(B + 1,), strides=(1,)),
     ["slice (attribute 'limit_indices')", "limit B+1 exceeds the operand's size B"]),
    ("concatenate", [f32[2], f16[2]], dict(dimension=0), ["concatenate (operand 1)", "dtype f16 differs", "f32"]),
    ("concatenate", [f32[2], f32[2], f32[2, 1]], dict(dimension=0), ["concatenate (operand 2)", "rank 2"]),
    ("concatenate", [f32[2, 3], f32[2, 4]], dict(dimension=0), ["concatenate (operand 1)", "dim 1 of f32[2,4]"]),
    ("concatenate", [f32[2]], dict(dimension=1), ["concatenate (attribute 'dimension')", "out of range for rank 1"]),
    ("concatenate", [f32[B * 4, 2], f32[B * 3, 2]], dict(dimension=1),
     ["concatenate (operand 1)", "dim 0 of f32[B*3,2] differs", "expected B*4, got B*3"]),
    ("broadcast_in_dim", [f32[B * 4]], dict(shape=(B * 3,), broadcast_dimensions=(0,)),
     ["operand dim 0 has size B*4, result dim 0 has size B*3"]),
    ("concatenate", [], dict(dimension=0), ["concatenate: takes at least one operand"]),
    ("pad", [f32[3], f32[1]], dict(edge_padding_low=(0,), edge_padding_high=(0,), interior_padding=(0,)),
     ["pad (operand 1)", "padding_value must be a rank-0 f32, got f32[1]"]),
    ("pad", [f32[3], f64[()]], dict(edge_padding_low=(0,), edge_padding_high=(0,), interior_padding=(0,)),
     ["pad (operand 1)", "rank-0 f32, got f64[]"]),
    ("pad", [f32[3], f32[()]], dict(edge_padding_low=(0,), edge_padding_high=(0,), interior_padding=(-1,)),
     ["pad (attribute 'interior_padding')", "interior padding -1 of dim 0 is negative"]),
    ("pad", [f32[3], f32[()]], dict(edge_padding_low=(-2,), edge_padding_high=(-2,), interior_padding=(0,)),
     ["pad (attribute 'edge_padding_low')", "would have size -1", "crops too much"]),
    ("pad", [f32[3], f32[()]], dict(edge_padding_low=(0, 0), edge_padding_high=(0,), interior_padding=(0,)),
     ["pad (attribute 'edge_padding_low')", "2 entries", "rank 1"]),
    ("reverse", [f32[2, 3]], dict(dimensions=(1, 1)), ["reverse (attribute 'dimensions')", "repeat"]),
    ("reverse", [f32[2, 3]], dict(dimensions=(2,)), ["reverse (attribute 'dimensions')", "axis 2 is out of range"]),
]


@pytest.mark.parametrize("op, types, attrs, needles", ERRORS, ids=[f"{c[0]}-{k}" for k, c in enumerate(ERRORS)])
def test_type_rule_errors(op, types, attrs, needles):
    b = GraphBuilder()
    with pytest.raises(TypeRuleError) as info:
        b.op(op, *[b.input(t) for t in types], **attrs)
    missing = [needle for needle in needles if needle not in str(info.value)]
    assert not missing, f"{missing} not in: {info.value}"


@pytest.mark.parametrize("name", SHAPE_OPS)
def test_op_table_entry(name):
    opdef = OP_TABLE[name]
    assert opdef.dtypes == ALL_DTYPES + COMPLEX_DTYPES  # complex numbers move like any other
    assert opdef.groups == frozenset({Group.SHAPE, Group.EXACT})
    assert opdef.accuracy is Accuracy.EXACT
    assert opdef.implementation_defined == ()
    assert opdef.is_variadic == (name == "concatenate")


def test_oracle_mode_keeps_float64():
    x = np.array([[1.0, 2.0]], np.float32)
    b = GraphBuilder()
    (y,) = evaluate(b.build([b.transpose(b.input(f32[1, 2]), permutation=(1, 0))]), [x], oracle=True)
    assert y.dtype == np.float64 and y.tolist() == [[1.0], [2.0]]


@pytest.mark.parametrize("op, attrs", [
    ("reshape", dict(shape=(3, 2))), ("transpose", dict(permutation=(1, 0))), ("reverse", dict(dimensions=(0,))),
    ("broadcast_in_dim", dict(shape=(2, 3), broadcast_dimensions=(0, 1))),
    ("slice", dict(start_indices=(0, 0), limit_indices=(2, 3), strides=(1, 1))),
], ids=lambda v: v if isinstance(v, str) else None)
def test_results_do_not_alias_inputs(op, attrs):
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    out = run(op, x, **attrs)
    out[...] = -1  # writable, and the input stays as it was
    assert x.tolist() == [[0, 1, 2], [3, 4, 5]]
