"""parity.export(format="onnx") of Hugging Face models: every output of the forward, caches
and ModelOutput fields included, as named ONNX outputs that plain onnxruntime runs to eager's
numbers; outputs that are not tensors left out with a one-line warning, never a crash; and a
branch on a tensor's value (wav2vec2's label check) as an error that names the line."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
import torch

import parity
from parity.conformance.hf import get_architecture
from parity.conformance.hf.check import RTOL, build
from parity.conformance.hf.export_check import check_export
from parity.frontend.export import ExportError, ExportWarning

pytest.importorskip("transformers", reason="the Hugging Face models need transformers (pip install transformers)")


def run_onnx(path, feeds: dict) -> dict[str, np.ndarray]:
    """The file in a plain onnxruntime session (no parity code), outputs by name."""
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, {i.name: feeds[i.name].numpy() for i in session.get_inputs()})))


def relative_error(got: np.ndarray, want: torch.Tensor) -> float:
    want = want.detach().double().numpy()
    assert got.shape == want.shape
    return float(np.abs(got.astype(np.float64) - want).max() / np.abs(want).max())


def export_and_run(name: str, tmp_path, without: tuple[str, ...] = ()):
    spec = get_architecture(name)
    model = build(spec).eval()
    inputs = {k: v for k, v in spec.inputs().items() if k not in without}
    path = tmp_path / f"{name}.onnx"
    with torch.no_grad():
        eager = model(**inputs)
    parity.export(model, (), kwargs=inputs, format="onnx", path=path)
    return eager, run_onnx(path, inputs)


def test_decoder_lm_exports_logits_loss_and_every_cache_layer(tmp_path):
    eager, got = export_and_run("llama", tmp_path)  # GQA: 2 key/value heads of width 8
    assert list(got) == ["loss", "logits", "cache.0.key", "cache.0.value", "cache.1.key", "cache.1.value"]
    assert got["cache.1.value"].shape == (2, 2, 8, 8)
    assert relative_error(got["logits"], eager.logits) <= RTOL
    assert relative_error(got["loss"], eager.loss) <= RTOL
    for i, layer in enumerate(eager.cache.layers):
        assert relative_error(got[f"cache.{i}.key"], layer.keys) <= RTOL
        assert relative_error(got[f"cache.{i}.value"], layer.values) <= RTOL


def test_encoder_decoder_exports_both_caches_and_the_encoder_state(tmp_path):
    eager, got = export_and_run("bart", tmp_path, without=("labels",))  # with labels, BART keeps no cache
    caches = {"self_attention_cache": eager.cache.self_attention_cache,
              "cross_attention_cache": eager.cache.cross_attention_cache}
    assert list(got) == (["logits"] + [f"cache.{c}.{i}.{kv}" for c in caches for i in range(2)
                                               for kv in ("key", "value")] + ["encoder_last_hidden_state"])
    assert got["cache.cross_attention_cache.0.key"].shape == (2, 4, 8, 8)  # batch, heads, positions, head width
    assert relative_error(got["logits"], eager.logits) <= RTOL
    assert relative_error(got["encoder_last_hidden_state"], eager.encoder_last_hidden_state) <= RTOL
    for c, cache in caches.items():
        for i, layer in enumerate(cache.layers):
            assert relative_error(got[f"cache.{c}.{i}.value"], layer.values) <= RTOL


@pytest.mark.parametrize("name", ["bert", "vit"])
def test_encoder_and_vision_models_match_eager_through_the_zoo_check(name):
    result = check_export(get_architecture(name), "parity")
    assert (result.passed, result.error, result.notes) == (True, "", [])
    assert result.outputs == ["loss", "logits"]
    assert result.worst <= RTOL


class _Meta:
    """A result object with no tensors in it."""

    def __init__(self):
        self.kind = "demo"


class _WithExtras(torch.nn.Module):
    """Returns what a model may: a tensor, a transformers cache, a count and a tensor-free object."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x):
        from transformers import DynamicCache

        cache = DynamicCache()
        cache.update(self.proj(x), x * 2, 0)
        return {"logits": self.proj(x).relu(), "cache": cache, "steps": 3, "meta": _Meta()}


