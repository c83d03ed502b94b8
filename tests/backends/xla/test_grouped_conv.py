"""Grouped convolutions on XLA: a NaN or inf stays in its group, and the lowering stays one
convolution (no loop, no conditional), so a depthwise net's backward compiles as fast as
its forward.

XLA:CPU runs a float64 depthwise convolution as a dense one whose kernel is zero outside
each group, so a non-finite input reached every group (0 * NaN; fuzz regression
xla-convolution-f64-2976eceb). The rule gives such a conv a zero channel beside each
group's one; every other grouped conv XLA keeps apart itself, which the matrix below
measures per dtype and geometry.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from jax import lax

from parity.backends.xla import XlaBackend
from parity.ir import DType, GraphBuilder, evaluate

DTYPES = [DType.float16, DType.bfloat16, DType.float32, DType.float64]

# (batch, groups, in channels per group, out channels per group, spatial, kernel,
#  strides, padding, lhs dilation, rhs dilation)
GEOMETRIES = {
    "1d-stride2": (2, 4, 1, 1, (6,), (3,), (2,), ((1, 1),), (1,), (1,)),
    "depthwise-x2": (2, 3, 1, 2, (5, 5), (3, 3), (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1)),
    "grouped": (2, 3, 2, 2, (5, 4), (3, 2), (1, 1), ((1, 1), (0, 1)), (1, 1), (1, 1)),
    "transposed": (2, 4, 1, 1, (4, 4), (3, 3), (1, 1), ((2, 2), (2, 2)), (2, 2), (1, 1)),  # input gradient
    "rhs-dilated": (1, 4, 1, 1, (7, 7), (3, 3), (1, 1), ((0, 0), (0, 0)), (1, 1), (2, 2)),
    "mobilenet": (2, 240, 1, 1, (3, 3), (3, 3), (1, 1), ((2, 2), (2, 2)), (1, 1), (1, 1)),
    # a depthwise weight gradient as one grouped conv: lhs [1, groups * batch, *in], kernel = output gradient
    "weight-gradient": (1, 48, 2, 1, (8, 8), (6, 6), (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1)),
}


def _graph(dtype, geometry):
    n, groups, cg, og, spatial, kernel, strides, padding, lhs_dil, rhs_dil = geometry
    b = GraphBuilder()
    x, w = b.input(dtype[n, groups * cg, *spatial]), b.input(dtype[groups * og, cg, *kernel])
    return b.build([b.convolution(x, w, window_strides=strides, padding=padding, lhs_dilation=lhs_dil,
                                  rhs_dilation=rhs_dil, feature_group_count=groups)])


@pytest.fixture(scope="module")
def backend():
    return XlaBackend()


@pytest.mark.parametrize("name", list(GEOMETRIES))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.short)
def test_non_finite_values_stay_in_their_group(backend, dtype, name):
    geometry = GEOMETRIES[name]
    n, groups, cg, og, spatial, kernel = geometry[:6]
    graph = _graph(dtype, geometry)
    rng = np.random.default_rng(7)
    data = rng.standard_normal((n, groups * cg, *spatial)).astype(dtype.numpy)
    taps = (rng.standard_normal((groups * og, cg, *kernel)) + 3).astype(dtype.numpy)  # no zero taps
    centre = tuple(s // 2 for s in spatial)
    data[(0, cg * (groups - 1), *centre)] = np.nan  # the last group's input
    data[(n - 1, 0, *centre)] = np.inf  # the first group's input
    taps[(og * (groups // 2), 0, *(0 for _ in kernel))] = -np.inf  # a middle group's tap
    got = np.asarray(backend.compile(graph, "cpu")(data, taps)[0]).astype(np.float64)
    want = np.asarray(evaluate(graph, [data, taps])[0]).astype(np.float64)
    assert got.shape == want.shape
    for kind in (np.isnan, np.isposinf, np.isneginf):
        bad = kind(got) != kind(want)
        assert not bad.any(), f"{kind.__name__} differs at output {np.argwhere(bad)[:4].tolist()}"
    assert np.isfinite(want).any()  # most groups saw no non-finite value
    finite = np.isfinite(want)
    rtol = {DType.float16: 1e-2, DType.bfloat16: 5e-2, DType.float32: 1e-5, DType.float64: 1e-12}[dtype]
    np.testing.assert_allclose(got[finite], want[finite], rtol=rtol, atol=rtol * np.abs(want[finite]).max())


def test_xla_alone_still_lets_a_float64_depthwise_nan_reach_other_groups():
    """The reason for the zero channels, on plain jax.jit: drop them once this fails."""
    numbers = lax.ConvDimensionNumbers((0, 1, 2), (0, 1, 2), (0, 1, 2))
    x, w = np.ones((1, 4, 5)), np.ones((4, 1, 3))
    x[0, 0, 2] = np.nan
    with jax.enable_x64(True):
        out = jax.jit(lambda x, w: lax.conv_general_dilated(
            x, w, (1,), ((0, 0),), dimension_numbers=numbers, feature_group_count=4,
            precision=lax.Precision.HIGHEST))(x, w)
    assert np.isnan(np.asarray(out)[0, 1:]).any()


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.short)
def test_a_depthwise_backward_is_straight_line_code(backend, dtype):
    """MobileNet's depthwise conv and its two gradients (input: lhs-dilated transposed conv;
    weight: one conv grouped by channel) lower to convolutions: no while loop (a group-by-group
    lax.map cost ~0.6 s of XLA compile each), and one conditional, the NaN mask's gate of the
    only conv with padding zeros (dx; contraction.py: ~17 ms of compile each, measured as 20
    padded convs 0.30 s -> 0.66 s)."""
    b = GraphBuilder()
    x, w, dy = b.input(dtype[2, 8, 9, 9]), b.input(dtype[8, 1, 3, 3]), b.input(dtype[2, 8, 4, 4])
    forward = b.convolution(x, w, window_strides=(2, 2), padding=((0, 0), (0, 0)), lhs_dilation=(1, 1),
                            rhs_dilation=(1, 1), feature_group_count=8)
    dx = b.convolution(dy, b.reverse(w, dimensions=(2, 3)), window_strides=(1, 1), padding=((2, 2), (2, 2)),
                       lhs_dilation=(2, 2), rhs_dilation=(1, 1), feature_group_count=8)
    lhs = b.reshape(b.transpose(x, permutation=(1, 0, 2, 3)), shape=(1, 16, 9, 9))  # [1, channel-major batch]
    dw = b.convolution(lhs, b.transpose(dy, permutation=(1, 0, 2, 3)), window_strides=(1, 1),
                       padding=((0, 0), (0, 0)), lhs_dilation=(1, 1), rhs_dilation=(2, 2), feature_group_count=8)
    run = backend.compile(b.build([forward, dx, dw]), "cpu")
    hlo = run.hlo_text()
    assert " while(" not in hlo and hlo.count(" conditional(") == 1
    assert hlo.count(" convolution(") >= 3
