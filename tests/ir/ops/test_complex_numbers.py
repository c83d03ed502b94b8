"""Complex numbers in the IR (ir/ops/complex_numbers.py and the ops that take complex
operands): the reference against NumPy's complex128, rounding once per part, type rules,
and the text format's complex constants."""

from __future__ import annotations

import numpy as np
import pytest

from parity.ir import GraphBuilder, ParseError, TypeRuleError, c64, c128, evaluate, f32, f64, i32, parse
from parity.ir.dtypes import DType

INF, NAN = float("inf"), float("nan")


def parts(re, im, dtype=np.complex64):
    out = np.empty(len(re), dtype)
    out.real, out.imag = re, im
    return out


def same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def test_complex_keeps_nan_inf_and_signed_zero_parts():
    b = GraphBuilder()
    re, im = b.input(f32[4]), b.input(f32[4])
    g = b.build([b.complex(re, im)])
    x = np.array([INF, -0.0, NAN, 1.5], np.float32)
    y = np.array([NAN, -0.0, -INF, 2.0], np.float32)
    (z,) = evaluate(g, [x, y])
    assert z.dtype == np.complex64 and same_bits(z.real.copy(), x) and same_bits(z.imag.copy(), y)


def test_parts_conj_abs_and_angle_of_c128():
    b = GraphBuilder()
    z = b.input(c128[4])
    g = b.build([b.real(z), b.imag(b.conj(z)), b.complex_abs(z), b.angle(z)])
    x = parts([3.0, -1.0, 1e300, INF], [4.0, -0.0, 1e300, NAN], np.complex128)
    real, neg_imag, mag, angle = evaluate(g, [x])
    assert real.tolist()[:3] == [3.0, -1.0, 1e300]
    assert np.signbit(neg_imag[1]) == 0 and neg_imag[0] == -4.0  # conj(-1 - 0i) = -1 + 0i
    assert mag[0] == 5.0 and mag[2] == np.hypot(1e300, 1e300) and mag[3] == INF  # no overflow; inf beats NaN
    assert angle[1] == -np.pi and angle.dtype == np.float64


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_c64_arithmetic_is_complex128_rounded_once_per_part(op):
    rng = np.random.default_rng(0)
    x = parts(rng.standard_normal(64), rng.standard_normal(64))
    y = parts(rng.standard_normal(64), rng.standard_normal(64))
    b = GraphBuilder()
    xi, yi = b.input(c64[64]), b.input(c64[64])
    (got,) = evaluate(b.build([b.op(op, xi, yi)]), [x, y])
    wide = getattr(np, {"add": "add", "sub": "subtract", "mul": "multiply", "div": "divide"}[op])(
        x.astype(np.complex128), y.astype(np.complex128))
    assert same_bits(got, wide.astype(np.complex64))
    (oracle,) = evaluate(b.build([b.op(op, xi, yi)]), [x, y], oracle=True)
    assert oracle.dtype == np.complex128 and np.array_equal(oracle, wide)


def test_mul_differs_from_numpys_complex64_product_where_rounding_once_matters():
    # NumPy's c64 product rounds ac and bd before subtracting; the IR rounds the exact result once.
    x = parts([1 + 2**-12], [1 - 2**-12])
    b = GraphBuilder()
    xi = b.input(c64[1])
    (got,) = evaluate(b.build([b.mul(xi, xi)]), [x])
    exact = x.astype(np.complex128) ** 2
    assert got[0].real == np.float32(exact[0].real) and got[0].real != 0.0


def test_convert_real_to_complex_and_between_complex_rounds_each_part_once():
    b = GraphBuilder()
    x, z = b.input(i32[2]), b.input(c128[1])
    g = b.build([b.convert(x, dtype=c64), b.convert(z, dtype=c64)])
    big = 2**24 + 1  # not a float32: rounds to even
    part = 1 + 2**-24 + 2**-40  # just above the float32 tie: rounds up
    small, narrowed = evaluate(g, [np.array([big, -3], np.int32), parts([part], [-part], np.complex128)])
    assert small.tolist() == [complex(2**24, 0), complex(-3, 0)] and not np.signbit(small.imag).any()
    assert narrowed[0] == complex(1 + 2**-23, -(1 + 2**-23))


def test_complex_to_real_convert_is_refused_with_what_to_do():
    b = GraphBuilder()
    z = b.input(c64[2])
    with pytest.raises(TypeRuleError, match="would drop the imaginary part; take the real op"):
        b.convert(z, dtype=f32)


@pytest.mark.parametrize("op, operands, message", [
    ("complex", (f32[2], f64[2]), "insert a convert"),
    ("complex", (DType.float16[2], DType.float16[2]), "dtype f16 is not accepted"),
    ("real", (f32[2],), "dtype f32 is not accepted"),
    ("max", (c64[2], c64[2]), "dtype c64 is not accepted"),  # complex numbers have no order
    ("abs", (c64[2],), "dtype c64 is not accepted"),  # complex_abs is |z|
])
def test_type_rules_name_the_complex_dtype(op, operands, message):
    b = GraphBuilder()
    with pytest.raises(TypeRuleError, match=message):
        b.op(op, *(b.input(t) for t in operands))


def test_reduce_sum_and_dot_general_accumulate_complex_products():
    rng = np.random.default_rng(1)
    a = parts(rng.standard_normal(6), rng.standard_normal(6)).reshape(2, 3)
    w = parts(rng.standard_normal(3), rng.standard_normal(3))
    b = GraphBuilder()
    ai, wi = b.input(c64[2, 3]), b.input(c64[3])
    dot = b.dot_general(ai, wi, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,), lhs_batch_dims=(),
                        rhs_batch_dims=())
    total, product = evaluate(b.build([b.reduce_sum(ai, axes=(0, 1)), dot]), [a, w], oracle=True)
    assert total == a.astype(np.complex128).sum() and np.allclose(product, a.astype(np.complex128) @ w, rtol=1e-15)


def test_complex_constants_round_trip_in_both_text_forms():
    odd_nan = np.array([complex(1, 0)], np.complex64)
    odd_nan.view(np.uint32)[1] = 0xFFC00001  # a negative NaN with a payload: only hex keeps it
    values = np.array([complex(1.5, -0.0), complex(INF, NAN), complex(-INF, 2**-149)], np.complex64)
    for array, form in ((values, "[(1.5, -0.0), (inf, nan), (-inf, 1.401298464324817e-45)]"), (odd_nan, "0x")):
        b = GraphBuilder()
        g = b.build([b.constant(array)])
        text = str(g)
        assert form in text
        again = parse(text)
        assert again == g and same_bits(again.nodes[0].attrs["value"], array)


def test_a_complex_element_that_is_not_a_pair_or_not_exact_is_a_parse_error():
    head = "graph @m() -> (c64[1]) {\n  %0: c64[1] = constant() {value=dense<c64[1] [ELEMENT]>}\n  return %0\n}"
    with pytest.raises(ParseError, match=r"a pair like \(1.5, -2.0\)"):
        parse(head.replace("ELEMENT", "1.0"))
    with pytest.raises(ParseError, match="not exactly representable in f32"):
        parse(head.replace("ELEMENT", "(0.1, 0.0)"))
