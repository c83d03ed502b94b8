"""torch.fft and torch.stft through the frontend (frontend/aten/fft.py): forward and
gradients against eager on the backends that lower them, and a clear refusal elsewhere."""

from __future__ import annotations

import pytest
import torch

import parity
from parity.frontend.errors import UnsupportedAtenOp

BACKENDS = ["reference", "xla", "onnx", "triton"]  # (triton: torch.fft as extern calls)


def spectra(x):
    return (torch.fft.fft(x.to(torch.complex64), dim=0, norm="ortho"), torch.fft.ifft2(x.to(torch.complex64)),
            torch.fft.rfft(x, norm="forward"), torch.fft.irfft(torch.fft.rfft(x, dim=0), n=x.shape[0], dim=0),
            torch.fft.rfft(x, n=12), torch.fft.fft(x))  # padded to 12; a real input's full spectrum


def rfft_magnitude(x):
    return torch.fft.rfft(x).abs().sum()


def fnet_mixer(x):
    """FNet's token mixing: the real part of a 2-d FFT over sequence and hidden dims."""
    return torch.fft.fftn(x, dim=(-2, -1)).real


def spectrogram(x):
    s = torch.stft(x, n_fft=16, hop_length=4, window=torch.hann_window(16), return_complex=True)
    return (s.abs() ** 2 + 1e-3).log()


def stft_istft(x):
    """A spectral edit: stft, a complex gain, istft back to the signal (overlap-add)."""
    window = torch.hann_window(16)
    s = torch.stft(x, n_fft=16, hop_length=4, window=window, return_complex=True)
    return torch.istft(s * (1 + 0.5j), n_fft=16, hop_length=4, window=window, length=x.shape[-1]).tanh()


def stft_variants(x):
    """torch.stft's settings, each kept whole as the IR's stft (frontend/spectral.py): zero
    padding and normalized, two-sided, no centring with a 10-sample window of ones, a 1-d signal."""
    def mag(s):
        return (s.abs() + 0.1).log().flatten()
    hann = torch.hann_window(15) + 0.1
    return torch.cat([
        mag(torch.stft(x, 16, 4, window=torch.hann_window(16), pad_mode="constant", normalized=True,
                       return_complex=True)),
        mag(torch.stft(x, 15, 5, window=hann, onesided=False, return_complex=True)),
        mag(torch.stft(x, 16, 3, win_length=10, center=False, return_complex=True)),
        mag(torch.stft(x[0], 8, 2, window=torch.hann_window(8), return_complex=True)),
    ])


def istft_variants(x):
    """torch.istft's settings kept whole: normalized with a shorter window, a two-sided
    spectrum, no centring and a longer result (zero-filled), a window of ones."""
    window = torch.hann_window(16) + 0.2
    s = torch.stft(x, 16, 4, window=window, normalized=True, return_complex=True) * (1 + 0.5j)
    two = torch.stft(x, 16, 4, window=window, onesided=False, return_complex=True)
    plain = torch.stft(x, 16, 4, center=False, return_complex=True)
    return torch.cat([
        torch.istft(s, 16, 4, window=window, normalized=True).flatten(),
        torch.istft(two, 16, 4, window=window, onesided=False, length=x.shape[-1] - 5).flatten(),
        torch.istft(plain, 16, 4, center=False, length=x.shape[-1] + 3)[..., 8:-8].flatten(),
    ]).tanh()


def phase_roundtrip(x):
    return torch.fft.irfft(torch.fft.rfft(x, norm="ortho") * 2j, n=x.shape[-1], norm="ortho").sin()


@pytest.mark.parametrize("backend", BACKENDS)
def test_forward_matches_eager_for_every_norm_dim_and_kind(backend):
    x = torch.randn(6, 10)
    for got, expected in zip(parity.compile(spectra, backend=backend)(x), spectra(x)):
        assert got.dtype == expected.dtype and got.shape == expected.shape
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def _no_worse_than_eager(got, eager, oracle, what):
    """``got`` is at most 4x eager's own float32 error against the float64 ``oracle`` (max norm),
    plus 1e-6 of the oracle's scale: a log-spectrogram's gradient is ill-conditioned near
    small magnitudes, where eager itself is 1e-4 off and a fixed rtol vs eager is a coin toss."""
    oracle = oracle.to(got.dtype.to_real() if got.is_complex() else got.dtype).double()
    ours, theirs = (got.double() - oracle).abs().max(), (eager.double() - oracle).abs().max()
    limit = 4 * theirs + 1e-6 * oracle.abs().max()
    assert ours <= limit, f"{what}: max error {ours:.3g} vs float64, eager's {theirs:.3g} (limit {limit:.3g})"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, shape", [(rfft_magnitude, (3, 8)), (fnet_mixer, (2, 5, 6)), (spectrogram, (2, 64)),
                                       (phase_roundtrip, (3, 7)), (stft_istft, (2, 64)),
                                       (stft_variants, (2, 50)), (istft_variants, (2, 48))],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_gradients_match_eager(backend, fn, shape):
    torch.manual_seed(sum(shape))
    x = torch.randn(*shape, requires_grad=True)
    ours = x.detach().clone().requires_grad_(True)
    exact = x.detach().double().requires_grad_(True)
    got, expected, oracle = parity.compile(fn, backend=backend)(ours), fn(x), fn(exact)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    _no_worse_than_eager(got, expected, oracle, "forward")
    weight = torch.randn_like(expected)
    (got * weight).sum().backward()
    (expected * weight).sum().backward()
    (oracle * weight.double()).sum().backward()
    _no_worse_than_eager(ours.grad, x.grad, exact.grad, "gradient")


def test_an_fft_on_a_backend_without_it_names_the_reason():
    with pytest.raises(UnsupportedAtenOp) as info:
        parity.compile(rfft_magnitude, backend="numpy")(torch.randn(2, 8))  # the plugin template
    assert "does not claim the IR op 'rfft': the numpy template has no complex kernels" in str(info.value)
