"""A spectrogram front-end: ``torch.stft`` → magnitude → mel projection → log1p → an encoder block → a head.

The window is a parameter (initialised to Hann, as learnable audio front-ends do), so the
training step differentiates through the STFT: the window's gradient comes back through
``_fft_r2c``'s backward, the complex magnitude and the mel projection. The mel filterbank
is a fixed buffer computed here from numbers (:func:`mel_filterbank`, no torchaudio).

Example::

    >>> fb = mel_filterbank(n_freqs=17, n_mels=4, sample_rate=8000)
    >>> tuple(fb.shape), bool((fb >= 0).all()), bool((fb.sum(0) > 0).all())
    ((17, 4), True, True)
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .spec import ModelSpec
from .vit import EncoderBlock

SAMPLES, N_FFT, HOP, MELS, RATE, WIDTH, CLASSES, BATCH = 256, 32, 8, 8, 8000, 16, 4, 2
FRAMES = SAMPLES // HOP + 1  # torch.stft's centred frames


def _hz_to_mel(hz: float) -> float:
    return 2595.0 * math.log10(1.0 + hz / 700.0)  # the HTK mel scale


def _mel_to_hz(mel: torch.Tensor) -> torch.Tensor:
    return 700.0 * (10.0 ** (mel / 2595.0) - 1.0)


def mel_filterbank(n_freqs: int, n_mels: int, sample_rate: int) -> torch.Tensor:
    """Triangular filters ``[n_freqs, n_mels]`` evenly spaced on the mel scale from 0 Hz to Nyquist.

    Filter ``m`` rises linearly from mel point ``m`` to ``m + 1`` and falls to ``m + 2``
    (``n_mels + 2`` points), evaluated at the ``n_freqs`` bin frequencies of a one-sided
    spectrum; computed in float64, returned in float32.
    """
    freqs = torch.linspace(0.0, sample_rate / 2, n_freqs, dtype=torch.float64)
    points = _mel_to_hz(torch.linspace(0.0, _hz_to_mel(sample_rate / 2), n_mels + 2, dtype=torch.float64))
    low, centre, high = points[:-2], points[1:-1], points[2:]
    rising = (freqs[:, None] - low) / (centre - low)
    falling = (high - freqs[:, None]) / (high - centre)
    return torch.clamp(torch.minimum(rising, falling), min=0.0).float()


class Spectrogram(nn.Module):
    """Audio ``[batch, samples]`` → class logits, through a log-mel spectrogram and one encoder block."""

    def __init__(self):
        super().__init__()
        self.window = nn.Parameter(torch.hann_window(N_FFT))
        self.register_buffer("mel", mel_filterbank(N_FFT // 2 + 1, MELS, RATE))
        self.proj = nn.Linear(MELS, WIDTH)
        self.pos = nn.Parameter(torch.randn(1, FRAMES, WIDTH) * 0.02)
        self.block = EncoderBlock(WIDTH, heads=2)
        self.ln = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, CLASSES)

    def forward(self, audio: torch.Tensor) -> torch.Tensor:
        spec = torch.stft(audio, N_FFT, hop_length=HOP, window=self.window, return_complex=True)
        mel = torch.log1p(spec.abs().transpose(1, 2) @ self.mel)  # (batch, frames, mels)
        x = self.block(self.proj(mel) + self.pos)
        return self.head(self.ln(x.mean(1)))


def _inputs(g: torch.Generator) -> tuple:
    return (torch.randn(BATCH, SAMPLES, generator=g),)


def _loss(logits: torch.Tensor, inputs: tuple) -> torch.Tensor:
    return F.cross_entropy(logits, torch.tensor([1, 3]))


SPEC = ModelSpec("spectrogram", Spectrogram, _inputs, _loss,
                 description="STFT (learnable Hann window) → magnitude → mel → log1p → encoder block → head")
