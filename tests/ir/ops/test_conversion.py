"""convert and bitcast_convert (ir/ops/conversion.py): every dtype pair against a rounding
written with exact fractions, hand-checked ties, saturation, bit patterns and errors."""

from __future__ import annotations

import math
import re
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from parity.ir import OP_TABLE, Accuracy, DType, GraphBuilder, Group, TensorType, TypeRuleError, evaluate
from parity.ir.dtypes import ALL_DTYPES
from parity.ir.ops.conversion import round_float

NAN, INF = float("nan"), float("inf")
ALL = list(ALL_DTYPES)  # complex conversions: tests/ir/ops/test_complex_numbers.py

# precision (with the implicit bit), smallest normal exponent, largest exponent
FORMATS = {DType.float16: (11, -14, 15), DType.bfloat16: (8, -126, 127),
           DType.float32: (24, -126, 127), DType.float64: (53, -1022, 1023)}


def nearest_even(value, dtype: DType) -> float:
    """The exact ``value`` (int or float) rounded to nearest even in ``dtype``, computed with fractions."""
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value) or value == 0):
        return value
    precision, emin, emax = FORMATS[dtype]
    exact = Fraction(value)
    magnitude = abs(exact)
    if magnitude == 0:
        return 0.0
    exponent = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    if Fraction(2) ** exponent > magnitude:
        exponent -= 1
    quantum = Fraction(2) ** (max(exponent, emin) - precision + 1)  # subnormals share emin's quantum
    rounded = round(magnitude / quantum) * quantum  # round() on a Fraction ties to even
    largest = (2 - Fraction(2) ** (1 - precision)) * Fraction(2) ** emax
    result = INF if rounded > largest else float(rounded)
    return math.copysign(result, exact)


def expected_convert(value, src: DType, dst: DType):
    """The IR's convert on one Python value, as docs/ir.md (and the reference's choices) say."""
    if dst.is_bool:
        return value != 0
    if dst.is_float:
        return nearest_even(value if src.is_float else int(value), dst)
    if src.is_float:  # truncate; NaN → 0 and saturation are the reference's implementation-defined choice
        if math.isnan(value):
            return 0
        info = dst.iinfo
        if math.isinf(value):
            return info.max if value > 0 else info.min
        return min(max(math.trunc(value), info.min), info.max)
    bits = dst.bits
    wrapped = int(value) & ((1 << bits) - 1)
    return wrapped - (1 << bits) if dst.is_signed and wrapped >= 1 << (bits - 1) else wrapped


def source_values(dtype: DType) -> np.ndarray:
    """Edge values (ties of every narrower format, range limits) plus random ones, in ``dtype``."""
    rng = np.random.default_rng(7)
    if dtype.is_bool:
        return np.array([True, False])
    if dtype.is_integer:
        info = dtype.iinfo
        edge = [0, 1, -1, 2, 127, 128, 255, 256, -129, 65519, 65520, 2**24 + 1, 2**24 + 2**16 + 1, 2**31 - 1,
                -(2**31), 2**32 - 1, 2**53 + 1, 2**60 + 2**36 + 1, 2**63 - 1, -(2**63), info.min, info.max]
        edge = [v for v in edge if info.min <= v <= info.max]
        return np.concatenate([np.array(edge, dtype.numpy), rng.integers(info.min, info.max, 16, dtype.numpy)])
    fi = dtype.finfo
    edge = [0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 2.9, -2.9, 1 + 2**-8, 1 + 2**-8 + 2**-40, 1 + 3 * 2**-8,
            1 + 2**-11, 1 + 2**-11 + 2**-40, 1 + 2**-24, 65504.0, 65519.0, 65520.0, 127.9, 128.0, -128.9, -129.0,
            255.9, 256.0, -1.0, 1e10, -1e10, 2.0**31, -(2.0**31), 2.0**32, 2.0**63, -(2.0**63), 2.0**64,
            3.4e38, 1e300, -1e300, 1e-40, 1e-45, 5e-324, INF, -INF, NAN, float(fi.smallest_subnormal),
            float(fi.tiny), float(fi.max), -float(fi.max)]
    scale = 2.0 ** rng.integers(-140, 140, 24)
    with np.errstate(over="ignore", under="ignore"):
        return np.concatenate([np.array(edge).astype(dtype.numpy),
                               (rng.standard_normal(24) * scale).astype(dtype.numpy)])


