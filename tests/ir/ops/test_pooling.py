"""max_pool, avg_pool, adaptive_avg_pool, interpolate (ir/ops/pooling.py) against torch.

Bounds: max_pool and nearest interpolation select elements, so they are bit-exact.
Averages sum then divide: each sum (one per spatial dim for adaptive pooling) and the
division round once (≤ 0.5 ULP each) at the scale of the same average of |x|, so
avg_pool is within 1 ULP and d-dimensional adaptive pooling within (d + 1) / 2. Linear interpolation
reproduces torch's weights (computed in float32 for float32 input) and rounds two
products and a sum per dim: ≤ 1.5 ULPs of max|x| per dim against those weights applied
exactly, and within twice that of torch's own kernel. (Float64 is measured against
torch's float64 with twice the bound; see composite_check.)
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
from composite_check import check_composite  # noqa: E402
from torch_reference import run_ir  # noqa: E402

from parity.ir import OP_TABLE, TypeRuleError, f32, i32  # noqa: E402
from parity.ir.ops.pooling import linear_taps  # noqa: E402

NAN, INF = float("nan"), float("inf")
DTYPES = [np.float32, np.float64]
TORCH_POOL = {
    "max_pool": (F.max_pool1d, F.max_pool2d, F.max_pool3d),
    "avg_pool": (F.avg_pool1d, F.avg_pool2d, F.avg_pool3d),
    "adaptive_avg_pool": (F.adaptive_avg_pool1d, F.adaptive_avg_pool2d, F.adaptive_avg_pool3d),
}


def randn(seed, shape, dtype):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def on_abs(fn, x):
    """``fn`` applied by torch to |x| in float64: the scale of an average's error."""
    return fn(torch.from_numpy(np.abs(x).astype(np.float64))).numpy()


def torch_pool(op, x, attrs):
    d = x.ndim - 2
    kwargs = dict(kernel_size=attrs["kernel"], stride=attrs.get("stride") or None,
                  padding=attrs.get("padding") or 0, ceil_mode=attrs.get("ceil_mode", False))
    if op == "max_pool":
        kwargs["dilation"] = attrs.get("dilation") or 1
    else:
        kwargs["count_include_pad"] = attrs.get("count_include_pad", True)
    fn = TORCH_POOL[op][d - 1]
    return lambda t: fn(t, **kwargs)


