"""torch.stft / torch.istft reach the IR as one ``stft`` / ``istft`` each (frontend/spectral.py),
and every call the composites cannot express is left to torch's decomposition, as before."""

from __future__ import annotations

import pytest
import torch

import parity
from parity.frontend import recording_backend
from parity.frontend.errors import UnsupportedAtenOp
from parity.frontend.spectral import _ops

from .test_fft import istft_variants, spectrogram, stft_istft, stft_variants


def _ir_op_counts(fn, *args) -> list[dict]:
    """The op counts of every IR graph parity.compile's capture makes of ``fn`` (with a
    backward pass when an input requires grad)."""
    graphs = []

    def keep(compiled, kind):
        graphs.append(compiled.translation.graph.op_counts())
        return compiled

    torch._dynamo.reset()
    out = torch.compile(fn, backend=recording_backend(keep))(*args)
    if out.requires_grad:
        out.sum().backward()
    torch._dynamo.reset()
    return graphs


def _explained(fn, *args) -> str:
    torch._dynamo.reset()
    return str(parity.explain(fn, *args))


@pytest.mark.parametrize(("fn", "stft", "istft"), [(spectrogram, 1, 0), (stft_istft, 1, 1), (stft_variants, 4, 0),
                                                   (istft_variants, 3, 3)], ids=lambda v: getattr(v, "__name__", ""))
def test_each_call_is_one_composite(fn, stft, istft):
    x = torch.randn(2, 64)
    (counts,) = _ir_op_counts(fn, x)
    assert (counts.get("stft", 0), counts.get("istft", 0)) == (stft, istft), counts
    assert not {"rfft", "irfft", "fft", "gather", "scatter"} & set(counts), counts
    report = _explained(fn, x)
    assert f"parity.stft.default x{stft}" in report
    assert "_fft_r2c" not in report and "unfold" not in report and "_fft_c2r" not in report


def test_training_keeps_the_composite_in_the_forward_graph():
    x = torch.randn(2, 64, requires_grad=True)
    window = torch.hann_window(16).requires_grad_(True)
    forward, backward = _ir_op_counts(lambda x, w: torch.stft(x, 16, 4, window=w, return_complex=True).abs(), x,
                                      window)
    assert forward.get("stft") == 1 and "rfft" not in forward
    assert "stft" not in backward and "ifft" in backward  # its gradient: the transform's adjoint


def _circular(x):
    return torch.stft(x, 16, 4, window=torch.hann_window(16), pad_mode="circular", return_complex=True).abs()


def _complex_signal(x):
    return torch.stft(x * (1 + 1j), 16, 4, window=torch.hann_window(16), return_complex=True).abs()


def _aligned(x):
    return torch.stft(x, 16, 4, window=torch.hann_window(16), center=False, align_to_window=True,
                      return_complex=True).abs()


def _wider_window(x):  # a float64 window on a float32 signal: torch promotes, the composite does not
    return torch.stft(x, 16, 4, window=torch.hann_window(16, dtype=torch.float64), return_complex=True).abs()


@pytest.mark.parametrize("fn", [_circular, _complex_signal, _aligned, _wider_window], ids=lambda f: f.__name__)
def test_calls_the_composite_cannot_express_stay_decomposed_and_still_match(fn):
    x = torch.randn(2, 64)
    expected = fn(x)  # torch 2.13 runs each of these eagerly
    assert "parity.stft" not in _explained(fn, x)
    torch._dynamo.reset()
    # strict=False: a complex signal's framing gathers complex values, which no backend claims (as before)
    torch.testing.assert_close(parity.compile(fn, backend="reference", strict=False)(x), expected, rtol=1e-5,
                               atol=1e-5)


def test_symbolic_sizes_stay_decomposed_and_compile_per_shape():
    """Under dynamic=True the signal's length is symbolic: the call is left to torch's
    decomposition, whose framing has no symbolic form (refused before); the graph now compiles
    per concrete shape (frontend/per_shape.py) with one PerShapeWarning, and gives eager's numbers."""
    from parity.frontend.per_shape import PerShapeWarning

    torch._dynamo.reset()
    x = torch.randn(2, 64)
    with pytest.warns(PerShapeWarning, match="symbolic size"):
        got = parity.compile(spectrogram, backend="reference", dynamic=True)(x)
    torch.testing.assert_close(got, spectrogram(x), rtol=1e-5, atol=1e-5)
    torch._dynamo.reset()


