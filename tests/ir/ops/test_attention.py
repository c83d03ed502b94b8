"""scaled_dot_product_attention (ir/ops/attention.py) against torch.

Bound: a score s carries an absolute error of about ε·|s| after its dot product and
scale, which exp turns into a relative error of p; the output sums p·v, so the error is
absolute at the scale max|v|·(1 + max|s|). 1 ULP of that scale covers the roundings of
the dot, scale, shift, exp, sum, divide and the final dot (measured: ≤ 0.15 ULP of it
over 80 random cases; ≤ 0.45 ULP of max|v| alone).
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

from parity.ir import OP_TABLE, DType, TensorType, TypeRuleError, bool_, f32, f64  # noqa: E402

OP = "scaled_dot_product_attention"
ULPS = 1
DUMMY = np.array(False)  # the ignored mask operand when has_mask is false


def error_scale(q, k, v, scale):
    scores = scale * np.einsum("...le,...se->...ls", q.astype(np.float64), k.astype(np.float64))
    return np.abs(v).max() * (1 + np.abs(scores).max())


def sdpa(q, k, v, mask=None, *, causal=False, scale=None, dtype=np.float64):
    """IR and torch side by side: checks the IR result and returns it."""
    e = q.shape[-1]
    scale = 1 / math.sqrt(e) if scale is None else scale
    arrays = [a.astype(dtype) for a in (q, k, v)] + [DUMMY if mask is None else mask]
    if mask is not None and mask.dtype != np.bool_:
        arrays[3] = mask.astype(dtype)

    def fn(q, k, v, m):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=None if mask is None else m, is_causal=causal,
                                              scale=scale)

    bound = error_scale(*arrays[:3], scale)
    return check_composite(OP, arrays, fn, ULPS, error_scale=lambda t: bound, causal=causal, scale=scale,
                           has_mask=mask is not None)


def randn(seed, *shapes):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


# batch dims, L, S, E, Ev
SHAPES = [((), 4, 4, 8, 8), ((2,), 3, 5, 4, 6), ((2, 3), 4, 6, 5, 7), ((1, 2), 6, 3, 4, 2), ((3,), 1, 1, 2, 3),
          ((2,), 5, 1, 3, 3)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("batch, L, S, E, Ev", SHAPES)
def test_attention(batch, L, S, E, Ev, causal, dtype):
    q, k, v = randn(L * S, batch + (L, E), batch + (S, E), batch + (S, Ev))
    out = sdpa(q, k, v, causal=causal, dtype=dtype)
    assert out.shape == batch + (L, Ev)


def test_causal_is_top_left_aligned_when_queries_outnumber_keys():
    # L = 3 queries, S = 2 keys: query 0 sees key 0 only; queries 1 and 2 see both.
    q, k = np.zeros((3, 1)), np.zeros((2, 1))
    v = np.array([[2.0], [4.0]])
    out = run_ir(OP, [q, k, v, DUMMY], causal=True, scale=1.0)
    np.testing.assert_array_equal(out, [[2.0], [3.0], [3.0]])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["bool", "additive"])
def test_masks_and_fully_masked_rows(kind, dtype):
    q, k, v = randn(7, (2, 4, 3), (2, 5, 3), (2, 5, 6))
    keep = np.random.default_rng(8).random((2, 4, 5)) > 0.4
    keep[:, :, 0] = True
    keep[1, 2] = False  # a query that sees nothing
    mask = keep if kind == "bool" else np.where(keep, np.random.default_rng(9).standard_normal(keep.shape), -np.inf)
    out = sdpa(q, k, v, mask, scale=0.7, dtype=dtype)
    np.testing.assert_array_equal(out[1, 2], np.zeros(6))  # torch ≥ 2.5: zeros, not NaN
    assert not np.isnan(out).any()


def test_large_scores_do_not_overflow():
    q, k, v = randn(3, (2, 3, 4), (2, 5, 4), (2, 5, 2))
    out = sdpa(q * 1e3, k * 1e3, v, dtype=np.float32)  # scores ~1e6: exp would overflow without the shift
    assert np.isfinite(out).all()


def test_zero_scale_averages_the_values():
    q, k = randn(4, (2, 3), (4, 3))
    v = np.arange(8.0).reshape(4, 2)
    out = run_ir(OP, [q, k, v, DUMMY], scale=0.0)
    np.testing.assert_array_equal(out, np.broadcast_to(v.mean(axis=0), (2, 2)))


def test_nan_in_a_score_row_stays_in_that_row():
    q, k, v = randn(5, (3, 2), (4, 2), (4, 2))
    q[1, 0] = np.nan
    out = run_ir(OP, [q, k, v, DUMMY], scale=1.0)
    assert np.isnan(out[1]).all() and not np.isnan(out[[0, 2]]).any()


def _types(q, k, v, m=bool_[()]):
    return [q, k, v, m]


@pytest.mark.parametrize("types, attrs, message", [
    (_types(f32[2, 4, 3], f32[2, 5, 3], f32[2, 5, 6], bool_[2, 4, 5]), {"has_mask": True, "causal": True},
     r"attribute 'causal'.*excludes"),
    (_types(f32[2, 4, 3], f32[2, 5, 3], f32[2, 5, 6], bool_[2, 5, 4]), {"has_mask": True}, r"operand 3.*mask"),
    (_types(f32[2, 4, 3], f32[2, 5, 3], f32[2, 5, 6], f64[2, 4, 5]), {"has_mask": True}, r"operand 3.*mask"),
    (_types(f32[2, 4, 3], f32[2, 5, 2], f32[2, 5, 6]), {}, r"operand 1.*\[\*B, S, E\]"),
    (_types(f32[2, 4, 3], f32[3, 5, 3], f32[3, 5, 6]), {}, r"operand 1"),
    (_types(f32[2, 4, 3], f32[2, 5, 3], f32[2, 4, 6]), {}, r"operand 2.*\[\*B, S, Ev\]"),
    (_types(f32[2, 4, 3], f64[2, 5, 3], f32[2, 5, 6]), {}, r"operand 1.*dtype"),
    (_types(f32[3], f32[3], f32[3]), {}, r"operand 0.*\[\*B, L, E\]"),
    (_types(*[TensorType(DType.int32, (2, 2))] * 3), {}, r"operand 0.*i32"),
])
def test_type_errors(types, attrs, message):
    opdef = OP_TABLE[OP]
    with pytest.raises(TypeRuleError, match=message):
        opdef.result_types(types, opdef.normalize_attrs({"scale": 1.0, **attrs}))


def test_scale_is_required():
    with pytest.raises(TypeRuleError, match="attribute 'scale'"):
        OP_TABLE[OP].normalize_attrs({})


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_half_precision_is_computed_in_float32_and_rounded_once(dtype):
    q, k, v = (a.astype(dtype) for a in randn(11, (2, 3, 4), (2, 5, 4), (2, 5, 3)))
    mask = np.random.default_rng(12).random((2, 3, 5)) > 0.3
    mask[..., 0] = True

    def fn(q, k, v, m):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m, scale=0.5)

    # One rounding of a float32 result (itself thousands of times finer): 0.5 ULP, plus the
    # truth's own rounding to the half type: 1 ULP, relative.
    out = check_composite(OP, [q, k, v, mask], fn, 1, scale=0.5, has_mask=True)
    assert out.dtype == np.dtype(dtype)
