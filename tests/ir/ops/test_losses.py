"""cross_entropy, nll_loss, mse_loss (ir/ops/losses.py) against torch.nn.functional.

Bounds: a cross-entropy term is logsumexp(x) - x[target], which cancels, so its error is
absolute at the unit u = max|x| + log(C). The roundings that reach u's magnitude (shift,
log of the sum, subtract, the smoothing mix) are ≤ 0.5 ULP each, exp's and the sum's error
shrinks through the log: 2 ULPs of u (measured: ≤ 1). 'mean' keeps that unit,
'sum' multiplies it by the number of terms. nll_loss only picks and negates (exact for
'none') before summing: 1 ULP of Σ|terms| (per term for 'mean'). mse_loss squares a
rounded difference: 2 ULPs relative, and its sums have positive terms only.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).parent))
from composite_check import check_composite  # noqa: E402
from torch_reference import run_ir  # noqa: E402

from parity.ir import OP_TABLE, DType, Group, TensorType, TypeRuleError, f32, i32, i64  # noqa: E402

NAN, INF = float("nan"), float("inf")
DTYPES = [np.float32, np.float64]
REDUCTIONS = ["mean", "sum", "none"]


def test_table_entries():
    for name in ("cross_entropy", "nll_loss", "mse_loss"):
        assert Group.LOSS in OP_TABLE[name].groups
    assert OP_TABLE["cross_entropy"].implementation_defined


def scores_and_targets(seed, shape, dtype, ignore_index=-100, ignored=1):
    """Random scores [.., C, ..] and targets (with ``ignored`` of them set to ``ignore_index``)."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    c = 1 if len(shape) > 1 else 0
    target = rng.integers(0, shape[c], shape[:c] + shape[c + 1:])
    target.flat[:ignored] = ignore_index
    return x, target


def unit(x, target, reduction, ignore_index=-100):
    c = 1 if x.ndim > 1 else 0
    u = np.abs(x).max() + math.log(x.shape[c])
    return u * max(1, np.sum(target != ignore_index)) if reduction == "sum" else u


# scores shape, ignored targets
SHAPES = [((4, 5), 1), ((6,), 0), ((3, 5, 2, 2), 3), ((1, 1), 0), ((2, 3, 4), 8)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("label_smoothing", [0.0, 0.1, 1.0])
@pytest.mark.parametrize("shape, ignored", SHAPES)
def test_cross_entropy(shape, ignored, label_smoothing, reduction, dtype):
    x, target = scores_and_targets(len(shape) + ignored, shape, dtype, ignored=ignored)
    u = unit(x, target, reduction)

    def fn(x, t):
        return F.cross_entropy(x, t, reduction=reduction, label_smoothing=label_smoothing)

    out = check_composite("cross_entropy", [x, target], fn, 2, error_scale=lambda t: u, reduction=reduction,
                          label_smoothing=label_smoothing)
    if reduction == "none" and target.ndim:
        assert (out[target == -100] == 0).all()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_custom_ignore_index_is_a_real_class(reduction, dtype):
    x, target = scores_and_targets(3, (6, 4), dtype, ignore_index=2, ignored=2)
    u = unit(x, target, reduction, ignore_index=2)

    def fn(x, t):
        return F.cross_entropy(x, t, ignore_index=2, reduction=reduction, label_smoothing=0.2)

    check_composite("cross_entropy", [x, target], fn, 2, error_scale=lambda t: u, ignore_index=2,
                    reduction=reduction, label_smoothing=0.2)


@pytest.mark.parametrize("label_smoothing", [0.0, 0.3])
def test_all_targets_ignored(label_smoothing):
    x, target = scores_and_targets(1, (3, 4), np.float32, ignored=3)
    attrs = dict(label_smoothing=label_smoothing)
    assert np.isnan(run_ir("cross_entropy", [x, target], **attrs))  # mean: 0 / 0, as torch gives
    assert run_ir("cross_entropy", [x, target], reduction="sum", **attrs) == 0.0
    np.testing.assert_array_equal(run_ir("cross_entropy", [x, target], reduction="none", **attrs), np.zeros(3))
    assert np.isnan(run_ir("nll_loss", [x, target]))


def test_cross_entropy_by_hand_and_stability():
    x = np.array([[0.0, 0.0], [1000.0, 0.0]])  # log(2) and (almost) 0; exp(1000) would overflow unshifted
    target = np.array([0, 0])
    np.testing.assert_allclose(run_ir("cross_entropy", [x, target], reduction="none"), [math.log(2), 0.0],
                               rtol=1e-15, atol=0)
    np.testing.assert_array_equal(run_ir("cross_entropy", [x, np.array([1, 1])], reduction="none")[1], 1000.0)
    x[1, 0] = -INF  # the target class has probability 0: infinite loss
    assert run_ir("cross_entropy", [x, target], reduction="none")[1] == INF


def test_label_smoothing_by_hand():
    # Two classes, logits equal: logp = -log 2 everywhere, so every mixture gives log 2.
    out = run_ir("cross_entropy", [np.zeros((1, 2)), np.array([1])], label_smoothing=0.5)
    np.testing.assert_allclose(out, math.log(2), rtol=1e-15)
    # Smoothing 1.0 leaves only the uniform term: -(logp0 + logp1) / 2.
    x = np.array([[0.0, math.log(3.0)]])  # p = (1/4, 3/4)
    out = run_ir("cross_entropy", [x, np.array([1])], label_smoothing=1.0)
    np.testing.assert_allclose(out, (math.log(4) + math.log(4 / 3)) / 2, rtol=1e-15)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape, ignored", SHAPES)
def test_nll_loss(shape, ignored, reduction, dtype):
    x, target = scores_and_targets(len(shape), shape, dtype, ignored=ignored)
    logp = -np.abs(x)
    valid = target != -100
    c = 1 if len(shape) > 1 else 0
    terms = np.abs(np.take_along_axis(logp, np.expand_dims(np.where(valid, target, 0), c), c)).sum()
    scale = {"none": None, "sum": terms, "mean": terms / max(1, valid.sum())}[reduction]

    def fn(x, t):
        return F.nll_loss(x, t, reduction=reduction)

    out = check_composite("nll_loss", [logp, target], fn, 0 if reduction == "none" else 1,
                          error_scale=None if scale is None else (lambda t: scale), reduction=reduction)
    if reduction == "none":  # a pick and a negation: exact
        assert out.dtype == dtype


def test_int32_targets():
    x = np.log(np.array([[0.25, 0.75], [0.5, 0.5]]))
    np.testing.assert_allclose(run_ir("nll_loss", [x, np.array([1, 0], np.int32)], reduction="sum"),
                               -(math.log(0.75) + math.log(0.5)), rtol=1e-15)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(3, 4), (5,), (), (2, 1, 3)])
