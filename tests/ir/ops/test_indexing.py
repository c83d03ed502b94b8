"""Indexing primitives (ir/ops/indexing.py) against NumPy, definitions and hand-checked values."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from parity.ir import OP_TABLE, GraphBuilder, Symbol, TypeRuleError, evaluate
from parity.ir.dtypes import ALL_DTYPES, INT_DTYPES, DType, bf16, bool_, f16, f32, f64, i8, i16, i32, i64, u8, u32
from parity.ir.opdef import Accuracy, Group
from parity.ir.types import TensorType

B = Symbol("B")
INDEX_DTYPES = (i8, i16, i32, i64, u8, u32)


def values(dtype: DType, shape, seed: int = 0) -> np.ndarray:
    """Small distinct-ish values of ``dtype`` (floats with NaN, -0.0 and inf mixed in)."""
    rng = np.random.default_rng(seed)
    if dtype.is_bool:
        return rng.integers(0, 2, shape).astype(bool)
    raw = rng.integers(-50 if dtype.is_signed else 0, 50, shape).astype(np.float64)
    if dtype.is_float and raw.size >= 3:
        raw.flat[:3] = [np.nan, -0.0, np.inf]
    return raw.astype(dtype.numpy)


def run(op: str, *arrays: np.ndarray, **attrs) -> np.ndarray:
    b = GraphBuilder()
    params = [b.input(TensorType(DType.from_numpy(a.dtype), a.shape)) for a in arrays]
    return evaluate(b.build([b.op(op, *params, **attrs)]), list(arrays))[0]


def same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    """Equal dtype, shape and bits (so -0.0 != 0.0); a NaN matches any NaN (its sign is not defined)."""
    want = np.asarray(want)
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if got.dtype.kind == "f" or got.dtype == bf16.numpy:
        nan = np.isnan(want.astype(np.float64))
        if not np.array_equal(np.isnan(got.astype(np.float64)), nan):
            return False
        got, want = got[~nan], want[~nan]
    return got.tobytes() == want.tobytes()


def positions(indices: np.ndarray, axis: int):
    """(j, k): each position j of indices and the x position k it addresses along ``axis``."""
    for j in itertools.product(*map(range, indices.shape)):
        k = list(j)
        k[axis] = int(indices[j])
        yield j, tuple(k)


# -- gather ------------------------------------------------------------------------------------

# (x shape, indices shape, axis)
GATHER_SHAPES = [
    ((3, 4), (3, 2), 1),
    ((3, 4), (5, 4), 0),
    ((3, 4), (2, 6), 1),  # indices smaller than x on the other dim, longer on the axis
    ((2, 3, 4), (2, 1, 4), 1),
    ((1, 1), (1, 3), 1),
    ((4,), (0,), 0),
    ((2, 0), (2, 0), 1),
    ((5,), (5,), 0),
]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.short)
@pytest.mark.parametrize("x_shape, idx_shape, axis", GATHER_SHAPES, ids=str)
def test_gather_matches_take_along_axis(x_shape, idx_shape, axis, dtype):
    x = values(dtype, x_shape)
    idx = np.random.default_rng(1).integers(0, max(x_shape[axis], 1), idx_shape).astype(np.int64)
    # take_along_axis broadcasts, so crop x to the indices' extent on the other dims first.
    crop = tuple(slice(None) if d == axis else slice(0, n) for d, n in enumerate(idx_shape))
    assert same_bits(run("gather", x, idx, axis=axis), np.take_along_axis(x[crop], idx, axis))


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES, ids=lambda d: d.short)
def test_gather_index_dtypes(index_dtype):
    x = np.array([[1.5, -2.0, 3.25], [4.0, -0.0, 6.0]], np.float32)
    idx = np.array([[2, 0], [1, 1]], index_dtype.numpy)
    assert same_bits(run("gather", x, idx, axis=1), np.array([[3.25, 1.5], [-0.0, -0.0]], np.float32))


# Out-of-range indices are implementation-defined; the reference clamps (hand-checked).
GATHER_CLAMPED = [
    (i32, [-1, 3, 1, 100, -2147483648], [10, 30, 20, 30, 10]),
    (u32, [4294967295, 0, 2], [30, 10, 30]),
    (i8, [-128, 127], [10, 30]),
]


@pytest.mark.parametrize("index_dtype, idx, want", GATHER_CLAMPED, ids=lambda v: getattr(v, "short", None))
def test_gather_clamps_out_of_range(index_dtype, idx, want):
    x = np.array([10, 20, 30], np.int64)
    assert run("gather", x, np.array(idx, index_dtype.numpy), axis=0).tolist() == want


def test_gather_from_empty_axis_gives_zeros():
    got = run("gather", np.zeros((2, 0), np.float32), np.array([[0], [5]], np.int32), axis=1)
    assert same_bits(got, np.zeros((2, 1), np.float32))


# -- scatter -----------------------------------------------------------------------------------


_COMBINE = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b, "replace": lambda a, b: b,
            # NaN wins either way round (Python's max/min would keep the first operand)
            "max": lambda a, b: a if a != a or (b == b and a >= b) else b,
            "min": lambda a, b: a if a != a or (b == b and a <= b) else b}


def scatter_by_definition(x, indices, updates, axis, reduce, include_self=True):
    """Loop over the positions of indices, combining in float64/Python ints, then round once
    (ints wrap). Without include_self an element's first update replaces it."""
    acc = x.astype(np.float64 if x.dtype.kind == "f" else object)
    written = set()
    for j, k in positions(indices, axis):
        first = not include_self and k not in written
        with np.errstate(all="ignore"):  # inf * 0, inf - inf: NaN by IEEE rules
            acc[k] = updates[j] if first else _COMBINE[reduce](acc[k], updates[j])
        written.add(k)
    if x.dtype.kind in "iu":
        info = np.iinfo(x.dtype)
        acc = np.array([(int(v) - info.min) % (info.max - info.min + 1) + info.min for v in acc.flat],
                       dtype=object).reshape(acc.shape)
    return acc.astype(x.dtype)


