"""Statistics composites (ir/ops/statistics.py) against torch, in ULPs of the result.

Expectations are torch evaluated in float64 on the exact inputs and rounded once.
Bounds are those of the decomposition (0.5 ULP per rounded primitive), propagated:
``exp(x - max)`` inherits the rounding of ``x - max`` amplified by ``|x - max|``, so
softmax-like bounds grow with it (see :func:`softmax_terms`). float64 results are
compared with torch's own float64, which runs the same algorithm with the same kind of
error, so there the bound is doubled (plus 1 ULP: NumPy's float64 exp/log are within
1 ULP, not 0.5). float16/bfloat16 are computed in float32 and rounded once: 1 ULP.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from parity.ir import OP_TABLE, GraphBuilder, Symbol, TypeRuleError, evaluate
from parity.ir.dtypes import FLOAT_DTYPES, DType, f16, f32, f64
from parity.ir.opdef import Accuracy, Group, Kind

sys.path.insert(0, str(Path(__file__).parent))
from torch_reference import assert_ulp, decomposition, non_primitives, run_ir, torch_truth  # noqa: E402

STATISTICS = ("softmax", "log_softmax", "logsumexp", "mean", "var", "std")
INF, NAN = np.inf, np.nan


def sample(dtype: DType, shape, *, spread: float = 4.0, offset: float = 0.0, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * spread + offset).astype(dtype.numpy)


def softmax_terms(x: np.ndarray, axes: tuple[int, ...]):
    """|x - max| per element and S, the relative error of sum(exp(x - max)) in ULPs:
    the exp(x - max) terms each carry 0.5 + |x - max| ULPs, weighted by their size."""
    x = x.astype(np.float64)
    d = np.abs(x - x.max(axis=axes, keepdims=True))
    e = np.exp(-d)
    return d, (e * (d + 0.5)).sum(axis=axes, keepdims=True) / e.sum(axis=axes, keepdims=True)


def scaled(bound, dtype: DType):
    """A float32-derived bound for ``dtype`` (see the module docstring)."""
    return bound if dtype is f32 else 2 * bound + 1 if dtype is f64 else 1


SHAPES_AXES = [((5, 7), 1), ((5, 7), 0), ((2, 3, 9), 1), ((1, 4), 1), ((6, 1), 1)]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.short)
@pytest.mark.parametrize("shape, axis", SHAPES_AXES)
def test_softmax_and_log_softmax(shape, axis, dtype):
    x = sample(dtype, shape)
    d, s = softmax_terms(x, (axis,))
    # softmax: exp (0.5 + |d|), the sum (S + 0.5), the division (0.5).
    assert_ulp(run_ir("softmax", [x], axis=axis), torch_truth(lambda t: F.softmax(t, axis), [x], dtype),
               scaled(1.5 + d + s, dtype), what=f"softmax {dtype.short}")
    # log_softmax: d - log(sum) has no cancellation (d <= 0 <= log(sum)); d, log and the
    # subtraction round, and the sum's relative error S becomes an absolute error of
    # log(sum) — large against a result near 0 (one dominant term): ULPs of max(|y|, 1).
    assert_ulp(run_ir("log_softmax", [x], axis=axis), torch_truth(lambda t: F.log_softmax(t, axis), [x], dtype),
               scaled(2 + s, dtype), scale=1.0, what=f"log_softmax {dtype.short}")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.short)
@pytest.mark.parametrize("shape, axes", [((5, 7), (1,)), ((5, 7), (0, 1)), ((2, 3, 9), (0, 2)), ((1, 3), (0,))])
def test_logsumexp(shape, axes, dtype):
    x = sample(dtype, shape, offset=-3.0)
    x64 = x.astype(np.float64)
    m = x64.max(axis=axes, keepdims=True)
    log_sum = np.log(np.exp(x64 - m).sum(axis=axes, keepdims=True))
    _, s = softmax_terms(x, axes)
    # log(sum) + m may cancel (m < 0 < log sum): the error is absolute, in ULPs of |m| + log(sum).
    reduced = [d for i, d in enumerate(shape) if i not in axes]
    assert_ulp(run_ir("logsumexp", [x], axes=axes), torch_truth(lambda t: torch.logsumexp(t, axes), [x], dtype),
               scaled(1.5 + s.reshape(reduced), dtype), scale=(np.abs(m) + log_sum).reshape(reduced),
               what=f"logsumexp {dtype.short}")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.short)
@pytest.mark.parametrize("shape, axes", [((5, 7), (1,)), ((5, 7), (0,)), ((2, 3, 9), (0, 2)), ((3, 1), (1,)),
                                         ((4, 3), (0, 1))])
@pytest.mark.filterwarnings("ignore:.*degrees of freedom:UserWarning")  # (3, 1) over axis 1: n = 1 on purpose
def test_mean_var_std(shape, axes, dtype):
    x = sample(dtype, shape, spread=3.0, offset=10.0)
    # mean: the sum (rounded once by the interpreter) and the division.
    assert_ulp(run_ir("mean", [x], axes=axes), torch_truth(lambda t: torch.mean(t, axes), [x], dtype),
               scaled(1, dtype), what=f"mean {dtype.short}")
    for correction in (0, 1):
        # var: x - mean (its square doubles it), the square, the sum, the division;
        # the mean's own error enters only to second order.
        assert_ulp(run_ir("var", [x], axes=axes, correction=correction),
                   torch_truth(lambda t: torch.var(t, axes, correction=correction), [x], dtype),
                   scaled(2.5, dtype), what=f"var {dtype.short}")
        # std: half of var's relative error, plus sqrt's rounding.
        assert_ulp(run_ir("std", [x], axes=axes, correction=correction),
                   torch_truth(lambda t: torch.std(t, axes, correction=correction), [x], dtype),
                   scaled(2, dtype), what=f"std {dtype.short}")


def test_softmax_is_stable_for_large_magnitudes():
    x = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1001.0, -1002.0], [3e38, 3e38, -3e38]], np.float32)
    expected = np.array([0.09003057, 0.24472847, 0.66524096], np.float64)
    out = run_ir("softmax", [x], axis=1)
    assert_ulp(out[0], expected.astype(np.float32), 1)
    assert_ulp(out[1], expected[::-1].astype(np.float32), 1)
    np.testing.assert_array_equal(out[2], np.array([0.5, 0.5, 0.0], np.float32))
    np.testing.assert_array_equal(run_ir("logsumexp", [x], axes=(1,))[2], np.float32(3e38) + np.float32(np.log(2)))


def test_non_finite_rows_follow_torch():
    """All -inf: softmax/log_softmax NaN, logsumexp -inf. +inf: NaN rows, logsumexp +inf. NaN: NaN."""
    x = np.array([[-INF, -INF, -INF], [1.0, INF, 2.0], [1.0, NAN, 2.0], [-INF, 0.0, 1.0], [INF, INF, 0.0]],
                 np.float32)
    for op, fn, attrs in [("softmax", lambda t: F.softmax(t, 1), {"axis": 1}),
                          ("log_softmax", lambda t: F.log_softmax(t, 1), {"axis": 1}),
                          ("logsumexp", lambda t: torch.logsumexp(t, 1), {"axes": (1,)})]:
        actual = run_ir(op, [x], **attrs)
        expected = fn(torch.from_numpy(x)).numpy()
        np.testing.assert_array_equal(np.isnan(actual), np.isnan(expected), err_msg=op)
        assert_ulp(actual, expected, 1, what=op)
    np.testing.assert_array_equal(run_ir("logsumexp", [x], axes=(1,))[:2], np.array([-INF, INF], np.float32))


def test_logsumexp_over_no_axes_is_the_identity():
    x = np.array([[1.5, -INF, INF], [NAN, -0.0, 3e38]], np.float32)
    np.testing.assert_array_equal(run_ir("logsumexp", [x], axes=()), x)


def test_empty_reductions():
    empty = np.zeros((3, 0), np.float32)
    np.testing.assert_array_equal(run_ir("logsumexp", [empty], axes=(1,)), np.full(3, -INF, np.float32))
    assert np.isnan(run_ir("mean", [empty], axes=(1,))).all()
    assert np.isnan(run_ir("var", [empty], axes=(1,))).all()
    assert run_ir("softmax", [empty], axis=1).shape == (3, 0)
    assert run_ir("mean", [empty], axes=(0,)).shape == (0,)


def test_var_degrees_of_freedom():
    """n - correction <= 0 divides by 0, as torch does: inf, or NaN for 0 / 0."""
    one = np.array([[4.0]], np.float32)
    assert np.isnan(run_ir("var", [one], axes=(1,)))[0]  # 0 / 0
    assert run_ir("var", [one], axes=(1,), correction=0)[0] == 0
    two = np.array([1.0, 3.0], np.float64)
    assert run_ir("var", [two], axes=(0,), correction=2) == np.inf  # torch: inf
    assert run_ir("var", [two], axes=(0,), correction=5) == np.inf  # max(n - c, 0) = 0
    assert run_ir("var", [two], axes=(0,), correction=-1) == 2.0 / 3.0
    assert run_ir("std", [two], axes=(0,)) == np.sqrt(2.0)
    # Two passes: no cancellation for a large mean.
    big = np.array([1e8 + 1, 1e8 + 2, 1e8 + 3], np.float64)
    assert run_ir("var", [big], axes=(0,)) == 1.0


@pytest.mark.filterwarnings("ignore:Degrees of freedom:RuntimeWarning")  # width 1: var is NaN on purpose
def test_symbolic_dims_count_at_run_time():
    b = GraphBuilder("stats")
    n = Symbol("N")
    x = b.input(f32[3, n])
    graph = b.build([b.mean(x, axes=(1,)), b.var(x, axes=(1,)), b.softmax(x, axis=1)])
    assert graph.output_types == [f32[3], f32[3], f32[3, n]]
    for width in (1, 4, 9):
        data = sample(f32, (3, width), offset=2.0, seed=width)
        mean, var, softmax = evaluate(graph, [data])
        assert_ulp(mean, data.astype(np.float64).mean(1).astype(np.float32), 1)
        with np.errstate(invalid="ignore", divide="ignore"):
            assert_ulp(var, data.astype(np.float64).var(1, ddof=1).astype(np.float32), 2.5)
        assert np.isnan(var).all() == (width == 1)
        assert softmax.shape == (3, width)
    assert non_primitives(decomposition("var", [f32[3, n]], axes=(1,))) == set()


@pytest.mark.parametrize("op", STATISTICS)
def test_table_entry_and_primitive_only_decomposition(op):
    opdef = OP_TABLE[op]
    assert opdef.kind is Kind.COMPOSITE and opdef.dtypes == FLOAT_DTYPES
    reduces = op not in ("softmax", "log_softmax")
    assert (Group.REDUCTION in opdef.groups) == reduces
    assert (opdef.accuracy is Accuracy.ACCUMULATION) == (op in ("mean", "var", "std"))
    attrs = {"axes": (0, 2)} if reduces else {"axis": 2}
    for dtype in (f32, f16):
        graph = decomposition(op, [dtype[2, 3, 4]], **attrs)
        assert non_primitives(graph) == set()
        assert graph.output_types == [dtype[3] if reduces else dtype[2, 3, 4]]
        if dtype is f16:  # computed in float32: one convert in, one out
            assert graph.op_counts()["convert"] == 2


def test_type_errors():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(TypeRuleError, match=r"^softmax \(attribute 'axis'\): axis 2 is out of range"):
        run_ir("softmax", [x], axis=2)
    with pytest.raises(TypeRuleError, match=r"^var \(attribute 'axes'\): axes \[1, 1\] repeat"):
        run_ir("var", [x], axes=(1, 1))
    with pytest.raises(TypeRuleError, match=r"^mean \(operand 0\): dtype i32"):
        run_ir("mean", [x.astype(np.int32)], axes=(0,))
