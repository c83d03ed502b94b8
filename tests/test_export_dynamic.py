"""parity.export with dynamic batch and sequence: one ONNX file, plain onnxruntime, every size.

The models compute sizes from the dynamic ones (``B*heads``, ``B*S``, ``S//2``); the
file's value infos carry them as expressions of the user's dim names, and the file runs
at (batch, seq) = (1, 1), (2, 7), (7, 33) and (33, 2) within float32 rounding of eager.
"""

import warnings

import numpy as np
import onnxruntime as ort
import pytest
import torch
from torch import nn

import parity
from parity.conformance.models.attention import Attention
from parity.frontend.export import ExportWarning
from parity.frontend.specialize import GuardedDimension

SIZES = [(1, 1), (2, 7), (7, 33), (33, 2)]
DYNAMIC = {"x": {0: "batch", 1: "seq"}}


def encoder_layer():
    return nn.TransformerEncoderLayer(32, 4, 64, batch_first=True)


def run_at_every_size(model, path):
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    errors = []
    for batch, seq in SIZES:
        x = torch.randn(batch, seq, 32)
        with torch.no_grad():
            want = model(x)
        want = [w.numpy() for w in (want if isinstance(want, tuple) else (want,))]
        got = session.run(None, {"x": x.numpy()})
        for g, w in zip(got, want):
            assert g.shape == w.shape
            errors.append(float(np.abs(g - w).max()))
    return max(errors)


@pytest.mark.parametrize("make", [encoder_layer, Attention], ids=["TransformerEncoderLayer", "attention"])
def test_dynamic_batch_and_sequence_export_runs_at_every_size(make, tmp_path):
    torch.manual_seed(0)
    model = make().eval()
    proto = parity.export(model, (torch.randn(2, 7, 32),), path=tmp_path / "m.onnx", input_names=["x"],
                          dynamic_dims=DYNAMIC)
    dims = [d.dim_param or d.dim_value for d in proto.graph.input[0].type.tensor_type.shape.dim]
    assert dims == ["batch", "seq", 32]
    assert max_error_ok(run_at_every_size(model, tmp_path / "m.onnx"))


def max_error_ok(error: float) -> bool:
    return error < 2e-6  # float32 rounding of a few reductions over 32 elements


def test_output_dims_are_expressions_of_the_users_names(tmp_path):
    def flat(x):  # [B, S, 32] -> [B*S, 32] and [B*S*2, 16]
        return x.reshape(-1, 32), x.reshape(x.shape[0] * x.shape[1] * 2, 16)

    proto = parity.export(flat, (torch.randn(2, 7, 32),), path=tmp_path / "f.onnx", input_names=["x"],
                          dynamic_dims=DYNAMIC)
    shapes = [[d.dim_param or d.dim_value for d in o.type.tensor_type.shape.dim] for o in proto.graph.output]
    assert shapes == [["batch*seq", 32], ["batch*seq*2", 16]]
    session = ort.InferenceSession(str(tmp_path / "f.onnx"), providers=["CPUExecutionProvider"])
    for batch, seq in SIZES:
        x = torch.randn(batch, seq, 32)
        for got, want in zip(session.run(None, {"x": x.numpy()}), flat(x)):
            np.testing.assert_array_equal(got, want.numpy())


@pytest.mark.parametrize("name", ["bert", "gpt2"])
def test_hugging_face_encoder_and_decoder_export_with_dynamic_batch_and_sequence(name):
    """An encoder and a decoder LM (its cache among the outputs) from the zoo: one file,
    input dims [batch, seq], matching eager at (1, 1), (2, 2), (7, 13) and (4, 64)."""
    from parity.conformance.hf import get_architecture  # transformers: a test dependency (pyproject)
    from parity.conformance.hf.export_check import check_dynamic_export, dynamic_sizes

    spec = get_architecture(name)
    assert dynamic_sizes(spec) == [(1, 1), (2, 2), (7, 13), (4, 64)]
    result = check_dynamic_export(spec, "parity")
    assert result.passed, result.error
    assert result.worst < 1e-6
    if name == "gpt2":
        assert "cache.1.value" in result.outputs