# x shape, attrs
POOLS = [
    ((2, 3, 9), dict(kernel=(3,))),
    ((2, 3, 9), dict(kernel=(2,), stride=(3,), padding=(1,), ceil_mode=True)),
    ((2, 3, 9, 8), dict(kernel=(3, 3))),
    ((2, 3, 9, 8), dict(kernel=(3, 2), stride=(2, 1), padding=(1, 1))),
    ((2, 3, 9, 8), dict(kernel=(2, 2), stride=(2, 2), ceil_mode=True)),
    ((2, 3, 9, 8), dict(kernel=(3, 3), stride=(2, 3), padding=(1, 1), ceil_mode=True)),
    ((1, 2, 5, 5), dict(kernel=(5, 5), padding=(2, 2), stride=(4, 4), ceil_mode=True)),
    ((1, 2, 1, 1), dict(kernel=(1, 1))),
    ((1, 2, 4, 5, 6), dict(kernel=(2, 3, 2), stride=(2, 1, 3), padding=(1, 1, 0), ceil_mode=True)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, attrs", POOLS)
def test_max_pool(shape, attrs, dtype):
    x = randn(len(shape), shape, dtype)
    check_composite("max_pool", [x], torch_pool("max_pool", x, attrs), 0, **attrs)


@pytest.mark.parametrize("attrs", [dict(kernel=(2, 3), dilation=(2, 2), padding=(1, 1), stride=(2, 2), ceil_mode=True),
                                   dict(kernel=(3, 5), dilation=(1, 2), padding=(1, 2))])
def test_max_pool_dilated(attrs):
    x = randn(1, (2, 3, 9, 8), np.float32)
    check_composite("max_pool", [x], torch_pool("max_pool", x, attrs), 0, **attrs)


def test_max_pool_nan_inf_and_integers():
    x = np.array([[[1.0, NAN, 3.0, -INF, -INF, 2.0]]], np.float32)
    np.testing.assert_array_equal(run_ir("max_pool", [x], kernel=(2,)), [[[NAN, 3.0, 2.0]]])
    np.testing.assert_array_equal(run_ir("max_pool", [x[..., 3:5]], kernel=(2,)), [[[-INF]]])
    xi = np.array([[[-5, -7, 2, -128]]], np.int8)
    np.testing.assert_array_equal(run_ir("max_pool", [xi], kernel=(2,), padding=(1,)), [[[-5, 2, -128]]])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("count_include_pad", [True, False])
@pytest.mark.parametrize("shape, attrs", POOLS)
def test_avg_pool(shape, attrs, count_include_pad, dtype):
    x = randn(len(shape) + 1, shape, dtype)
    fn = torch_pool("avg_pool", x, dict(attrs, count_include_pad=count_include_pad))
    scale = on_abs(fn, x)
    check_composite("avg_pool", [x], fn, 1, error_scale=lambda t: scale, count_include_pad=count_include_pad,
                    **attrs)


def test_avg_pool_divisors_by_hand():
    # 5 ones, kernel 2, stride 2, padding 1, ceil_mode: windows [-1,0] [1,2] [3,4] [5,6).
    ones = np.ones((1, 1, 5), np.float64)
    attrs = dict(kernel=(2,), stride=(2,), padding=(1,), ceil_mode=True)
    # Counting padding: the last window is clipped to the padded extent [-1, 6): all divisors 2.
    np.testing.assert_array_equal(run_ir("avg_pool", [ones], **attrs), [[[0.5, 1.0, 1.0]]])
    np.testing.assert_array_equal(run_ir("avg_pool", [ones], count_include_pad=False, **attrs), [[[1.0, 1.0, 1.0]]])


@pytest.mark.parametrize("op, x, attrs, message", [
    ("max_pool", f32[1, 2, 5], dict(kernel=(3,), padding=(2,)), "attribute 'padding'.*half the kernel"),
    ("max_pool", f32[1, 2, 9], dict(kernel=(3,), dilation=(3,), padding=(2,)), "attribute 'padding'"),
    ("avg_pool", f32[1, 2, 5, 5], dict(kernel=(3, 3), stride=(1,)), "attribute 'stride'.*2 spatial dims"),
    ("max_pool", f32[1, 2, 5], dict(kernel=(3, 3, 3)), "attribute 'kernel'.*3 spatial dims"),
    ("max_pool", f32[1, 2, 5], dict(kernel=(7,)), "attribute 'kernel'.*does not fit"),
    ("max_pool", f32[1, 2, 5], dict(kernel=(0,)), "attribute 'kernel'.*≥ 1"),
    ("max_pool", f32[1, 2, 5], dict(kernel=(2,), dilation=(0,)), "attribute 'kernel'.*≥ 1"),
])
def test_pool_type_errors(op, x, attrs, message):
    opdef = OP_TABLE[op]
    with pytest.raises(TypeRuleError, match=f"{op}.*{message}"):
        opdef.result_types([x], opdef.normalize_attrs(attrs))


def test_avg_pool_takes_floats_only():
    with pytest.raises(TypeRuleError, match="avg_pool.*i32"):
        OP_TABLE["avg_pool"].result_types([i32[1, 1, 4]], OP_TABLE["avg_pool"].normalize_attrs({"kernel": (2,)}))


# -- adaptive_avg_pool -------------------------------------------------------------------------

# x shape, output_size
ADAPTIVE = [((2, 3, 9), (4,)), ((2, 3, 9, 8), (3, 3)), ((2, 3, 9, 8), (4, 5)), ((2, 3, 9, 8), (9, 8)),
            ((2, 3, 9, 8), (1, 1)), ((1, 2, 5, 3), (7, 7)), ((1, 2, 4, 6, 5), (3, 2, 4)), ((1, 1, 1, 1), (2, 3))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, output_size", ADAPTIVE)
def test_adaptive_avg_pool(shape, output_size, dtype):
    x = randn(sum(output_size), shape, dtype)

    def fn(t):
        return TORCH_POOL["adaptive_avg_pool"][len(output_size) - 1](t, output_size)

    scale = on_abs(fn, x)
    check_composite("adaptive_avg_pool", [x], fn, 0.5 * (len(output_size) + 1), error_scale=lambda t: scale, output_size=output_size)


def test_adaptive_avg_pool_keeps_an_infinity_inside_its_windows():
    x = np.arange(5, dtype=np.float32).reshape(1, 1, 5)
    x[0, 0, 0] = INF
    # windows of 5 -> 3: [0, 2) [1, 4) [3, 5); only the first sees the inf.
    np.testing.assert_array_equal(run_ir("adaptive_avg_pool", [x], output_size=(3,)), [[[INF, 2.0, 3.5]]])


def test_adaptive_avg_pool_type_errors():
    opdef = OP_TABLE["adaptive_avg_pool"]
    with pytest.raises(TypeRuleError, match="adaptive_avg_pool.*output_size"):
        opdef.result_types([f32[1, 2, 5]], {"output_size": (0,)})
    with pytest.raises(TypeRuleError, match="adaptive_avg_pool.*output_size.*2 spatial dims"):
        opdef.result_types([f32[1, 2, 5]], {"output_size": (2, 2)})


# -- interpolate ---------------------------------------------------------------------------------

# x shape, size, mode, align_corners
INTERPOLATE = [
    ((2, 3, 9, 8), (18, 16), "nearest", False),
    ((2, 3, 9, 8), (5, 3), "nearest", False),
    ((2, 3, 9, 8), (13, 11), "nearest", False),
    ((1, 2, 4), (9,), "nearest", False),
    ((1, 1, 6), (74,), "nearest", False),  # sample 37: source 2 in float32, 3 in float64 (see below)
    ((1, 1, 1, 6), (1, 74), "nearest", False),  # 2-d: source 2 for float64 too
    ((1, 2, 2, 3, 4), (3, 5, 2), "nearest", False),
    ((1, 2, 7), (12,), "linear", False),
    ((1, 2, 7), (4,), "linear", True),
    ((2, 3, 9, 8), (18, 16), "bilinear", False),
    ((2, 3, 9, 8), (18, 16), "bilinear", True),
    ((2, 3, 9, 8), (5, 3), "bilinear", False),
    ((2, 3, 9, 8), (5, 3), "bilinear", True),
    ((2, 3, 9, 8), (4, 17), "bilinear", False),
    ((2, 3, 9, 8), (1, 1), "bilinear", True),
    ((2, 3, 9, 8), (9, 8), "bilinear", False),
    ((1, 1, 1, 1), (3, 2), "bilinear", False),
    ((1, 2, 3, 4, 2), (5, 3, 4), "trilinear", False),
    ((1, 2, 3, 4, 2), (5, 3, 4), "trilinear", True),
]


def linear_truth(size, align_corners, dtype):
    """Separable linear resampling in float64 with torch's own weights for ``dtype``.

    torch computes source positions and weights in float32 for float32 input (an error of
    ε·in per position, which the IR reproduces on purpose), so the truth uses those
    weights, probed exactly by resampling unit vectors in ``dtype``.
    """

    def fn(t):
        for axis, out in enumerate(size, start=2):
            n = t.shape[axis]
            eye = torch.eye(n, dtype=dtype).reshape(1, n, n)
            weights = F.interpolate(eye, size=(out,), mode="linear", align_corners=align_corners)[0].double()
            t = torch.movedim(torch.tensordot(t, weights, dims=([axis], [0])), -1, axis)
        return t

    return fn


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, size, mode, align_corners", INTERPOLATE)
def test_interpolate(shape, size, mode, align_corners, dtype):
    x = randn(sum(size), shape, dtype)
    native = torch.float32 if dtype == np.float32 else torch.float64
    if mode == "nearest":  # a selection: torch in the native dtype is exact
        fn, ulps = lambda t: F.interpolate(t.to(native), size=size).double(), 0
    else:
        fn, ulps = linear_truth(size, align_corners, native), 1.5 * len(size)
    out = check_composite("interpolate", [x], fn, ulps, error_scale=lambda t: np.abs(x).max(), size=size, mode=mode,
                          align_corners=align_corners)
    torch_native = F.interpolate(torch.from_numpy(x), size=size, mode=mode,
                                 align_corners=align_corners if mode != "nearest" else None).numpy()
    np.testing.assert_allclose(out, torch_native, rtol=0, atol=2 * ulps * np.finfo(dtype).eps * np.abs(x).max())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("size, out, align_corners", [(9, 5, False), (5, 21, False), (7, 12, False), (7, 4, True),
                                                      (1, 3, False), (3, 1, True), (40, 127, False)])
def test_linear_weights_are_torchs_bit_for_bit(size, out, align_corners, dtype):
    # torch's weights, probed exactly by resampling unit vectors (9 -> 5 needs the fused
    # multiply-add, 5 -> 21 in float64 the float32 floor).
    probe = F.interpolate(torch.eye(size, dtype=dtype).reshape(1, size, size), size=(out,), mode="linear",
                          align_corners=align_corners)[0].numpy().T
    i0, i1, w0, w1 = linear_taps(size, out, align_corners, np.float32 if dtype == torch.float32 else np.float64)
    ours = np.zeros_like(probe)
    np.add.at(ours, (np.arange(out), i0), w0)
    np.add.at(ours, (np.arange(out), i1), w1)
    np.testing.assert_array_equal(ours, probe)


@pytest.mark.parametrize("dtype, spatial, source", [(np.float32, 1, 2.0), (np.float32, 2, 2.0), (np.float64, 1, 3.0),
                                                   (np.float64, 2, 2.0), (np.float64, 3, 3.0)])
def test_nearest_index_is_computed_in_torchs_float_type(dtype, spatial, source):
    # floor(37 * 6/74) is 3 exactly; torch's float32 arithmetic gives 2, and its float64
    # kernels use float32 for 2 spatial dims but float64 for 1 and 3.
    x = np.arange(6, dtype=dtype).reshape((1, 1) + (1,) * (spatial - 1) + (6,))
    size = (1,) * (spatial - 1) + (74,)
    out = run_ir("interpolate", [x], size=size)
    assert out.ravel()[37] == source
    assert F.interpolate(torch.from_numpy(x), size=size).numpy().ravel()[37] == source


def test_bilinear_by_hand():
    x = np.array([[[[0.0, 4.0]]]])  # [1, 1, 1, 2] -> width 4
    np.testing.assert_array_equal(run_ir("interpolate", [x], size=(1, 4), mode="bilinear"), [[[[0, 1, 3, 4]]]])
    np.testing.assert_allclose(run_ir("interpolate", [x], size=(1, 4), mode="bilinear", align_corners=True),
                               [[[[0, 4 / 3, 8 / 3, 4]]]], rtol=1e-15)


@pytest.mark.parametrize("x, attrs, message", [
    (f32[1, 1, 4], dict(size=(8,), mode="nearest", align_corners=True), "attribute 'align_corners'"),
    (f32[1, 1, 4], dict(size=(8,), mode="bilinear"), "attribute 'mode'.*takes 2 spatial dims"),
    (f32[1, 1, 4], dict(size=(8, 8)), "attribute 'size'"),
    (f32[1, 1, 4], dict(size=(0,)), "attribute 'size'.*≥ 1"),
    (f32[1, 1, 4], dict(size=(8,), mode="bicubic"), "attribute 'mode'.*must be one of"),
])
def test_interpolate_type_errors(x, attrs, message):
    opdef = OP_TABLE["interpolate"]
    with pytest.raises(TypeRuleError, match=f"interpolate.*{message}"):
        opdef.result_types([x], opdef.normalize_attrs(attrs))


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
@pytest.mark.parametrize("op, attrs", [
    ("avg_pool", dict(kernel=(3, 3), stride=(2, 2), padding=(1, 1), ceil_mode=True)),
    ("adaptive_avg_pool", dict(output_size=(4, 3))),
    ("interpolate", dict(size=(13, 5), mode="bilinear")),
    ("interpolate", dict(size=(13, 5), mode="bilinear", align_corners=True)),
    ("interpolate", dict(size=(13, 5))),
])
def test_half_precision_is_computed_in_float32_and_rounded_once(op, attrs, dtype):
    x = randn(4, (2, 3, 9, 8), dtype)
    if op == "interpolate" and attrs.get("mode") == "bilinear":
        fn = linear_truth(attrs["size"], attrs.get("align_corners", False), torch.float32)  # torch's opmath weights
    elif op == "interpolate":
        fn = lambda t: F.interpolate(t, size=attrs["size"])  # noqa: E731
    elif op == "avg_pool":
        fn = torch_pool(op, x, attrs)
    else:
        fn = lambda t: F.adaptive_avg_pool2d(t, attrs["output_size"])  # noqa: E731
    # One rounding of a float32 result (far finer than the half type): 0.5 ULP, plus the
    # truth's own rounding: 1 ULP, relative.
    out = check_composite(op, [x], fn, 1, **attrs)
    assert out.dtype == np.dtype(dtype)