@pytest.mark.parametrize("center", [True, False])
def test_the_custom_ops_pass_torchs_opcheck(center):
    """Fake kernels, autograd registration and schema agree with the eager kernels (torch.library.opcheck)."""
    ops = _ops()
    x = torch.randn(2, 40, dtype=torch.float64, requires_grad=True)
    w = (torch.rand(12, dtype=torch.float64) + 0.5).requires_grad_(True)
    torch.library.opcheck(ops["stft"], (x, w, 16, 4, 12, center, "reflect", False, True))
    # (without centring, a 12-sample window leaves the first samples uncovered: torch raises)
    w = torch.ones(16, dtype=torch.float64, requires_grad=True) if not center else w
    spec = torch.stft(x.detach(), 16, 4, len(w), w.detach(), center, return_complex=True).requires_grad_(True)
    torch.library.opcheck(ops["istft"], (spec, w, 16, 4, len(w), center, False, True, 0))


def test_the_custom_ops_gradients_are_torchs():
    """The explicit backward formulas against torch's own autograd through stft/istft (float64)."""
    ops = _ops()
    x = torch.randn(2, 40, dtype=torch.float64)
    for settings in [(16, 4, 12, True, "reflect", False, True), (16, 3, 12, True, "constant", True, False),
                     (16, 4, 16, False, "reflect", True, True)]:
        n_fft, hop, win, center, mode, normalized, onesided = settings
        w = torch.rand(win, dtype=torch.float64) + 0.5
        torch.autograd.gradcheck(lambda x, w: ops["stft"](x, w, *settings), (x.requires_grad_(), w.requires_grad_()),
                                 fast_mode=True)
        spec = torch.stft(x.detach(), n_fft, hop, win, w, center, mode, normalized, onesided, return_complex=True)
        torch.autograd.gradcheck(
            lambda s, w: ops["istft"](s, w, n_fft, hop, win, center, normalized, onesided, 0),
            (spec.requires_grad_(), w.detach().requires_grad_()), fast_mode=True)


def test_a_backend_without_its_primitives_names_the_composite_and_strict_false_runs_torchs_kernel():
    """The numpy template has no complex kernels: the refusal names the user's stft and the
    primitive its decomposition needs; with strict=False the custom op runs torch.stft eagerly,
    gradients included."""
    torch._dynamo.reset()
    with pytest.raises(UnsupportedAtenOp) as info:
        parity.compile(spectrogram, backend="numpy")(torch.randn(2, 64))
    message = str(info.value)
    assert "parity.stft.default at " in message and "in spectrogram cannot run on backend 'numpy'" in message
    assert "does not claim the IR op 'rfft'" in message and "(needed by the decomposition of 'stft')" in message
    torch._dynamo.reset()
    x = torch.randn(2, 64, requires_grad=True)
    eager = x.detach().clone().requires_grad_(True)
    with pytest.warns(UserWarning):  # the one-line notes of what ran eagerly
        got = parity.compile(spectrogram, backend="numpy", strict=False)(x)
    expected = spectrogram(eager)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    got.sum().backward()
    expected.sum().backward()
    torch.testing.assert_close(x.grad, eager.grad, rtol=1e-4, atol=1e-4)
    torch._dynamo.reset()


def _methods(x):
    window = torch.hann_window(16)
    return x.stft(16, 4, window=window, return_complex=True).istft(16, 4, window=window, length=x.shape[-1])


def test_tensor_methods_are_kept_whole_too():
    x = torch.randn(64)
    (counts,) = _ir_op_counts(_methods, x)
    assert (counts.get("stft"), counts.get("istft")) == (1, 1), counts
    torch._dynamo.reset()
    torch.testing.assert_close(parity.compile(_methods, backend="reference")(x), _methods(x), rtol=1e-5, atol=1e-5)
    torch._dynamo.reset()


def _one_centred_frame(s):
    return torch.istft(s, 16, 4, window=torch.hann_window(16))


def test_an_istft_with_nothing_left_once_centred_keeps_todays_path():
    """One frame of 16, centred: nothing remains (eager torch fails on the empty envelope; the
    decomposed graph returns an empty signal). The IR's type rule refuses an empty result,
    so the call is not rewritten and compiles as before."""
    s = torch.stft(torch.randn(2, 16), 16, 4, window=torch.hann_window(16), center=False, return_complex=True)
    assert "parity.istft" not in _explained(_one_centred_frame, s)
    torch._dynamo.reset()
    assert parity.compile(_one_centred_frame, backend="reference")(s).shape == (2, 0)
    torch._dynamo.reset()