def run(op, x, *, oracle=False, **attrs):
    b = GraphBuilder(op)
    out = b.op(op, b.input(TensorType(DType.from_numpy(x.dtype), x.shape)), **attrs)
    return evaluate(b.build([out]), [x], oracle=oracle)[0]


def assert_bits_equal(out, expected):
    """Equal dtype and bits, except that any NaN matches any NaN."""
    assert out.dtype == expected.dtype and out.shape == expected.shape
    if out.dtype.kind in "biu":
        np.testing.assert_array_equal(out, expected)
        return
    nan = np.isnan(expected.astype(np.float64))
    np.testing.assert_array_equal(np.isnan(out.astype(np.float64)), nan)
    unsigned = np.dtype(f"u{out.dtype.itemsize}")
    np.testing.assert_array_equal(out.view(unsigned)[~nan], expected.view(unsigned)[~nan])


PAIRS = [(s, d) for s in ALL for d in ALL]


@pytest.mark.parametrize("src, dst", PAIRS, ids=[f"{s.short}-{d.short}" for s, d in PAIRS])
def test_convert_every_pair(src, dst):
    x = source_values(src)
    out = run("convert", x, dtype=dst)
    expected = np.array([expected_convert(v, src, dst) for v in x.tolist()])
    with np.errstate(over="ignore"):
        expected = expected.astype(dst.numpy)  # exact: each value is already representable in dst
    assert_bits_equal(out, expected)


# src, dst, input, expected (hand-checked)
HAND = [
    (DType.float64, DType.bfloat16, [1 + 2**-8 + 2**-40, 1 + 2**-8, 1 + 3 * 2**-8], [1 + 2**-7, 1.0, 1 + 2**-6]),
    (DType.float64, DType.float16, [1 + 2**-11 + 2**-40, 1 + 2**-11, 65519.99, 65520.0], [1 + 2**-10, 1.0, 65504.0, INF]),
    (DType.float32, DType.float16, [2.0**-25, 2.0**-25 * 1.5, -(2.0**-26)], [0.0, 2.0**-24, -0.0]),  # subnormal ties
    (DType.float32, DType.bfloat16, [-0.0, 3.4e38, 1e-45], [-0.0, INF, 0.0]),
    (DType.int32, DType.bfloat16, [2**24 + 2**16 + 1, 2**24 + 2**16], [2**24 + 2**17, 2**24]),
    (DType.int64, DType.float32, [2**60 + 2**36 + 1, 2**63 - 1, 2**24 + 1], [2**60 + 2**37, 2**63, 2**24]),
    (DType.int64, DType.float64, [2**53 + 1, 2**53 + 3], [2**53, 2**53 + 4]),
    (DType.float32, DType.int32, [2.9, -2.9, -0.5, NAN, INF, -INF, 3e9, -3e9], [2, -2, 0, 0, 2**31 - 1, -(2**31),
                                                                               2**31 - 1, -(2**31)]),
    (DType.float64, DType.int64, [2.0**63, -(2.0**63), 9.2e18], [2**63 - 1, -(2**63), 9200000000000000000]),
    (DType.float16, DType.uint8, [-1.0, 255.9, 256.0, NAN], [0, 255, 255, 0]),
    (DType.float32, DType.uint32, [4294967040.0, -0.9, 1e20], [4294967040, 0, 2**32 - 1]),
    (DType.int32, DType.int8, [300, -129, 128], [44, 127, -128]),
    (DType.int8, DType.uint32, [-1], [2**32 - 1]),
    (DType.float32, DType.bool, [NAN, -0.0, 1e-45, -INF], [True, False, True, True]),
    (DType.bool, DType.float16, [True, False], [1.0, 0.0]),
    (DType.bool, DType.int64, [True, False], [1, 0]),
]


@pytest.mark.parametrize("src, dst, x, expected", HAND, ids=[f"{s.short}-{d.short}" for s, d, *_ in HAND])
def test_convert_hand_checked(src, dst, x, expected):
    out = run("convert", np.array(x).astype(src.numpy), dtype=dst)
    assert_bits_equal(out, np.array(expected).astype(dst.numpy))


