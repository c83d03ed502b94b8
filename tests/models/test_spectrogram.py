"""The spectrogram zoo model's own pieces (conformance/models/spectrogram.py): the mel
filterbank it computes from numbers, and a window that really receives a gradient."""

import math

import torch

from parity.conformance.models import get_model
from parity.conformance.models.spectrogram import mel_filterbank


def test_the_mel_filterbank_is_triangles_evenly_spaced_on_the_htk_mel_scale():
    rate, mels = 8000, 6
    fb = mel_filterbank(n_freqs=rate // 2 + 1, n_mels=mels, sample_rate=rate).double()  # 1 Hz bins
    freqs = torch.arange(rate // 2 + 1, dtype=torch.float64)
    top = 2595 * math.log10(1 + (rate / 2) / 700)
    points = [700 * (10 ** (top * i / (mels + 1) / 2595) - 1) for i in range(mels + 2)]  # Hz
    for m in range(mels):
        low, centre, high = points[m], points[m + 1], points[m + 2]
        assert abs(float(freqs[fb[:, m].argmax()]) - centre) <= 1.0  # peaks at its centre, to the bin
        outside = (freqs <= low) | (freqs >= high)
        assert bool((fb[outside, m] == 0).all()) and bool((fb[~outside, m] > 0).all())
    # neighbouring triangles share their edges: between the first and last centres they sum to one
    inside = (freqs >= points[1]) & (freqs <= points[-2])
    torch.testing.assert_close(fb[inside].sum(1), torch.ones(int(inside.sum()), dtype=torch.float64),
                               rtol=0, atol=1e-6)


def test_the_window_is_learnt_through_the_stft():
    # The zoo compares every parameter's gradient; the window's is the one that goes through
    # the FFT's backward, so it must not be zero (a vacuous comparison).
    spec = get_model("spectrogram")
    model, inputs = spec.instantiate()
    spec.loss(model(*inputs), inputs).backward()
    assert float(model.window.grad.abs().max()) > 1e-3
    torch.testing.assert_close(model.window.detach(), torch.hann_window(32))
