"""Short-time transforms: ``stft`` and ``istft`` over torch's settings.

Each setting varies one thing from a 16-point, hop-4 transform of 64 samples with a
random positive window: n_fft odd or long, hop 1 or not dividing n_fft, a window shorter
than n_fft (zero-padded, centred), center with reflect or zero padding or none,
normalized, two-sided, a rank-1 or rank-3 signal, and speech's 400/160 framing of a
second at 16 kHz (``speech``). A Hann window (zero at its ends) runs where the envelope it
leaves stays positive on the kept samples. ``specials`` put a NaN, an infinity and a
huge value into one signal (stft) or one frame (istft) each and leave another plain: an
stft frame that reads one is not finite where the oracle's is not; istft's samples that
a poisoned frame reaches are masked (which of an irfft's results are finite is
implementation-defined, ir/ops/fft.py), the others compared; ``envelope_zero`` has a
sample no window reaches (0/0: NaN, where torch raises).
"""

from __future__ import annotations

import numpy as np

from ...ir.dtypes import DType
from ...ir.ops.spectral import frame_indices, istft_span
from ...ir.types import tensor as _t
from .. import values as V
from ..case import Case, ErrorCase
from .common import EDGE, LAYOUT, case, mask_where, ops_of

IR_FAMILIES = ("spectral",)
OPS = ops_of(IR_FAMILIES)

_REAL = (DType.float32, DType.float64)
_BASE = {"n_fft": 16, "hop_length": 4, "center": True, "normalized": False, "onesided": True}
# (name, attrs beyond _BASE, window length or "hann", signal shape, tags)
_SETTINGS = [
    ("base", {}, 16, (2, 64), ()),
    ("hann", {}, "hann", (2, 64), ()),
    ("reflect_short", {}, 16, (3, 9), (EDGE,)),  # the reflection spans nearly the whole signal
    ("constant_pad", {"pad_mode": "constant"}, 16, (2, 64), ()),
    ("no_center", {"center": False}, 16, (2, 64), ()),
    ("no_center_uneven", {"center": False, "hop_length": 5}, 16, (2, 63), ()),  # the last samples fit no frame
    ("win_length", {}, 10, (2, 64), ()),
    ("normalized", {"normalized": True}, 16, (2, 64), ()),
    ("twosided", {"onesided": False}, 16, (2, 64), ()),
    ("odd_n_fft", {"n_fft": 15, "hop_length": 5}, 15, (2, 61), ()),
    ("hop1", {"hop_length": 1}, 16, (1, 40), ()),
    ("n_fft1", {"n_fft": 1, "hop_length": 1, "center": False}, 1, (2, 5), (LAYOUT,)),
    ("one_frame", {"center": False}, 16, (2, 16), (LAYOUT,)),
    ("rank1", {}, 16, (50,), (LAYOUT,)),
    ("rank3", {"hop_length": 8}, 16, (2, 3, 40), (LAYOUT,)),
    ("speech", {"n_fft": 400, "hop_length": 160}, "hann", (2, 16000), ()),
]


def _window(rng, d: DType, spec, n_fft: int) -> np.ndarray:
    if spec == "hann":  # periodic, as torch.hann_window
        return V.cast(0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n_fft) / n_fft), d)
    return V.cast(rng.uniform(0.5, 1.5, size=(spec,)), d)


def _draw(dtype: DType, shape: tuple, win, n_fft: int):
    """A signal (real dtype) or spectrum (complex) of ``shape`` and a window of its real dtype."""
    def inputs(rng):
        return V.normal(rng, dtype, shape, 1.0), _window(rng, dtype.real_dtype, win, n_fft)
    return inputs


def _attrs(extra: dict, op: str) -> dict:
    attrs = {**_BASE, **extra}
    if op == "istft":
        attrs.pop("pad_mode", None)
    return attrs