# (x shape, indices shape, axis): the index values are a permutation along the axis (no duplicates)
SCATTER_SHAPES = [((3, 4), (3, 4), 1), ((3, 4), (2, 4), 0), ((2, 3, 2), (1, 3, 2), 2), ((1,), (1,), 0), ((0, 2), (0, 2), 0)]


# bool takes 'replace' only ('add' on bool is a type error, see ERRORS)
SCATTER_KINDS = [(d, r) for d in ALL_DTYPES for r in ("replace", "add", "mul", "max", "min")
                 if not (d.is_bool and r != "replace")]


@pytest.mark.parametrize("dtype, reduce", SCATTER_KINDS, ids=lambda v: getattr(v, "short", v))
@pytest.mark.parametrize("x_shape, idx_shape, axis", SCATTER_SHAPES, ids=str)
def test_scatter_matches_definition(x_shape, idx_shape, axis, reduce, dtype):
    x, updates = values(dtype, x_shape, seed=2), values(dtype, idx_shape, seed=3)
    rng = np.random.default_rng(4)
    perm = rng.permuted(np.broadcast_to(np.arange(x_shape[axis]).reshape(
        [-1 if d == axis else 1 for d in range(len(x_shape))]), x_shape), axis=axis)
    idx = perm[tuple(slice(0, n) for n in idx_shape)]
    want = scatter_by_definition(x, idx, updates, axis, reduce)
    assert same_bits(run("scatter", x, idx, updates, axis=axis, reduce=reduce), want)


# Hand-checked: (x, indices, updates, axis, reduce, expected)
SCATTER_HAND = [
    (np.array([0, 0, 0], np.int32), [0, 0, 2], np.array([1, 2, 3], np.int32), 0, "add", [3, 0, 3]),
    (np.array([120], np.int8), [0, 0], np.array([5, 5], np.int8), 0, "add", [-126]),  # wraps
    (np.array([250], np.uint8), [0, 0, 0], np.array([3, 3, 3], np.uint8), 0, "add", [3]),  # wraps
    (np.array([[1, 1, 1], [2, 2, 2]], np.int64), [[2, 2], [0, 1]], np.array([[5, 6], [7, 8]], np.int64), 1,
     "add", [[1, 1, 12], [9, 10, 2]]),
    (np.array([0.0], np.float16), [0, 0, 0], np.array([2048, 1, 1], np.float16), 0, "add", [2050.0]),
    (np.array([1.0, 2.0], np.float32), [1, 1], np.array([np.inf, -np.inf], np.float32), 0, "add", [1.0, np.nan]),
    (np.array([False, True, False]), [2, 1], np.array([True, False]), 0, "replace", [False, False, True]),
    (np.array([1, 2, 3], np.int32), [-5, 9], np.array([7, 8], np.int32), 0, "replace", [7, 2, 8]),  # clamped
]


