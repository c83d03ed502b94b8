"""Activation composites (ir/ops/activations.py) against torch.nn.functional.

The expectation is torch's function evaluated in float64 on the same (exact) inputs and
rounded once to the dtype under test, so the test measures our error alone. Bounds
(ULPs of the result) follow from the decomposition: the interpreter rounds every
primitive once (0.5 ULP each; float64's transcendental references are within 1 ULP),
and errors propagate through well-conditioned steps. float16/bfloat16 are computed in
float32 and rounded once, so they are within 1 ULP.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from parity.ir import OP_TABLE, TypeRuleError
from parity.ir.dtypes import FLOAT_DTYPES, DType, bf16, f16, f32, f64
from parity.ir.opdef import Group, Kind

sys.path.insert(0, str(Path(__file__).parent))
from torch_reference import assert_ulp, decomposition, non_primitives, run_ir, torch_truth  # noqa: E402

ACTIVATIONS = ("relu", "leaky_relu", "elu", "selu", "gelu", "silu", "mish", "softplus",
               "hardtanh", "hardsigmoid", "hardswish")

# (op, attrs, torch function, ULP bound in f32, transcendentals in the formula, slack)
# f32: 0.5 ULP per rounded primitive (and per constant not exact in the dtype), through
# steps of condition <= 1. f64 (see bound64) adds 0.5 ULP per transcendental — NumPy's
# float64 functions, our references, are within 1 ULP, not 0.5 — and 1 ULP for torch's
# own float64 result, which is the expectation there and is not correctly rounded.
# slack "cancel": the bound is in ULPs of max(|result|, |x|) — gelu's 1 + erf (or 1 + tanh)
# cancels for x << 0, so its error is absolute, about |x| * eps.
# slack "underflow": x * f(x) where f(x) (logistic, tanh of softplus) is subnormal for
# x << 0 and so carries an absolute error up to half the smallest subnormal, times |x|
# (torch's own float32 kernels show the same error).
CASES = [
    ("relu", {}, F.relu, 0, 0, None),
    ("leaky_relu", {}, F.leaky_relu, 1, 0, None),  # slope rounded, then the product
    ("leaky_relu", {"negative_slope": 0.2}, lambda t: F.leaky_relu(t, 0.2), 1, 0, None),
    ("elu", {}, F.elu, 1, 1, None),  # expm1, product
    ("elu", {"alpha": 0.7}, lambda t: F.elu(t, 0.7), 1.5, 1, None),  # + alpha rounded
    ("selu", {}, F.selu, 2, 1, None),  # expm1, constant, product
    ("gelu", {}, F.gelu, 2, 1, "cancel"),
    ("gelu", {"approximate": "tanh"}, lambda t: F.gelu(t, approximate="tanh"), 3, 1, "cancel"),
    ("silu", {}, F.silu, 1, 1, "underflow"),  # logistic, product
    ("mish", {}, F.mish, 3, 3, "underflow"),  # exp, log1p, tanh (each condition <= 1), product
    ("softplus", {}, F.softplus, 2, 2, None),
    ("softplus", {"beta": 2.0, "threshold": 10.0}, lambda t: F.softplus(t, 2.0, 10.0), 3, 2, None),
    ("hardtanh", {}, F.hardtanh, 0, 0, None),
    ("hardtanh", {"min_val": -2.5, "max_val": 0.5}, lambda t: F.hardtanh(t, -2.5, 0.5), 0, 0, None),
    ("hardsigmoid", {}, F.hardsigmoid, 1, 0, None),  # x + 3, / 6
    # x + 3, / 6, * x. torch's (x * relu6) / 6 overflows at the dtype's max even in
    # float64, so there the truth is x * hardsigmoid(x) (the same function).
    ("hardswish", {}, lambda t: torch.where(t.abs() < 1e300, F.hardswish(t), t * F.hardsigmoid(t)), 2, 0, None),
]


def inputs(dtype: DType) -> np.ndarray:
    """A sweep over [-12, 12], random values, the special values and each op's corners."""
    rng = np.random.default_rng(0)
    tiny = float(dtype.finfo.smallest_subnormal)
    big = float(dtype.finfo.max)
    specials = [np.nan, np.inf, -np.inf, 0.0, -0.0, tiny, -tiny, big, -big, 1e4, -1e4, 100.0, -100.0,
                -3.0, 3.0, 20.0, -20.0, 19.75, 20.25, 10.0, 5.0, -5.0, 0.5, -0.5, 1e-3, -1e-3]
    values = np.concatenate([np.linspace(-12, 12, 193), rng.standard_normal(200) * 4, specials])
    with np.errstate(over="ignore"):
        return values.astype(dtype.numpy)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.short)
def slack(kind, x: np.ndarray, compute: DType) -> dict:
    """assert_ulp's scale/atol for a case's slack kind (see CASES)."""
    if kind == "cancel":
        return {"scale": x}
    if kind == "underflow":
        return {"atol": np.abs(x.astype(np.float64)) * float(compute.finfo.smallest_subnormal)}
    return {}


def bound64(bound32: float, transcendentals: int) -> float:
    return bound32 + 0.5 * transcendentals + (1 if transcendentals else 0)