def _frames(attrs: dict, length: int) -> int:
    padded = length + 2 * (attrs["n_fft"] // 2) if attrs["center"] else length
    return 1 + (padded - attrs["n_fft"]) // attrs["hop_length"]


def _spectrum_shape(attrs: dict, shape: tuple) -> tuple:
    freqs = attrs["n_fft"] // 2 + 1 if attrs["onesided"] else attrs["n_fft"]
    return (*shape[:-1], freqs, _frames(attrs, shape[-1]))


def _stft_cases(d: DType) -> list[Case]:
    out = []
    for name, extra, win, shape, tags in _SETTINGS:
        attrs = _attrs(extra, "stft")
        out.append(case("stft", d, name, _draw(d, shape, win, attrs["n_fft"]), attrs, tags=tags or ("random",)))
    out.append(case("stft", d, "specials", _poisoned_signals(d), _BASE, tags=(EDGE,)))
    return out


def _poisoned_signals(d: DType):
    """Four signals of 64 samples; the first three hold a NaN, an inf and 1e30 (f32: its square overflows)."""
    def inputs(rng):
        x = V.normal(rng, d, (4, 64), 1.0).copy()
        x[0, 10], x[1, 33], x[2, 60] = np.nan, np.inf, 1e30
        return x, _window(rng, d, 16, 16)
    return inputs


def _istft_cases(d: DType) -> list[Case]:
    out, c = [], d.complex_dtype
    for name, extra, win, shape, tags in _SETTINGS:
        if name in ("reflect_short", "constant_pad", "no_center_uneven"):
            continue  # stft's padding and leftovers: istft sees only the spectrum
        if win == "hann" and name not in ("speech", "hann"):
            continue
        attrs = _attrs(extra, "istft")
        spectrum = _spectrum_shape(attrs, shape)
        draw = _draw(c, spectrum, win, attrs["n_fft"])
        out.append(case("istft", c, name, draw, attrs, tags=tags or ("random",)))
        if name == "base":  # length trims, or zero-fills past what the frames cover
            for label, length in (("length_short", 37), ("length_long", 80)):
                out.append(case("istft", c, label, draw, {**attrs, "length": length}))
    # center=False with a Hann window: sample 0 meets only w[0] = 0, so 0/0 is NaN there (torch raises)
    uncovered = _attrs({"center": False}, "istft")
    out.append(case("istft", c, "envelope_zero", _draw(c, _spectrum_shape(uncovered, (2, 64)), "hann", 16), uncovered,
                    tags=(EDGE,)))
    out.append(case("istft", c, "specials", _poisoned_frames(c), _BASE, tags=(EDGE,), mask=_masked_frames({**_BASE, "length": 0})))
    return out


def _poisoned_frames(c: DType):
    """Three spectra of 17 frames; frames 2, 8 and 14 of the first hold a NaN, an inf and 1e30."""
    def inputs(rng):
        spec = V.normal(rng, c, _spectrum_shape(_BASE, (3, 64)), 1.0).copy()
        spec[0, 3, 2], spec[0, 5, 8], spec[0, 1, 14] = np.nan, np.inf, 1e30
        return spec, _window(rng, c.real_dtype, 16, 16)
    return inputs


def _masked_frames(attrs: dict):
    """Samples no frame with a non-finite spectrum reaches (which of such a frame's
    irfft results are finite is implementation-defined)."""
    def finite_reach(spec, window):
        frames = spec.shape[-1]
        full, start, end = istft_span(attrs, frames)
        bad = ~np.isfinite(spec).all(axis=-2)  # [..., frames]
        index = frame_indices(full, attrs["n_fft"], attrs["hop_length"], frames)
        touched = np.zeros((*spec.shape[:-2], full), bool)
        np.logical_or.at(touched, (..., index), np.repeat(bad, attrs["n_fft"], axis=-1))
        return ~touched[..., start:end]
    return mask_where(finite_reach)


def cases() -> list[Case]:
    return [c for d in _REAL for c in _stft_cases(d) + _istft_cases(d)]


f32, f64, c64 = DType.float32, DType.float64, DType.complex64
_S = {"n_fft": 16, "hop_length": 4}

ERRORS = (
    ErrorCase("stft", (_t(c64, 64), _t(f32, 16)), _S, "dtype c64 is not accepted", "complex_signal"),
    ErrorCase("stft", (_t(f32, 64), _t(f64, 16)), _S, "dtype f64 is not accepted", "window_dtype"),
    ErrorCase("stft", (_t(f32, 64), _t(f32, 17)), _S, "must be rank 1 with 1 to n_fft = 16 elements", "long_window"),
    ErrorCase("stft", (_t(f32, 8), _t(f32, 16)), _S, "reflect padding by n_fft // 2 = 8 needs a signal longer",
              "short_reflect"),
    ErrorCase("stft", (_t(f32, 8), _t(f32, 16)), {**_S, "center": False}, "has 8 samples, fewer than n_fft = 16",
              "short_signal"),
    ErrorCase("stft", (_t(f32, 64), _t(f32, 16)), {**_S, "hop_length": 0}, "must be >= 1, got 0", "hop0"),
    ErrorCase("stft", (_t(f32, 64), _t(f32, 16)), {**_S, "pad_mode": "circular"}, "must be one of", "pad_mode"),
    ErrorCase("istft", (_t(c64, 9, 5), _t(f32, 16)), {**_S, "onesided": False}, "must have 16 frequencies",
              "freqs"),
    ErrorCase("istft", (_t(c64, 9, 5), _t(f32, 16)), {**_S, "length": -1}, "must be >= 0", "length"),
)