@pytest.mark.parametrize("x, idx, updates, axis, reduce, want", SCATTER_HAND, ids=[f"hand-{k}" for k in range(len(SCATTER_HAND))])
def test_scatter_hand_checked(x, idx, updates, axis, reduce, want):
    got = run("scatter", x, np.array(idx, np.int32), updates, axis=axis, reduce=reduce)
    assert same_bits(got, np.array(want, x.dtype))


# every reducing mode on duplicates (3 updates per column into 2 slots), with and without include_self
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["add", "mul", "max", "min"])
@pytest.mark.parametrize("dtype", [f32, f64, i8, u8, i64], ids=lambda d: d.short)
def test_scatter_reducing_duplicates_match_definition(dtype, reduce, include_self):
    x, updates = values(dtype, (2, 3), seed=6), values(dtype, (3, 3), seed=7)
    idx = np.array([[0, 1, 1], [0, 1, 1], [1, 1, 0]], np.int32)
    want = scatter_by_definition(x, idx, updates, 0, reduce, include_self)
    assert same_bits(run("scatter", x, idx, updates, axis=0, reduce=reduce, include_self=include_self), want)


# Hand-checked reducing modes: (x, indices, updates, reduce, include_self, expected)
SCATTER_REDUCE_HAND = [
    ([1.0, 2.0, 3.0], [0, 0, 2], [5.0, 4.0, -7.0], "max", True, [5.0, 2.0, 3.0]),
    ([1.0, 2.0, 3.0], [0, 0, 2], [5.0, 4.0, -7.0], "max", False, [5.0, 2.0, -7.0]),
    ([1.0, 2.0, 3.0], [0, 0, 2], [5.0, 4.0, -7.0], "min", False, [4.0, 2.0, -7.0]),
    ([1.0, 2.0, 3.0], [0, 0, 2], [5.0, 4.0, -7.0], "mul", True, [20.0, 2.0, -21.0]),
    ([1.0, 2.0, 3.0], [0, 0, 2], [5.0, 4.0, -7.0], "add", False, [9.0, 2.0, -7.0]),
    ([1.0, np.nan, 3.0], [1, 0, 0], [5.0, np.nan, 4.0], "max", True, [np.nan, np.nan, 3.0]),  # NaN propagates
    ([1.0, np.nan, 3.0], [1, 0, 0], [5.0, 6.0, 4.0], "min", False, [4.0, 5.0, 3.0]),  # x's NaN not read
]


@pytest.mark.parametrize("x, idx, updates, reduce, include_self, want", SCATTER_REDUCE_HAND,
                         ids=[f"hand-{k}" for k in range(len(SCATTER_REDUCE_HAND))])
def test_scatter_reduce_hand_checked(x, idx, updates, reduce, include_self, want):
    got = run("scatter", np.array(x, np.float32), np.array(idx, np.int64), np.array(updates, np.float32), axis=0,
              reduce=reduce, include_self=include_self)
    assert same_bits(got, np.array(want, np.float32))


def test_scatter_add_float_duplicates_equal_np_add_at():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 3))
    idx = rng.integers(0, 4, (10, 3))
    updates = rng.standard_normal((10, 3))
    want = x.copy()
    np.add.at(want, (idx, np.arange(3)[None, :]), updates)
    assert np.array_equal(run("scatter", x, idx, updates, axis=0, reduce="add"), want)


# -- dynamic_slice / dynamic_update_slice -------------------------------------------------------

# (x shape, starts, sizes or update shape, clamped starts)
DYNAMIC = [
    ((5,), [1], (2,), [1]),
    ((5,), [4], (2,), [3]),
    ((5,), [-3], (2,), [0]),
    ((5,), [7], (5,), [0]),
    ((5,), [2], (0,), [2]),
    ((3, 4), [1, -1], (2, 3), [1, 0]),
    ((3, 4), [5, 2], (1, 1), [2, 2]),
    ((0, 2), [3, 3], (0, 1), [0, 1]),
    ((), [], (), []),
]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.short)
@pytest.mark.parametrize("x_shape, starts, sizes, clamped", DYNAMIC, ids=str)
def test_dynamic_slice_clamps(x_shape, starts, sizes, clamped, dtype):
    x = values(dtype, x_shape)
    window = tuple(slice(s, s + n) for s, n in zip(clamped, sizes))
    got = run("dynamic_slice", x, *[np.array(s, np.int32) for s in starts], slice_sizes=sizes)
    assert same_bits(got, x[window])


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.short)
@pytest.mark.parametrize("x_shape, starts, sizes, clamped", DYNAMIC, ids=str)
def test_dynamic_update_slice_clamps(x_shape, starts, sizes, clamped, dtype):
    x, update = values(dtype, x_shape, seed=6), values(dtype, sizes, seed=7)
    want = x.copy()
    want[tuple(slice(s, s + n) for s, n in zip(clamped, sizes))] = update
    got = run("dynamic_update_slice", x, update, *[np.array(s, np.int64) for s in starts])
    assert same_bits(got, want)


