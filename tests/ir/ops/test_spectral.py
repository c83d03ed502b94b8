"""stft / istft: the composites compute torch.stft / torch.istft (float64, every setting the
frontend hands them), expand into primitives only, and their type rules say what is wrong."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from parity.ir import GraphBuilder, TypeRuleError, evaluate, f32
from parity.ir.dtypes import DType
from parity.ir.types import TensorType

sys.path.insert(0, str(Path(__file__).parent))
from catalogue import documented_ops  # noqa: E402
from composite_check import fully_expanded  # noqa: E402
from torch_reference import non_primitives  # noqa: E402

_SETTINGS = list(itertools.product(
    [(16, 4, 16), (16, 4, 7), (15, 5, 15), (8, 1, 6), (1, 1, 1)],  # n_fft, hop, win_length
    [(True, "reflect"), (True, "constant"), (False, "reflect")],
    [False, True],  # normalized
    [True, False],  # onesided
))


def _run(x, w, **attrs):
    b = GraphBuilder()
    xi = b.input(TensorType(DType.float64, x.shape))
    wi = b.input(TensorType(DType.float64, w.shape))
    s = b.stft(xi, wi, **attrs)
    istft_attrs = {k: v for k, v in attrs.items() if k != "pad_mode"}
    outs = [s] + [b.istft(s, wi, **istft_attrs, length=length) for length in (0, 23, x.shape[-1] + 9)]
    return evaluate(b.build(outs), [x, w])


@pytest.mark.parametrize(("frame", "pad", "normalized", "onesided"), _SETTINGS)
def test_stft_and_istft_compute_torchs(frame, pad, normalized, onesided):
    (n_fft, hop, win), (center, mode) = frame, pad
    rng = np.random.default_rng(n_fft * 100 + hop)
    x, w = rng.standard_normal((2, 41)), rng.uniform(0.5, 1.5, win)
    attrs = dict(n_fft=n_fft, hop_length=hop, center=center, pad_mode=mode, normalized=normalized, onesided=onesided)
    spec, *signals = _run(x, w, **attrs)
    expected = torch.stft(torch.tensor(x), n_fft, hop, win, torch.tensor(w), center, mode, normalized, onesided,
                          return_complex=True).numpy()
    assert spec.shape == expected.shape and spec.dtype == np.complex128
    np.testing.assert_allclose(spec, expected, rtol=0, atol=1e-12)
    for length, y in zip((None, 23, 50), signals):
        try:
            back = torch.istft(torch.tensor(expected), n_fft, hop, win, torch.tensor(w), center, normalized, onesided,
                               length).numpy()
        except RuntimeError as err:
            if n_fft == 1 and center and length is None:  # torch slices [0:-0]: nothing, then fails
                assert y.shape == (2, 41)
                continue
            # a sample no window covers: torch raises, the IR divides by 0
            assert "window overlap add min" in str(err) and not np.isfinite(y).all()
            continue
        assert y.shape == back.shape
        np.testing.assert_allclose(y, back, rtol=0, atol=1e-12)


def test_a_hann_window_round_trips_a_signal():
    x = np.random.default_rng(1).standard_normal(64)
    w = torch.hann_window(16, dtype=torch.float64).numpy()
    spec, y, *_ = _run(x, w, n_fft=16, hop_length=4)
    np.testing.assert_allclose(y, x, atol=1e-12)


@pytest.mark.parametrize("op", ["stft", "istft"])
def test_expands_into_primitives_only(op):
    types = ([TensorType(DType.float32, (2, 64)), f32[10]] if op == "stft"
             else [TensorType(DType.complex64, (2, 9, 17)), f32[10]])
    assert not non_primitives(fully_expanded(op, types, n_fft=16, hop_length=4))


@pytest.mark.parametrize(("op", "types", "attrs", "message"), [
    ("stft", [TensorType(DType.float32, (8,)), f32[16]], {}, "reflect padding by n_fft // 2 = 8 needs a signal "
                                                            "longer than that, got 8 samples"),
    ("stft", [TensorType(DType.float32, (64,)), f32[17]], {}, "window f32[17] must be rank 1 with 1 to n_fft = 16"),
    ("istft", [TensorType(DType.complex64, (9, 3)), f32[16]], {"onesided": False}, "must have 16 frequencies"),
])
def test_type_rules_say_what_is_wrong(op, types, attrs, message):
    b = GraphBuilder()
    with pytest.raises(TypeRuleError, match=message.replace("[", r"\[").replace("]", r"\]")):
        b.op(op, *(b.input(t) for t in types), n_fft=16, hop_length=4, **attrs)


def test_the_catalogue_names_them():
    assert {"stft", "istft"} <= documented_ops("Short-time Fourier transforms")
