"""parity.export of programs users write outside the model zoo (studies/export_probe): a
function that closes over a module or a tensor, and models with in-place ops (``ReLU(inplace=True)``,
``masked_fill_``, the in-place ops torch's own code and decompositions use), with static
shapes and with a dynamic batch; each file runs in onnxruntime and matches eager."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
import torch
from torch import nn

import parity


def run_file(path, feeds: dict[str, torch.Tensor]) -> list[np.ndarray]:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {k: v.numpy() for k, v in feeds.items()})


def assert_matches_eager(fn, path, feeds: dict[str, torch.Tensor]) -> None:
    with torch.no_grad():
        want = fn(*feeds.values())
    want = want if isinstance(want, tuple) else (want,)
    got = run_file(path, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-6)


def closes_over_gru():
    torch.manual_seed(0)
    gru = nn.GRU(4, 6, batch_first=True, bidirectional=True)
    return lambda x: gru(x)[0]


def closes_over_tensor():
    weight = torch.randn(4, 3, generator=torch.Generator().manual_seed(1))
    return lambda x: torch.tanh(x @ weight)


@pytest.mark.parametrize("make", [closes_over_gru, closes_over_tensor], ids=["module", "tensor"])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_a_function_closing_over_a_module_or_tensor_exports(make, dynamic, tmp_path):
    """``lambda x: model(x)[0]``: the closed-over weights are real tensors in the fast
    trace (not fake: torch refused them) and a KeyError in torch's strict export."""
    fn, path = make(), tmp_path / "f.onnx"
    x = torch.randn(2, 5, 4)
    parity.export(fn, (x,), path=path, input_names=["x"], dynamic_dims={"x": {0: "batch"}} if dynamic else None)
    for batch in (2, 3) if dynamic else (2,):
        assert_matches_eager(fn, path, {"x": torch.randn(batch, 5, 4)})


class InPlace(nn.Module):
    """In-place ops of a user's model: an inplace ReLU, masked_fill_ and a slice updated in place."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 6)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x, mask):
        y = self.act(self.fc(x))
        y.masked_fill_(mask, -1.0)
        y[:, 1:3].mul_(2).add_(1)
        return y


def padded_encoder():
    """TransformerEncoder with a padding mask: torch's _canonical_mask fills in place."""
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    return nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()


def test_in_place_ops_of_the_model_export_through_the_fast_trace(tmp_path, monkeypatch):
    """The trace functionalizes them: no second capture through torch.export (seconds slower)."""
    from parity.frontend import capture

    def no_capture(*args, **kwargs):
        raise AssertionError("the fast trace fell back to torch.export")

    monkeypatch.setattr(capture, "capture_program", no_capture)
    torch.manual_seed(0)
    model, path = InPlace().eval(), tmp_path / "m.onnx"
    feeds = {"x": torch.randn(3, 6), "mask": torch.rand(3, 6) > 0.5}
    parity.export(model, tuple(feeds.values()), path=path, input_names=list(feeds))
    assert_matches_eager(model, path, feeds)


@pytest.mark.parametrize("case", ["normalize", "reflect_pad", "encoder_padding_mask"])
def test_in_place_ops_of_torchs_decompositions_export(case, tmp_path):
    """F.normalize (clamp_min_), F.pad(mode="reflect") (copy_) and the encoder's mask (masked_fill_)."""
    encoder = padded_encoder()
    x3 = torch.randn(2, 5, 8)
    pad = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
    fn, feeds = {
        "normalize": (lambda x: torch.nn.functional.normalize(x, dim=1), {"x": torch.randn(3, 4)}),
        "reflect_pad": (lambda x: torch.nn.functional.pad(x, (2, 1, 1, 2), mode="reflect"),
                        {"x": torch.randn(1, 2, 5, 6)}),
        "encoder_padding_mask": (lambda x, pad: encoder(x, src_key_padding_mask=pad), {"x": x3, "pad": pad}),
    }[case]
    path = tmp_path / "f.onnx"
    parity.export(fn, tuple(feeds.values()), path=path, input_names=list(feeds))
    assert_matches_eager(fn, path, feeds)


def bicubic(x):
    return torch.nn.functional.interpolate(x, size=(8, 4), mode="bicubic", align_corners=False)


def bilinear_corners_scaled(x):
    """A scale whose output size is rounded down (5 * 1.5 -> 7): with align_corners the size alone counts."""
    return torch.nn.functional.interpolate(x, scale_factor=1.5, mode="bilinear", align_corners=True)