def test_mse_loss(shape, reduction, dtype):
    rng = np.random.default_rng(len(shape))
    x, y = rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape).astype(dtype)

    def fn(x, y):
        return F.mse_loss(x, y, reduction=reduction)

    check_composite("mse_loss", [x, y], fn, 2, reduction=reduction)


def test_mse_loss_edge_cases():
    empty = np.zeros((0, 3), np.float32)
    assert np.isnan(run_ir("mse_loss", [empty, empty]))  # mean of nothing, as torch
    assert run_ir("mse_loss", [empty, empty], reduction="sum") == 0.0
    x = np.array([INF, 1.0, 2.0], np.float32)
    y = np.array([INF, 1.0, 0.0], np.float32)
    np.testing.assert_array_equal(run_ir("mse_loss", [x, y], reduction="none"), [NAN, 0.0, 4.0])


# op, operand types, attrs, message
BAD = [
    ("cross_entropy", [f32[4, 5], i64[5]], {}, r"operand 1.*shape without the class dim"),
    ("cross_entropy", [f32[4, 5, 2], i64[4, 5]], {}, r"operand 1.*\[4,2\]"),
    ("cross_entropy", [f32[4, 5], f32[4]], {}, r"operand 1.*f32"),
    ("cross_entropy", [f32[()], i64[()]], {}, r"operand 0"),
    ("cross_entropy", [i32[4, 5], i64[4]], {}, r"operand 0.*i32"),
    ("cross_entropy", [f32[4, 5], i64[4]], {"label_smoothing": 1.5}, "attribute 'label_smoothing'"),
    ("cross_entropy", [f32[4, 5], i32[4]], {"ignore_index": 2**40}, "attribute 'ignore_index'"),
    ("cross_entropy", [f32[4, 5], i64[4]], {"reduction": "avg"}, "attribute 'reduction'.*must be one of"),
    ("nll_loss", [f32[4, 5], TensorType(DType.uint8, (4,))], {}, r"operand 1.*u8"),
    ("mse_loss", [f32[3], f32[4]], {}, r"operand 1.*broadcast_in_dim"),
    ("mse_loss", [f32[3], TensorType(DType.float64, (3,))], {}, r"operand 1.*convert"),
]


@pytest.mark.parametrize("op, types, attrs, message", BAD)
def test_type_errors(op, types, attrs, message):
    opdef = OP_TABLE[op]
    with pytest.raises(TypeRuleError, match=f"{op}.*{message}"):
        opdef.result_types(types, opdef.normalize_attrs(attrs))


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
@pytest.mark.parametrize("op", ["cross_entropy", "nll_loss", "mse_loss"])
def test_half_precision_is_computed_in_float32_and_rounded_once(op, dtype):
    x, target = scores_and_targets(6, (8, 5), dtype, ignored=2)
    if op == "mse_loss":
        operands, fn = [x, (x * 0.5).astype(dtype)[::-1].copy()], F.mse_loss
    else:
        operands = [x if op == "cross_entropy" else (-np.abs(x)).astype(dtype), target]
        fn = F.cross_entropy if op == "cross_entropy" else F.nll_loss
    # A float32 mean rounded once to the half type: 1 ULP relative (ours plus the truth's rounding).
    out = check_composite(op, operands, fn, 1)
    assert out.dtype == np.dtype(dtype)