CASE_IDS = [f"{c[0]}-{'-'.join(map(str, c[1].values())) or 'default'}" for c in CASES]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.short)
@pytest.mark.parametrize("op, attrs, fn, bound32, transcendentals, kind", CASES, ids=CASE_IDS)
def test_matches_torch(op, attrs, fn, bound32, transcendentals, kind, dtype):
    x = inputs(dtype)
    actual = run_ir(op, [x], **attrs)
    assert actual.dtype == dtype.numpy
    # float16/bfloat16: computed in float32 and rounded once (exact ops stay exact).
    bound = {f32: bound32, f64: bound64(bound32, transcendentals)}.get(dtype, 1 if bound32 else 0)
    compute = f32 if dtype in (f16, bf16) else dtype
    assert_ulp(actual, torch_truth(fn, [x], dtype), bound, **slack(kind, x, compute),
               what=f"{op}{attrs} {dtype.short}")


# Cases whose constants are exact in float32 (0.01, sqrt(1/2), the SELU constants are
# not: the graph holds them rounded to x's dtype, in oracle mode too).
EXACT_CONSTANTS = [c for c in CASES if c[0] in ("relu", "silu", "mish", "softplus", "hardtanh", "hardsigmoid",
                                                 "hardswish") or c[:2] == ("elu", {})]


@pytest.mark.parametrize("op, attrs, fn, bound32, transcendentals, kind", EXACT_CONSTANTS,
                         ids=[f"{c[0]}-{'-'.join(map(str, c[1].values())) or 'default'}" for c in EXACT_CONSTANTS])
def test_oracle_mode_is_float64(op, attrs, fn, bound32, transcendentals, kind):
    """In oracle mode the whole decomposition runs in float64, even for float32 inputs."""
    x = inputs(f32)
    actual = run_ir(op, [x], oracle=True, **attrs)
    assert actual.dtype == np.float64
    assert_ulp(actual, torch_truth(fn, [x], f64), bound64(bound32, transcendentals), **slack(kind, x, f64),
               what=op)


def test_edge_values_exactly():
    """Hand-checked values at the edges PyTorch defines (float32)."""
    x = np.array([-0.0, np.nan, -np.inf, np.inf, 30.0, -200.0], np.float32)
    relu = run_ir("relu", [x])
    assert np.signbit(relu[0]) and relu[0] == 0  # relu(-0.0) = -0.0 (clamp_min)
    assert np.isnan(relu[1]) and relu[2] == 0 and relu[3] == np.inf
    gelu = run_ir("gelu", [x])
    assert np.isnan(gelu[2]) and gelu[3] == np.inf  # -inf * 0 = nan; +inf stays (torch's float64)
    assert gelu[5] == 0 and np.signbit(gelu[5])
    softplus = run_ir("softplus", [x])
    assert softplus[4] == np.float32(30.0)  # above the threshold: x itself
    assert softplus[2] == 0 and softplus[3] == np.inf
    assert np.isnan(run_ir("hardswish", [x])[2])  # -inf * 0
    assert run_ir("silu", [x])[5] == np.float32(-200.0) * np.float32(1 / (1 + math.exp(200.0)))
    np.testing.assert_array_equal(run_ir("hardtanh", [x], min_val=-2.0, max_val=3.0),
                                  np.array([-0.0, np.nan, -2.0, 3.0, 3.0, -2.0], np.float32))
    np.testing.assert_array_equal(run_ir("hardsigmoid", [np.array([-3, 0, 3, -10, 10], np.float32)]),
                                  np.array([0, 0.5, 1, 0, 1], np.float32))


def test_softplus_threshold_switch():
    """beta * x > threshold returns x exactly; at or below it, log1p(exp(beta x)) / beta."""
    x = np.array([9.5, 10.0, 10.5], np.float64)
    out = run_ir("softplus", [x], beta=2.0, threshold=20.0)
    assert out[2] == 10.5
    np.testing.assert_allclose(out[:2], np.log1p(np.exp(2 * x[:2])) / 2, rtol=1e-15)


def test_empty_and_size_one():
    for shape in [(0,), (3, 0), (1, 1)]:
        x = np.full(shape, -1.5, np.float32)
        out = run_ir("elu", [x])
        assert out.shape == shape
        np.testing.assert_array_equal(out, np.full(shape, np.float32(math.expm1(-1.5)), np.float32))


@pytest.mark.parametrize("op", ACTIVATIONS)
def test_table_entry_and_primitive_only_decomposition(op):
    opdef = OP_TABLE[op]
    assert opdef.kind is Kind.COMPOSITE and opdef.groups == {Group.ELEMENTWISE, Group.ACTIVATION}
    assert opdef.dtypes == FLOAT_DTYPES
    for dtype in (f32, bf16):
        graph = decomposition(op, [dtype[4, 3]])
        assert non_primitives(graph) == set()
        assert graph.output_types == [dtype[4, 3]]


def test_narrow_floats_compute_in_float32():
    graph = decomposition("silu", [f16[5]])
    assert graph.op_counts()["convert"] == 2  # f16 -> f32 on the way in, f32 -> f16 once at the end
    assert "convert" not in decomposition("relu", [f16[5]]).op_counts()  # exact: no widening


@pytest.mark.parametrize("op", ACTIVATIONS)
def test_rejects_integers(op):
    with pytest.raises(TypeRuleError, match=f"^{op} \\(operand 0\\): dtype i32"):
        run_ir(op, [np.zeros(3, np.int32)])


def test_attribute_errors():
    with pytest.raises(TypeRuleError, match="hardtanh .*min_val.*exceeds max_val"):
        run_ir("hardtanh", [np.zeros(2, np.float32)], min_val=1.0, max_val=-1.0)
    with pytest.raises(TypeRuleError, match="gelu .*approximate.*one of"):
        run_ir("gelu", [np.zeros(2, np.float32)], approximate="erf")