@pytest.mark.parametrize("start_dtype, start, want", [
    (u8, 255, [3, 4]), (u32, 4294967295, [3, 4]), (i8, -128, [0, 1]), (i16, 2, [2, 3]), (i64, -(2**62), [0, 1]),
], ids=lambda v: getattr(v, "short", None))
def test_dynamic_start_dtypes(start_dtype, start, want):
    got = run("dynamic_slice", np.arange(5, dtype=np.int32), np.array(start, start_dtype.numpy), slice_sizes=(2,))
    assert got.tolist() == want


def test_dynamic_update_slice_hand_checked():
    x = np.zeros((3, 3), np.int32)
    got = run("dynamic_update_slice", x, np.array([[1, 2], [3, 4]], np.int32), np.array(2, np.int32),
              np.array(-1, np.int32))
    assert got.tolist() == [[0, 0, 0], [1, 2, 0], [3, 4, 0]]


# -- symbolic dims -----------------------------------------------------------------------------


def test_symbolic_dims_pass_through():
    b = GraphBuilder()
    x, idx = b.input(f32[B, 4]), b.input(i64[B, 2])
    start = b.input(i32[()])
    gathered = b.gather(x, idx, axis=1)
    window = b.dynamic_slice(x, start, start, slice_sizes=(B, 2))
    updated = b.dynamic_update_slice(x, window, start, start)
    assert (gathered.type, window.type, updated.type) == (f32[B, 2], f32[B, 2], f32[B, 4])
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    outs = evaluate(b.build([gathered, window, updated]), [data, np.array([[3, 0]] * 3), np.array(1, np.int32)])
    assert outs[0].tolist() == [[3, 0], [7, 4], [11, 8]]
    assert outs[1].tolist() == data[:, 1:3].tolist()  # the row start is clamped to 0
    assert same_bits(outs[2], data)


# -- type-rule errors --------------------------------------------------------------------------

