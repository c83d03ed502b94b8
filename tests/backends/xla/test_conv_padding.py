"""A padded convolution multiplies its padding zeros, as the IR says (0 * inf = NaN): small
ones pad explicitly by the run-time zero, large ones keep the NaN gate (backends/xla/contraction.py)."""

import numpy as np
import pytest

from parity.backends.xla import contraction
from parity.backends.xla.backend import XlaBackend
from parity.ir import GraphBuilder, bf16, f16, f32, f64


def _padded_conv(dtype, n: int, channels: int = 1):
    """A 1-D conv of n positions, kernel [inf, 1] on every channel pair, one zero of padding each side."""
    b = GraphBuilder()
    x, w = b.input(dtype[1, channels, n]), b.input(dtype[channels, channels, 2])
    g = b.build([b.convolution(x, w, window_strides=[1], padding=[(1, 1)], lhs_dilation=[1], rhs_dilation=[1])])
    kernel = np.ones((channels, channels, 2), dtype.numpy)
    kernel[..., 0] = np.inf
    return XlaBackend().compile(g, "cpu"), [np.ones((1, channels, n), dtype.numpy), kernel]


@pytest.mark.parametrize("dtype", [f32, f64, f16, bf16])
def test_a_small_convolution_pads_by_the_run_time_zero(dtype):
    run, args = _padded_conv(dtype, 3)
    got = np.asarray(run(*args)[0], np.float64)[0, 0].tolist()
    assert np.isnan(got[0]) and got[1:] == [np.inf] * 3  # 0 * inf at the left border
    assert " conditional(" not in run.hlo_text()  # no gate: the padding is explicit


def test_a_large_convolution_keeps_the_gate():
    n = contraction.EXPLICIT_PAD_MACS // 8 + 1  # 4 channels x 2 taps per output: past the bound
    run, args = _padded_conv(f32, n, channels=4)
    got = np.asarray(run(*args)[0])[0, 0]
    assert np.isnan(got[0]) and np.isinf(got[1:]).all()
    assert " conditional(" in run.hlo_text()


def test_finite_kernels_give_the_gated_results(monkeypatch):
    """Explicit zeros add nothing: a random padded conv equals the same conv above the bound."""
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x, w = b.input(f32[2, 3, 8, 8]), b.input(f32[4, 3, 3, 3])
    g = b.build([b.convolution(x, w, window_strides=[2, 1], padding=[(1, 1), (2, 0)], lhs_dilation=[1, 1],
                               rhs_dilation=[1, 2])])
    args = [rng.standard_normal((2, 3, 8, 8)).astype(np.float32), rng.standard_normal((4, 3, 3, 3)).astype(np.float32)]
    explicit = XlaBackend().compile(g, "cpu")
    got = explicit(*args)[0]
    assert " conditional(" not in explicit.hlo_text()
    monkeypatch.setattr(contraction, "EXPLICIT_PAD_MACS", 0)  # every conv gated
    gated = XlaBackend().compile(g, "cpu")
    assert " conditional(" in gated.hlo_text()
    np.testing.assert_array_equal(got, gated(*args)[0])
