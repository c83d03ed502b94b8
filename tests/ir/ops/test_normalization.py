"""Normalization composites (ir/ops/normalization.py) against torch.nn.functional.

Bounds: the decompositions round each of ~8 primitives once in the output dtype, and
``x - mean`` cancels, so the error is absolute at the scale of the largest output
(``scale=max|truth|``): 8 ULPs of that scale, for float32 and float64 alike.
"""

from __future__ import annotations

import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).parent))
from composite_check import check_composite, fully_expanded  # noqa: E402
from torch_reference import assert_ulp, non_primitives, run_ir, to_torch  # noqa: E402

from parity.ir import OP_TABLE, DType, Group, Symbol, TensorType, TypeRuleError, f32  # noqa: E402

ULPS = 8
DTYPES = [np.float32, np.float64]


def row_scale(truth):
    return np.abs(truth).max()


def randn(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


def test_table_entries():
    for name in ("layer_norm", "rms_norm", "batch_norm", "group_norm"):
        assert Group.NORMALIZATION in OP_TABLE[name].groups
    assert OP_TABLE["batch_norm"].num_results == 3


# x shape, normalized_ndim, eps
LAYER_NORM = [((4, 7), 1, 1e-5), ((2, 3, 5), 2, 1e-5), ((3, 16), 1, 0.5), ((2, 1, 6), 1, 1e-12),
              ((6,), 1, 1e-5), ((2, 3, 1), 1, 1e-5)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, k, eps", LAYER_NORM)
def test_layer_norm(shape, k, eps, dtype):
    rng = np.random.default_rng(len(shape) * 10 + k)
    x = randn(rng, shape, dtype) * 3 + 1
    w, b = randn(rng, shape[-k:], dtype), randn(rng, shape[-k:], dtype)
    out = check_composite("layer_norm", [x, w, b], lambda x, w, b: F.layer_norm(x, shape[-k:], w, b, eps), ULPS,
                          error_scale=row_scale, normalized_ndim=k, eps=eps)
    if shape[-1] == 1 and k == 1:  # a single element: x - mean = 0, so the output is the bias
        np.testing.assert_array_equal(out, np.broadcast_to(b, shape))


def test_layer_norm_constant_row_without_eps_is_nan_like_torch():
    x = np.array([[2.0, 2.0], [1.0, 3.0]], np.float32)
    out = run_ir("layer_norm", [x, np.ones(2, np.float32), np.zeros(2, np.float32)], normalized_ndim=1, eps=0.0)
    assert np.isnan(out[0]).all()  # 0 * rsqrt(0) = 0 * inf
    np.testing.assert_array_equal(out[1], [-1.0, 1.0])
    ref = F.layer_norm(torch.from_numpy(x), (2,), eps=0.0).numpy()
    assert np.isnan(ref[0]).all()


def test_layer_norm_nan_stays_in_its_row():
    x = np.array([[1.0, np.nan, 3.0], [1.0, 2.0, 4.0]], np.float32)
    out = run_ir("layer_norm", [x, np.ones(3, np.float32), np.zeros(3, np.float32)], normalized_ndim=1, eps=1e-5)
    assert np.isnan(out[0]).all() and not np.isnan(out[1]).any()


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_half_precision_is_computed_wide_and_rounded_once(dtype):
    # 256 elements: the statistics need more mantissa than float16/bfloat16 carry.
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((2, 256)) * 4 + 30).astype(dtype)
    w, b = np.ones(256, dtype), np.zeros(256, dtype)
    out = run_ir("layer_norm", [x, w, b], normalized_ndim=1, eps=1e-5)
    assert out.dtype == np.dtype(dtype)
    truth = F.layer_norm(to_torch(x).double(), (256,), eps=1e-5).numpy().astype(dtype)
    assert_ulp(out, truth, 1, scale=np.abs(truth.astype(np.float64)).max(), what="layer_norm half")
    graph = fully_expanded("layer_norm", [TensorType(DType.from_numpy(x.dtype), x.shape), *[
        TensorType(DType.from_numpy(x.dtype), (256,))] * 2], normalized_ndim=1, eps=1e-5)
    assert graph.op_counts()["convert"] == 4  # three operands up, one result down


# x shape, normalized_ndim, eps
RMS_NORM = [((4, 7), 1, 1e-6), ((2, 3, 5), 2, float(np.finfo(np.float32).eps)), ((3, 1), 1, 0.1)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, k, eps", RMS_NORM)
def test_rms_norm(shape, k, eps, dtype):
    rng = np.random.default_rng(k)
    x, w = randn(rng, shape, dtype), randn(rng, shape[-k:], dtype)
    # No cancellation here: every element's error is relative (4 roundings, a transcendental rsqrt).
    check_composite("rms_norm", [x, w], lambda x, w: F.rms_norm(x, shape[-k:], w, eps), ULPS,
                    normalized_ndim=k, eps=eps)


def test_rms_norm_needs_eps():
    with pytest.raises(TypeRuleError, match="rms_norm.*eps"):
        run_ir("rms_norm", [np.ones((2, 2), np.float32), np.ones(2, np.float32)], normalized_ndim=1)


def _torch_batch_norm(training, momentum, eps):
    """torch's batch_norm as three results (it updates the running stats in place)."""

    def fn(x, w, b, rm, rv):
        rm, rv = rm.clone(), rv.clone()
        out = F.batch_norm(x, rm, rv, w, b, training=training, momentum=momentum, eps=eps)
        return out, rm, rv

    return fn


# x shape, training, momentum, eps
BATCH_NORM = [((4, 3), True, 0.1, 1e-5), ((2, 3, 5), True, 0.3, 1e-5), ((2, 3, 4, 5), True, 0.1, 1e-3),
              ((2, 3, 4, 5), False, 0.1, 1e-5), ((1, 2, 2), True, 1.0, 1e-5), ((3, 2, 1, 1), True, 0.0, 1e-5),
              ((5, 1, 3), False, 0.5, 0.0)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, training, momentum, eps", BATCH_NORM)
def test_batch_norm(shape, training, momentum, eps, dtype):
    rng = np.random.default_rng(shape[0] * 7 + training)
    c = shape[1]
    x = randn(rng, shape, dtype) * 2 - 1
    w, b, rm = randn(rng, c, dtype), randn(rng, c, dtype), randn(rng, c, dtype)
    rv = (rng.random(c) + 0.5).astype(dtype)
    fn = _torch_batch_norm(training, momentum, eps)
    out, new_mean, new_var = check_composite("batch_norm", [x, w, b, rm, rv], lambda *a: fn(*a)[0], ULPS,
                                             error_scale=row_scale, training=training, momentum=momentum, eps=eps)
    _, t_mean, t_var = fn(*(torch.from_numpy(a.astype(np.float64)) for a in (x, w, b, rm, rv)))
    # The running stats: a mean (or an n-1 variance) and one multiply-add, each within 8 ULPs.
    assert_ulp(new_mean, t_mean.numpy().astype(dtype), ULPS, scale=np.abs(t_mean.numpy()).max(), what="mean")
    assert_ulp(new_var, t_var.numpy().astype(dtype), ULPS, what="var")
    if not training:  # eval returns the running stats untouched
        np.testing.assert_array_equal(new_mean, rm)
        np.testing.assert_array_equal(new_var, rv)


def test_batch_norm_training_uses_the_biased_variance_and_updates_with_the_unbiased_one():
    x = np.array([[1.0], [3.0]])[:, :, None]  # one channel, values 1 and 3: mean 2, var 1 (biased), 2 (unbiased)
    one, zero = np.ones(1), np.zeros(1)
    out, mean, var = run_ir("batch_norm", [x, one, zero, zero, one], training=True, momentum=0.5, eps=0.0)
    np.testing.assert_array_equal(out.ravel(), [-1.0, 1.0])
    np.testing.assert_array_equal(mean, [1.0])  # 0.5 * 2 + 0.5 * 0
    np.testing.assert_array_equal(var, [1.5])  # 0.5 * 2 + 0.5 * 1


def test_batch_norm_training_needs_two_values_per_channel():
    types = [TensorType(DType.float32, (1, 3, 1))] + [f32[3]] * 4
    with pytest.raises(TypeRuleError, match="batch_norm.*more than one value per channel"):
        OP_TABLE["batch_norm"].result_types(types, OP_TABLE["batch_norm"].normalize_attrs({"training": True}))
    # Eval mode is fine with a single value.
    assert OP_TABLE["batch_norm"].result_types(types, OP_TABLE["batch_norm"].normalize_attrs({"training": False}))


def test_batch_norm_with_a_symbolic_batch_counts_at_run_time():
    n = Symbol("N")
    types = [TensorType(DType.float64, (n, 2, 3))] + [TensorType(DType.float64, (2,))] * 4
    graph = fully_expanded("batch_norm", types, training=True)
    assert not non_primitives(graph)
    assert graph.output_types[0].shape == (n, 2, 3)


# x shape, groups, eps
GROUP_NORM = [((2, 6, 3), 3, 1e-5), ((2, 4, 3, 3), 2, 1e-5), ((1, 4, 5), 1, 1e-5), ((2, 4, 5), 4, 1e-3),
              ((3, 4), 2, 1e-5)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, groups, eps", GROUP_NORM)
def test_group_norm(shape, groups, eps, dtype):
    rng = np.random.default_rng(groups)
    x = randn(rng, shape, dtype)
    w, b = randn(rng, shape[1], dtype), randn(rng, shape[1], dtype)
    check_composite("group_norm", [x, w, b], lambda x, w, b: F.group_norm(x, groups, w, b, eps), ULPS,
                    error_scale=row_scale, groups=groups, eps=eps)


def test_group_norm_single_element_groups_give_the_bias():
    x = np.array([[[5.0], [-2.0], [7.0]]], np.float32)  # [N=1, C=3, 1]: groups of one element
    w = np.array([2.0, 3.0, 4.0], np.float32)
    b = np.array([0.5, -1.5, 0.25], np.float32)
    out = run_ir("group_norm", [x, w, b], groups=3, eps=1e-5)
    np.testing.assert_array_equal(out.ravel(), b)


# op, operand types, attrs, message
BAD = [
    ("layer_norm", [f32[2, 3], f32[2], f32[3]], {"normalized_ndim": 1}, r"operand 1.*normalized trailing shape"),
    ("layer_norm", [f32[2, 3], f32[3], f32[3]], {"normalized_ndim": 3}, r"attribute 'normalized_ndim'"),
    ("layer_norm", [f32[2, 3], TensorType(DType.float64, (3,)), f32[3]], {"normalized_ndim": 1}, "operand 1.*f64"),
    ("layer_norm", [TensorType(DType.int32, (3,))] * 3, {"normalized_ndim": 1}, "layer_norm.*i32"),
    ("batch_norm", [f32[4], f32[4], f32[4], f32[4], f32[4]], {"training": False}, r"N, C, \*spatial"),
    ("batch_norm", [f32[2, 3], f32[3], f32[3], f32[2], f32[3]], {"training": False}, "operand 3"),
    ("group_norm", [f32[2, 6, 3], f32[6], f32[6]], {"groups": 4}, "attribute 'groups'"),
    ("group_norm", [f32[2, 6, 3], f32[6], f32[6]], {"groups": 0}, "attribute 'groups'"),
    ("group_norm", [f32[2, 6, 3], f32[6], f32[3]], {"groups": 3}, "operand 2"),
]


@pytest.mark.parametrize("op, types, attrs, message", BAD)
def test_type_errors(op, types, attrs, message):
    opdef = OP_TABLE[op]
    with pytest.raises(TypeRuleError, match=message):
        opdef.result_types(types, opdef.normalize_attrs(attrs))