def test_round_float_agrees_with_fractions_on_random_float64():
    rng = np.random.default_rng(3)
    x = rng.standard_normal(2000) * 2.0 ** rng.integers(-150, 130, 2000)
    for dtype in (DType.bfloat16, DType.float16, DType.float32):
        with np.errstate(over="ignore"):
            expected = np.array([nearest_even(v, dtype) for v in x.tolist()]).astype(dtype.numpy)
        assert_bits_equal(round_float(x, dtype), expected)


def test_convert_in_oracle_mode_does_not_round_floats():
    x = np.array([1 + 2**-8 + 2**-40, 2.9, NAN])
    out = run("convert", x, oracle=True, dtype=DType.bfloat16)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, x)
    np.testing.assert_array_equal(run("convert", x, oracle=True, dtype=DType.int8), [1, 2, 0])
    big = np.array([2**60 + 1], np.int64)
    assert run("convert", big, oracle=True, dtype=DType.float16)[0] == 2.0**60  # float64, never rounded to f16


@pytest.mark.parametrize("shape", [(0,), (2, 0), (1,), (1, 1), ()])
def test_convert_and_bitcast_shapes(shape):
    x = np.full(shape, -0.0, np.float32)
    converted = run("convert", x, dtype=DType.float16)
    assert converted.shape == shape and converted.dtype == np.float16 and np.all(np.signbit(converted))
    cast = run("bitcast_convert", x, dtype=DType.int32)
    assert cast.shape == shape and cast.dtype == np.int32 and np.all(cast == -(2**31))


# -- bitcast_convert ------------------------------------------------------------------------

WIDTH_PAIRS = [(s, d) for s in ALL for d in ALL if not s.is_bool and not d.is_bool and s.bits == d.bits]


def bit_patterns(dtype: DType) -> np.ndarray:
    """Values of ``dtype`` whose bits include -0.0, ±inf, NaNs with payloads and subnormals."""
    unsigned = np.dtype(f"u{dtype.bits // 8}")
    top = 1 << (dtype.bits - 1)
    patterns = [0, top, 1, top | 1, top - 1, (1 << dtype.bits) - 1]  # ±0, ±smallest, largest bits, all ones
    if dtype.is_float:
        quiet_nan = int(np.array([NAN]).astype(dtype.numpy).view(unsigned)[0])
        patterns += [quiet_nan, quiet_nan | 1, quiet_nan | top, int(np.array([INF]).astype(dtype.numpy).view(unsigned)[0])]
    rng = np.random.default_rng(dtype.bits)
    values = np.concatenate([np.array(patterns, unsigned), rng.integers(0, 1 << dtype.bits, 16, unsigned, endpoint=False)])
    return values.view(dtype.numpy)


@pytest.mark.parametrize("src, dst", WIDTH_PAIRS, ids=[f"{s.short}-{d.short}" for s, d in WIDTH_PAIRS])
def test_bitcast_keeps_every_bit(src, dst):
    x = bit_patterns(src)
    if src.is_float:
        # A signalling NaN operand may be quieted (implementation-defined); keep quiet ones only.
        unsigned = np.dtype(f"u{src.bits // 8}")
        quiet_bit = 1 << (FORMATS[src][0] - 2)
        x = x[~np.isnan(x.astype(np.float64)) | ((x.view(unsigned) & quiet_bit) != 0)]
    out = run("bitcast_convert", x, dtype=dst)
    assert out.dtype == dst.numpy
    unsigned = np.dtype(f"u{dst.bits // 8}")
    np.testing.assert_array_equal(out.view(unsigned), x.view(unsigned))


# src, value, dst, expected (hand-checked)
BITCAST = [
    (DType.float32, -0.0, DType.int32, -(2**31)),
    (DType.float32, -0.0, DType.uint32, 0x80000000),
    (DType.float32, 1.0, DType.int32, 0x3F800000),
    (DType.float32, NAN, DType.uint32, 0x7FC00000),
    (DType.float16, -0.0, DType.int16, -(2**15)),
    (DType.bfloat16, -0.0, DType.int16, -(2**15)),
    (DType.bfloat16, 1.0, DType.int16, 0x3F80),
    (DType.float16, 1.0, DType.int16, 0x3C00),
    (DType.float64, 1.0, DType.int64, 0x3FF0000000000000),
    (DType.int32, 0x7F800000, DType.float32, INF),
    (DType.uint8, 255, DType.int8, -1),
    (DType.int16, 0x0001, DType.float16, 2.0**-24),
]