def test_outputs_that_are_not_tensors_are_left_out_with_one_line_each(tmp_path):
    torch.manual_seed(0)
    model, x = _WithExtras().eval(), torch.randn(2, 4)
    with pytest.warns(ExportWarning) as caught:
        proto = parity.export(model, (x,), path=tmp_path / "extras.onnx")
    assert [str(w.message) for w in caught] == [
        "parity.export: output 'steps' is an int, not a tensor: left out of the graph's outputs "
        "(a graph output must be a tensor; return it as one to keep it)",
        "parity.export: output 'meta' is a _Meta that holds no tensors: left out of the graph's outputs "
        "(a graph output must be a tensor)",
    ]
    assert [o.name for o in proto.graph.output] == ["logits", "cache.0.key", "cache.0.value"]
    got = run_onnx(tmp_path / "extras.onnx", {"x": x})
    np.testing.assert_allclose(got["logits"], model.proj(x).relu().detach().numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got["cache.0.value"], (x * 2).numpy())


def test_keyword_arguments_and_non_tensor_outputs_through_torch_export(tmp_path):
    """The same structure through the strict torch.export capture (keyword arguments)."""
    torch.manual_seed(0)
    model, x = _WithExtras().eval(), torch.randn(2, 4)
    with pytest.warns(ExportWarning, match=r"^parity.export: output 'steps' is an int, not a tensor"):
        proto = parity.export(model, (), kwargs={"x": x}, path=tmp_path / "extras.onnx")
    assert [i.name for i in proto.graph.input] == ["x"]
    assert [o.name for o in proto.graph.output] == ["logits", "cache.0.key", "cache.0.value"]
    got = run_onnx(tmp_path / "extras.onnx", {"x": x})
    np.testing.assert_allclose(got["cache.0.key"], model.proj(x).detach().numpy(), rtol=1e-6, atol=1e-6)


def test_output_names_given_must_cover_the_flattened_outputs(tmp_path):
    model, x = _WithExtras().eval(), torch.randn(2, 4)
    with pytest.warns(ExportWarning), pytest.raises(ExportError) as info:
        parity.export(model, (x,), path=tmp_path / "m.onnx", output_names=["logits"])
    assert str(info.value) == ("1 output names for 3 outputs: the model's outputs are "
                               "['logits', 'cache.0.key', 'cache.0.value']")


class _ValidatesLabels(torch.nn.Module):
    """Checks its labels the way wav2vec2's CTC head does: a branch on a tensor's value."""

    def forward(self, x, labels):
        if labels.max() >= 4:  # the line the error names
            raise ValueError("label out of range")
        return x * 2


def test_a_branch_on_data_names_the_line_and_the_input_to_leave_out(tmp_path):
    from parity.frontend.export import ExportError

    inputs = {"x": torch.randn(3), "labels": torch.tensor([1, 2, 3])}
    with pytest.raises(ExportError) as info:  # capture's DataDependentCapture, with only export's fixes
        parity.export(_ValidatesLabels(), (), kwargs=inputs, path=tmp_path / "m.onnx")
    line = _ValidatesLabels.forward.__code__.co_firstlineno + 1
    assert str(info.value).splitlines() == [
        f"_ValidatesLabels cannot be captured as one graph: it branches on a tensor's value at {__file__}:{line} "
        f"in forward",
        "  code: if labels.max() >= 4:  # the line the error names",
        "  why: capture and export need one static graph, and torch.export cannot follow a Python branch on data "
        "(Dynamo: data-dependent branching)",
        "  fix: leave out 'labels' (the branch reads it) and compute what needs it outside the exported model, or "
        "make that code branchless (torch.where, torch.cond)",
    ]


def test_an_encoder_decoder_served_without_labels_is_given_decoder_tokens():
    # T5 has no default decoder input: without labels (the served forward) it needs decoder_input_ids.
    result = check_export(get_architecture("t5"), "parity", inference=True)
    assert (result.passed, result.error) == (True, "")
    assert "loss" not in result.outputs and result.outputs[0] == "logits"
