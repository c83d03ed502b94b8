"""ULP distance (normal, subnormal, overflow, inf/NaN), exactness, bounds and the
accumulation bound, with hand-checked numbers."""

import numpy as np
import pytest

from parity.conformance.bounds import ACCUMULATION, EXACT, bound_for, class_bound, compute_eps
from parity.conformance.case import Case
from parity.conformance.compare import measure
from parity.conformance.metrics import abs_error, exact_mismatch, rel_error, ulp, ulp_error
from parity.ir import evaluate
from parity.ir.dtypes import DType
from parity.ir.opdef import Accuracy

f16, bf16, f32, f64, i32 = DType.float16, DType.bfloat16, DType.float32, DType.float64, DType.int32


@pytest.mark.parametrize("dtype, value, expected", [
    (f32, 1.0, 2.0**-23), (f32, 1.5, 2.0**-23), (f32, 2.0, 2.0**-22), (f32, 0.75, 2.0**-24),
    (f32, 0.0, 2.0**-149), (f32, 1e-45, 2.0**-149), (f32, 2.0**-126, 2.0**-149),  # subnormal spacing down to 0
    (f32, 3.4e38, 2.0**104), (f32, 1e300, 2.0**104), (f32, np.inf, 2.0**104),  # the top binade above max
    (f16, 1.0, 2.0**-10), (f16, 6e-8, 2.0**-24), (f16, 65504.0, 32.0),
    (bf16, 1.0, 2.0**-7), (bf16, 0.0, 2.0**-133), (f64, 1.0, 2.0**-52), (f64, 0.0, 5e-324),
])
def test_ulp_spacing(dtype, value, expected):
    assert float(ulp(dtype, np.array(value))) == expected


def test_ulp_error_counts_spacings_and_handles_signs():
    assert float(ulp_error(f32, np.array(1.0), np.array(np.float32(1.0) + np.float32(2**-23) * 3))) == 3.0
    assert float(ulp_error(f32, np.array(-2.0), np.array(-2.0 - 2**-22))) == 1.0
    # Half-way between two floats (the oracle is float64): half a ULP.
    assert float(ulp_error(f32, np.array(1.0 + 2**-24), np.array(1.0))) == 0.5


def test_ulp_error_in_the_subnormal_range():
    tiny_sub = 2.0**-149
    # Flushing a subnormal result to zero costs as many ULPs as it had steps.
    assert float(ulp_error(f32, np.array(5 * tiny_sub), np.array(0.0))) == 5.0
    assert float(ulp_error(f32, np.array(2.0**-126), np.array(0.0))) == 2.0**23
    assert float(ulp_error(f16, np.array(3 * 2.0**-24), np.array(2 * 2.0**-24))) == 1.0
    assert float(ulp_error(f32, np.array(0.0), np.array(-0.0))) == 0.0


def test_inf_and_nan_matching():
    big = float(np.finfo(np.float32).max)
    # An oracle past the range that rounds to inf: a backend inf is exact.
    assert float(abs_error(f32, np.array(2 * big), np.array(np.float32(np.inf)))) == 0.0
    # A finite oracle that rounds to max: inf is one ULP past max, minus the distance to the oracle.
    assert float(ulp_error(f32, np.array(big), np.array(np.float32(np.inf)))) == 1.0
    assert float(abs_error(f32, np.array(np.inf), np.array(np.float32(np.inf)))) == 0.0
    assert float(abs_error(f32, np.array(np.inf), np.array(np.float32(-np.inf)))) == np.inf
    assert float(abs_error(f32, np.array(np.inf), np.array(np.float32(big)))) == np.inf
    assert float(abs_error(f32, np.array(np.nan), np.array(np.float32(np.nan)))) == 0.0
    assert float(abs_error(f32, np.array(np.nan), np.array(np.float32(1.0)))) == np.inf
    assert float(abs_error(f32, np.array(1.0), np.array(np.float32(np.nan)))) == np.inf


def test_relative_error():
    assert rel_error(np.array([2.0, 0.0, 0.0, np.nan]), np.array([2.5, 0.0, 1.0, np.nan])).tolist() == [0.25, 0.0,
                                                                                                     np.inf, 0.0]


def test_exact_mismatch_nan_payloads_and_zero_sign():
    o = np.array([np.nan, 0.0, -0.0, 1.0])
    weird_nan = np.array([0x7FC00001], np.uint32).view(np.float32)[0]
    a = np.array([weird_nan, -0.0, -0.0, 1.0], np.float32)
    assert exact_mismatch(f32, o, a, zero_sign=True).tolist() == [False, True, False, False]
    assert exact_mismatch(f32, o, a, zero_sign=False).tolist() == [False, False, False, False]
    assert exact_mismatch(i32, np.array([1, -5]), np.array([1, -4], np.int32), zero_sign=True).tolist() == [False, True]