@pytest.mark.parametrize("src, value, dst, expected", BITCAST, ids=[f"{c[0].short}-{c[2].short}" for c in BITCAST])
def test_bitcast_hand_checked(src, value, dst, expected):
    out = run("bitcast_convert", np.array([value]).astype(src.numpy), dtype=dst)
    assert out.dtype == dst.numpy and out.tolist() == [expected]


@pytest.mark.parametrize("dtype, unsigned", [(DType.float32, np.uint32), (DType.bfloat16, np.uint16)])
def test_bitcast_in_oracle_mode_rounds_to_the_declared_dtype_first(dtype, unsigned):
    # In oracle mode exp(x) stays float64; bitcast must see the bits of the dtype-rounded value.
    x = np.array([0.1, 1.0, 3.0, -20.0]).astype(dtype.numpy)
    b = GraphBuilder()
    v = b.input(TensorType(dtype, x.shape))
    g = b.build([b.bitcast_convert(b.exp(v), dtype=DType.int32 if dtype.bits == 32 else DType.int16)])
    rounded = np.array([nearest_even(math.exp(v), dtype) for v in x.astype(np.float64).tolist()]).astype(dtype.numpy)
    for oracle in (False, True):
        (out,) = evaluate(g, [x], oracle=oracle)
        np.testing.assert_array_equal(out.view(unsigned), rounded.view(unsigned))


# -- the table and its errors -----------------------------------------------------------------


def test_table_entries():
    convert, bitcast = OP_TABLE["convert"], OP_TABLE["bitcast_convert"]
    assert convert.accuracy is Accuracy.CORRECTLY_ROUNDED
    assert convert.groups == frozenset({Group.ELEMENTWISE, Group.NO_FUSED_ADD})
    assert bitcast.accuracy is Accuracy.EXACT
    assert bitcast.groups == frozenset({Group.ELEMENTWISE, Group.EXACT, Group.NO_FUSED_ADD})
    assert set(convert.dtypes) == set(DType) and DType.bool not in bitcast.dtypes
    assert any("NaN" in text for text in convert.implementation_defined)


# op, operand dtype, attribute dtype, the operand or attribute the error names, a fragment of the message
REJECTED = [
    ("bitcast_convert", DType.float32, DType.int16, "dtype", "operand has 32-bit f32 but i16 has 16 bits"),
    ("bitcast_convert", DType.float64, DType.float32, "dtype", "bit widths must be equal"),
    ("bitcast_convert", DType.bool, DType.int8, 0, "bool has no defined bit layout"),
    ("bitcast_convert", DType.uint8, DType.bool, "dtype", "bool has no defined bit layout"),
    ("convert", DType.float32, "f128", "dtype", "expected a value of kind dtype"),
]


@pytest.mark.parametrize("op, src, dst, where, message", REJECTED, ids=[f"{r[0]}-{r[1].short}" for r in REJECTED])
def test_type_rule_errors_name_op_and_operand(op, src, dst, where, message):
    b = GraphBuilder()
    label = f"operand {where}" if isinstance(where, int) else f"attribute {where!r}"
    with pytest.raises(TypeRuleError, match=rf"^{op} \({label}\): .*{re.escape(message)}") as info:
        b.op(op, b.input(TensorType(src, (2,))), dtype=dst)
    assert (info.value.op, info.value.operand) == (op, where)


def test_convert_requires_a_dtype():
    b = GraphBuilder()
    with pytest.raises(TypeRuleError, match=r"^convert \(attribute 'dtype'\): missing required attribute"):
        b.op("convert", b.input(TensorType(DType.float32, (2,))))


def test_fractions_reference_is_itself_right():
    # The reference rounding used above, on values whose answers are known by hand.
    assert nearest_even(1 + 2**-8, DType.bfloat16) == 1.0
    assert nearest_even(1 + 3 * 2**-8, DType.bfloat16) == 1 + 2**-6
    assert nearest_even(65520, DType.float16) == INF and nearest_even(65519, DType.float16) == 65504
    assert nearest_even(2.0**-150, DType.float32) == 0.0 and nearest_even(2.0**-150 * 1.5, DType.float32) == 2.0**-149
    assert math.copysign(1, nearest_even(-(2.0**-200), DType.bfloat16)) == -1
    assert ml_dtypes.finfo(ml_dtypes.bfloat16).max == nearest_even(3.3895e38, DType.bfloat16)