@pytest.mark.parametrize("fn", [bicubic, bilinear_corners_scaled])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_interpolate_exports(fn, dynamic, tmp_path):
    path = tmp_path / "f.onnx"
    parity.export(fn, (torch.randn(2, 3, 5, 6),), path=path, input_names=["x"],
                  dynamic_dims={"x": {0: "batch"}} if dynamic else None)
    for batch in (2, 3) if dynamic else (2,):
        assert_matches_eager(fn, path, {"x": torch.randn(batch, 3, 5, 6)})


def stft_round_trip(x):
    window = torch.hann_window(16)
    spectrum = torch.stft(x, 16, 4, window=window, return_complex=True)
    return torch.istft(spectrum, 16, 4, window=window, length=64)


def test_a_value_torchs_code_checks_at_trace_time_exports_through_torch_export(tmp_path):
    """torch.stft compares its window's values (``equal``), which the fast trace cannot read."""
    path = tmp_path / "f.onnx"
    parity.export(stft_round_trip, (torch.randn(2, 64),), path=path, input_names=["x"])
    assert_matches_eager(stft_round_trip, path, {"x": torch.randn(2, 64)})


def test_an_op_whose_output_shape_depends_on_data_names_the_line_and_the_fix(tmp_path):
    from parity.frontend.export import DataDependentShape

    def loss(log_probs, targets):
        return torch.nn.functional.ctc_loss(log_probs.log_softmax(2), targets, [6, 5], [3, 2])

    with pytest.raises(DataDependentShape) as error:
        parity.export(loss, (torch.randn(6, 2, 5), torch.randint(1, 5, (2, 3))), path=tmp_path / "f.onnx")
    message = str(error.value)
    line = loss.__code__.co_firstlineno + 1
    assert message.startswith(f"aten._ctc_loss.default at {__file__}:{line} in loss cannot be exported")
    assert "code: return torch.nn.functional.ctc_loss(" in message and "fix: compute that value outside" in message


def lstm():
    torch.manual_seed(0)
    return nn.LSTM(4, 6, num_layers=2, batch_first=True, bidirectional=True).eval()


def gru():
    torch.manual_seed(0)
    return nn.GRU(4, 6, batch_first=True, bidirectional=True).eval()


@pytest.mark.parametrize("make", [lstm, gru])
@pytest.mark.parametrize("closed_over", [False, True], ids=["module", "closure"])
def test_rnn_modules_export_with_static_shapes(make, closed_over, tmp_path):
    """The module itself (its output and final states) or a function calling it: oneDNN's
    LSTM kernel is off in the trace, and an RNN module is never functionalized."""
    module, path = make(), tmp_path / "f.onnx"
    fn = (lambda x: module(x)[0]) if closed_over else module  # noqa: E731 (users write this lambda)
    x = torch.randn(3, 5, 4)
    parity.export(fn, (x,), path=path, input_names=["x"])
    with torch.no_grad():
        want = torch.utils._pytree.tree_leaves(fn(x))
    got = run_file(path, {"x": x})
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-6)


def windows(x):
    return x.unfold(1, 4, 2).sum(-1) + x.unfold(1, 3, 2)[:, :, 0]


@pytest.mark.parametrize("fn", [windows, stft_round_trip])
def test_unfold_along_a_static_dim_exports_with_a_dynamic_batch(fn, tmp_path):
    """Tensor.unfold (and torch.stft's framing) of a [batch, 64] signal: one strided slice per window element."""
    path = tmp_path / "f.onnx"
    parity.export(fn, (torch.randn(2, 64),), path=path, input_names=["x"], dynamic_dims={"x": {0: "batch"}})
    for batch in (2, 3):
        assert_matches_eager(fn, path, {"x": torch.randn(batch, 64)})


def test_a_function_updating_its_input_in_place_exports_its_output_and_warns(tmp_path):
    """The file returns what the function returns; the in-place update of the input is one warning."""
    from parity.frontend.export import ExportWarning

    def shifted(x):
        x.add_(1)
        return x * 2

    path = tmp_path / "f.onnx"
    with pytest.warns(ExportWarning, match=r"updates its input 'x' in place: the graph computes with the updated value"):
        proto = parity.export(shifted, (torch.randn(2, 4),), path=path, input_names=["x"])
    assert [o.name for o in proto.graph.output] == ["output0"]
    x = torch.randn(2, 4)
    np.testing.assert_array_equal(run_file(path, {"x": x})[0], shifted(x.clone()).numpy())