def test_class_bounds_follow_the_contract():
    assert class_bound(Accuracy.CORRECTLY_ROUNDED, f16).c0 == 1
    assert class_bound(Accuracy.TRANSCENDENTAL, f32).c0 == 4
    assert class_bound(Accuracy.TRANSCENDENTAL, f64).c0 == 4
    assert class_bound(Accuracy.TRANSCENDENTAL, bf16).c0 == 1
    assert bound_for("reduce_sum", {"axes": (0,)}, f32) is ACCUMULATION
    assert bound_for("reduce_sum", {"axes": (0,)}, i32) is EXACT  # every int output is exact
    assert bound_for("reduce_window", {"kind": "max"}, f32).kind == "exact"
    assert bound_for("scatter", {"reduce": "replace", "axis": 0}, f32).kind == "exact"
    assert bound_for("max", {}, f32).zero_sign is False  # implementation-defined sign of zero
    assert bound_for("floor", {}, f32).zero_sign is True
    assert compute_eps("softmax", f16) == (float(np.finfo(np.float32).eps), 2.0**-149, True)
    assert compute_eps("softmax", f32)[2] is False


def _sum_case(x: np.ndarray) -> Case:
    return Case("reduce_sum", DType.from_numpy(x.dtype), lambda rng: (x,), {"axes": (0,)}, "t")


def _measure_sum(x: np.ndarray, result: float):
    case = _sum_case(x)
    arrays = case.arrays()
    graph = case.graph(arrays)
    oracle = evaluate(graph, arrays, oracle=True)
    return measure(case, graph, arrays, oracle, [np.array(result, x.dtype)])


def test_accumulation_bound_is_n_eps_sum_of_magnitudes():
    # n = 4 terms, Σ|terms| = 4, oracle 0: allowed |error| = 4 * 2**-23 * 4 + 4 * 2**-149.
    x = np.array([1.0, -1.0, 1.0, -1.0], np.float32)
    allowed = 4 * 2.0**-23 * 4 + 4 * 2.0**-149
    inside = _measure_sum(x, np.float32(2.0**-20))  # 2**-20 < allowed = 2**-19 (+ tiny)
    outside = _measure_sum(x, np.float32(2.0**-18))
    assert inside.passed and inside.max_ratio == pytest.approx(2.0**-20 / allowed)
    assert not outside.passed and outside.mismatches == 1
    assert outside.worst["expected"] == 0.0 and outside.worst["got"] == 2.0**-18


def test_accumulation_scale_is_the_magnitudes_not_the_result():
    # A cancelling sum (result 1) may be off by far more ULPs of the result than a plain one.
    x = np.array([1e6, 1.0, -1e6], np.float32)
    assert _measure_sum(x, np.float32(1.0 + 0.25)).passed  # 0.25 <= 3 * eps * 2e6 ~ 0.72
    assert not _measure_sum(np.array([1.0, 0.0, 0.0], np.float32), np.float32(1.0 + 0.25)).passed


def test_transcendental_bound_in_ulps():
    x = np.array([0.5], np.float32)
    case = Case("exp", f32, lambda rng: (x,), name="t")
    arrays = case.arrays()
    graph = case.graph(arrays)
    oracle = evaluate(graph, arrays, oracle=True)
    exact = oracle[0].astype(np.float32)
    four_off = np.nextafter(np.nextafter(np.nextafter(np.nextafter(exact, np.inf), np.inf), np.inf), np.inf)
    assert measure(case, graph, arrays, oracle, [four_off]).passed  # <= 4.5 ulp from the float64 oracle
    five_off = np.nextafter(np.nextafter(four_off, np.inf), np.inf)
    m = measure(case, graph, arrays, oracle, [five_off])
    assert not m.passed and 5 < m.max_ulp < 6.5


def test_wrong_dtype_or_shape_is_a_failure_with_message():
    case = Case("neg", f32, lambda rng: (np.zeros(2, np.float32),), name="t")
    arrays = case.arrays()
    graph = case.graph(arrays)
    oracle = evaluate(graph, arrays, oracle=True)
    m = measure(case, graph, arrays, oracle, [np.zeros(2, np.float64)])
    assert not m.passed and "expected float32[2]" in m.message
    assert not measure(case, graph, arrays, oracle, [np.zeros(3, np.float32)]).passed


def test_masked_elements_are_not_compared():
    x, y = np.array([7, 7], np.int32), np.array([0, 2], np.int32)  # 7 / 0 is implementation-defined
    case = Case("div", i32, lambda rng: (x, y), name="t", mask=lambda a: [a[1] != 0])
    arrays = case.arrays()
    graph = case.graph(arrays)
    oracle = evaluate(graph, arrays, oracle=True)
    assert measure(case, graph, arrays, oracle, [np.array([12345, 3], np.int32)]).passed
    assert not measure(case, graph, arrays, oracle, [np.array([-1, 4], np.int32)]).passed


def test_a_local_bound_case_is_measured_node_by_node_and_never_against_a_whole_graph_oracle():
    from parity.conformance.bounds import LOCAL
    from parity.conformance.local import measure_case

    x = np.array([0.0, 1.0, 2.0], np.float32)
    case = Case("exp", f32, lambda rng: (x,), {}, "local", bound=LOCAL)
    arrays = case.arrays()
    graph = case.graph(arrays)
    with pytest.raises(ValueError, match="LOCAL bound: it is measured node by node"):
        measure(case, graph, arrays, evaluate(graph, arrays, oracle=True), evaluate(graph, arrays))
    assert measure_case(case, graph, arrays, [], evaluate(graph, arrays)).passed  # no oracle needed
    wrong = [evaluate(graph, arrays)[0] * np.float32(1.001)]
    measured = measure_case(case, graph, arrays, [], wrong)
    assert not measured.passed and [n["op"] for n in measured.worst["nodes"]] == ["exp"]