# (op, operand types, attrs, substrings the message must contain)
ERRORS = [
    ("gather", [f32[3], f32[2]], dict(axis=0), ["gather (operand 1)", "dtype f32 is not accepted", "i64"]),
    ("gather", [f32[3], bool_[2]], dict(axis=0), ["gather (operand 1)", "dtype bool is not accepted"]),
    ("gather", [f32[3, 2], i32[2]], dict(axis=0), ["gather (operand 1)", "indices i32[2] must have the rank of x f32[3,2]"]),
    ("gather", [f32[3, 2], i32[2, 3]], dict(axis=0), ["gather (operand 1)", "dim 1 of indices i32[2,3] exceeds x's f32[3,2]"]),
    ("gather", [f32[3], i32[2]], dict(axis=1), ["gather (attribute 'axis')", "axis 1 is out of range for rank 1"]),
    ("gather", [f32[()], i32[()]], dict(axis=0), ["gather (attribute 'axis')", "out of range for rank 0"]),
    ("scatter", [f32[3], i32[2], f16[2]], dict(axis=0, reduce="add"), ["scatter (operand 2)", "updates dtype f16 differs"]),
    ("scatter", [f32[3], i32[2], f32[3]], dict(axis=0, reduce="add"),
     ["scatter (operand 2)", "updates f32[3] must have the shape of indices i32[2]"]),
    ("scatter", [bool_[3], i32[2], bool_[2]], dict(axis=0, reduce="add"), ["scatter (attribute 'reduce')", "bool"]),
    ("scatter", [f32[3], i32[2], f32[2]], dict(axis=0, reduce="mean"), ["scatter (attribute 'reduce')", "'replace', 'add'"]),
    ("scatter", [bool_[3], i32[2], bool_[2]], dict(axis=0, reduce="max"), ["scatter (attribute 'reduce')", "bool"]),
    ("scatter", [f32[3], i32[2], f32[2]], dict(axis=0, reduce="replace", include_self=False),
     ["scatter (attribute 'include_self')", "needs a reducing mode"]),
    ("scatter", [f32[3], f32[2], f32[2]], dict(axis=0, reduce="add"), ["scatter (operand 1)", "dtype f32 is not accepted"]),
    ("dynamic_slice", [f32[3, 3], i32[()]], dict(slice_sizes=(1, 1)),
     ["dynamic_slice (operand 1)", "one start index per dim of x (rank 2), got 1"]),
    ("dynamic_slice", [f32[3], i32[1]], dict(slice_sizes=(1,)), ["dynamic_slice (operand 1)", "rank-0 integer, got i32[1]"]),
    ("dynamic_slice", [f32[3], f32[()]], dict(slice_sizes=(1,)), ["dynamic_slice (operand 1)", "rank-0 integer, got f32[]"]),
    ("dynamic_slice", [f32[3, 3], i32[()], i64[()]], dict(slice_sizes=(1, 1)),
     ["dynamic_slice (operand 2)", "start dtype i64 differs from operand 1's i32"]),
    ("dynamic_slice", [f32[3], i32[()]], dict(slice_sizes=(4,)), ["dynamic_slice (attribute 'slice_sizes')", "size 4 is not in [0, 3]"]),
    ("dynamic_slice", [f32[3], i32[()]], dict(slice_sizes=(-1,)), ["dynamic_slice (attribute 'slice_sizes')", "size -1"]),
    ("dynamic_slice", [f32[3], i32[()]], dict(slice_sizes=(1, 1)), ["dynamic_slice (attribute 'slice_sizes')", "2 entries"]),
    ("dynamic_slice", [f32[4], i32[()]], dict(slice_sizes=(B,)), ["dynamic_slice (attribute 'slice_sizes')", "symbolic size (B)"]),
    ("dynamic_update_slice", [f32[3]], {}, ["dynamic_update_slice (operand 0)", "got only x"]),
    ("dynamic_update_slice", [f32[3], f64[2], i32[()]], {}, ["dynamic_update_slice (operand 1)", "update dtype f64 differs"]),
    ("dynamic_update_slice", [f32[3], f32[4], i32[()]], {}, ["dynamic_update_slice (operand 1)", "dim 0 of update f32[4] exceeds"]),
    ("dynamic_update_slice", [f32[3], f32[1, 1], i32[()]], {}, ["dynamic_update_slice (operand 1)", "rank of x"]),
    ("dynamic_update_slice", [f32[3], f32[1]], {}, ["dynamic_update_slice (operand 2)", "got 0"]),
    ("dynamic_update_slice", [f32[3], f32[1], u8[()], u8[()]], {}, ["dynamic_update_slice (operand 2)", "got 2"]),
]


@pytest.mark.parametrize("op, types, attrs, needles", ERRORS, ids=[f"{c[0]}-{k}" for k, c in enumerate(ERRORS)])
def test_type_rule_errors(op, types, attrs, needles):
    b = GraphBuilder()
    with pytest.raises(TypeRuleError) as info:
        b.op(op, *[b.input(t) for t in types], **attrs)
    missing = [needle for needle in needles if needle not in str(info.value)]
    assert not missing, f"{missing} not in: {info.value}"


# -- op table entries --------------------------------------------------------------------------

TABLE = [
    ("gather", Accuracy.EXACT, {Group.INDEXING, Group.EXACT, Group.SELECTS}, 1),
    ("scatter", Accuracy.ACCUMULATION, {Group.INDEXING}, 4),
    ("dynamic_slice", Accuracy.EXACT, {Group.INDEXING, Group.EXACT, Group.SELECTS}, 0),
    ("dynamic_update_slice", Accuracy.EXACT, {Group.INDEXING, Group.EXACT}, 0),
]


@pytest.mark.parametrize("name, accuracy, groups, n_implementation_defined", TABLE, ids=lambda v: v if isinstance(v, str) else None)
def test_op_table_entry(name, accuracy, groups, n_implementation_defined):
    opdef = OP_TABLE[name]
    assert (opdef.accuracy, opdef.groups, opdef.dtypes) == (accuracy, frozenset(groups), ALL_DTYPES)
    assert len(opdef.implementation_defined) == n_implementation_defined
    assert all("clamps" in text for text in opdef.implementation_defined[:1])


def test_index_dtypes_cover_all_integers():
    b = GraphBuilder()
    x = b.input(bf16[4])
    for dtype in INT_DTYPES:
        assert b.gather(x, b.input(TensorType(dtype, (2,))), axis=0).type == bf16[2]