def test_select_index_and_full_reduction_of_symbolic_dims(tmp_path):
    """x[:, 0] (a pooler's first token) of a dynamic seq, an index into a tensor with
    symbolic dims (x[rows, cols]: a padding mask read at arange positions), argmax of all."""

    class Picks(nn.Module):
        def forward(self, x):
            rows = torch.arange(x.shape[0]).unsqueeze(1)
            cols = torch.arange(x.shape[1]).unsqueeze(0)
            return x[:, 0], x[rows, cols].sum(-1), x.argmax()

    model = Picks()
    parity.export(model, (torch.randn(2, 7, 32),), path=tmp_path / "m.onnx", input_names=["x"],
                  dynamic_dims=DYNAMIC)
    session = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    for batch, seq in [(1, 3), (2, 7), (7, 33)]:
        x = torch.randn(batch, seq, 32)
        got = session.run(None, {"x": x.numpy()})
        for g, w in zip(got, model(x)):
            np.testing.assert_allclose(g, w.numpy(), rtol=1e-6, atol=1e-6)


def window(x):
    return x[:, -3:] * 2  # a sliding window: x itself at seq = 3


def test_a_guard_that_is_no_range_names_the_dim_the_line_and_the_bound_to_give(tmp_path):
    with pytest.raises(GuardedDimension) as caught:
        parity.export(window, (torch.randn(2, 5, 4),), path=tmp_path / "w.onnx", input_names=["x"],
                      dynamic_dims={"x": {0: "batch", 1: "seq"}})
    lines = str(caught.value).splitlines()
    assert lines[0] == "the dynamic dim 'seq' cannot take every size: the captured code needs 4*seq != 12"
    assert lines[1].startswith("  where: return x[:, -3:] * 2") and "test_export_dynamic.py" in lines[1]
    assert "torch.export.Dim('seq', min=...)" in lines[3]


def test_a_dim_with_bounds_from_the_user_is_asserted_by_the_jax_module(tmp_path):
    """dynamic_dims takes torch.export.Dim objects; their min and max reach the module,
    which refuses sizes outside them (the ONNX file has no such check, and runs within)."""
    seq = torch.export.Dim("seq", min=4, max=100)
    dims = {"x": {0: "batch", 1: seq}}
    module = parity.export(window, (torch.randn(2, 5, 4),), format="jax", path=tmp_path / "w.jax",
                           input_names=["x"], dynamic_dims=dims)
    parity.export(window, (torch.randn(2, 5, 4),), path=tmp_path / "w.onnx", input_names=["x"], dynamic_dims=dims)
    session = ort.InferenceSession(str(tmp_path / "w.onnx"), providers=["CPUExecutionProvider"])
    for size in (4, 17, 100):
        x = torch.randn(3, size, 4)
        np.testing.assert_array_equal(np.asarray(module.call(x.numpy())[0]), window(x).numpy())
        np.testing.assert_array_equal(session.run(None, {"x": x.numpy()})[0], window(x).numpy())
    with pytest.raises(ValueError, match="seq >= 4"):
        module.call(np.zeros((3, 3, 4), np.float32))
    with pytest.raises(ValueError, match="100 >= seq"):
        module.call(np.zeros((3, 101, 4), np.float32))


def test_an_onnx_export_warns_with_the_sizes_its_file_holds_for(tmp_path):
    """ONNX cannot assert sizes: the facts the graph relies on are named, in the file's dim names."""
    dims = {"x": {0: "batch", 1: torch.export.Dim("seq", min=4, max=100)}}
    with pytest.warns(ExportWarning, match=r"onnx file holds for sizes where these hold: seq must be <= 100; "
                                           r"seq must be >= 4; seq must be >= 3\. onnx cannot check sizes") as record:
        parity.export(window, (torch.randn(2, 5, 4),), path=tmp_path / "w.onnx", input_names=["x"], dynamic_dims=dims)
    assert record[0].filename == __file__  # the caller's line
    with warnings.catch_warnings():
        warnings.simplefilter("error", ExportWarning)  # a graph that relies on nothing, or jax: none
        parity.export(lambda x: x * 2, (torch.randn(2, 5, 4),), path=tmp_path / "d.onnx", input_names=["x"],
                      dynamic_dims={"x": {0: "batch"}})
        parity.export(window, (torch.randn(2, 5, 4),), format="jax", path=tmp_path / "w.jax", input_names=["x"],
                      dynamic_dims=dims)


def test_a_model_dynamo_cannot_trace_exports_through_non_strict_capture(tmp_path):
    """segformer's forward has a context manager strict (Dynamo) capture refuses
    ("Unsupported context manager"); the export falls back to torch.export's non-strict
    capture, and the file serves batch 1, 3 and 7 (conformance/hf/batch_export.py)."""
    from parity.conformance.hf.batch_export import check

    verdict = check("segformer", "parity", str(tmp_path))
    assert verdict.startswith("pass (max error"), verdict
