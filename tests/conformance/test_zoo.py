"""`parity conform --models` (conformance/zoo.py): zoo rows in the matrix, pairwise
agreement, and random draws bit-identical across backends."""

import numpy as np
import pytest

from parity.backends.registry import register_backend, unregister_backend
from parity.conformance import html, models, reports, runner, selection, verdicts, zoo
from parity.conformance.results import Target
from parity.ir.dtypes import DType

from .perturbed import Perturbed


def _flip_u32_add(op, dtype, r):
    """uint32 add with its lowest bit flipped: every threefry draw changes."""
    return r ^ np.uint32(1) if op == "add" and dtype is DType.uint32 else r


@pytest.fixture
def perturbed():
    backends = [Perturbed("tanh_off", {"tanh": 1 + 2**-8}, dtypes={DType.float32}),
                Perturbed("bits_off", change=_flip_u32_add)]
    for b in backends:
        register_backend(b)
    yield backends
    for b in backends:
        unregister_backend(b.name)


def test_random_draws_are_bit_identical_or_named(perturbed):
    results, records = zoo.random_results(selection.resolve_targets(["reference", "tanh_off", "bits_off"], ["cpu"]))
    by = {(r.backend, r.op, r.dtype): r for r in results}
    ops = {("random:random_bits", "u32"), ("random:uniform", "f32"), ("random:uniform", "f16"),
           ("random:uniform", "bf16"), ("random:uniform", "f64"), ("random:dropout", "f32"),
           ("random:dropout", "bf16"), ("random:normal", "f32")}
    assert {(op, d) for _, op, d in by} == ops
    for op, d in ops:
        assert by[("reference", op, d)].status == "pass"
        assert by[("tanh_off", op, d)].status == "pass"  # tanh is in none of them
        bad = by[("bits_off", op, d)]
        assert bad.status == "fail", (op, d)
    bits = by[("bits_off", "random:random_bits", "u32")]
    assert bits.mismatches == 256 and "256 of 256 elements differ in their bits" in bits.message
    assert {r["bit_identical"] for r in records if r["backend"] != "bits_off"} == {True}
    normal = by[("reference", "random:normal", "f32")]
    assert "bit-identical with the reference: yes" in normal.message


def test_model_rows_agreement_and_reports(perturbed, monkeypatch):
    monkeypatch.setattr(models, "MODELS", (models.get_model("mlp"),))
    result = runner.run(["reference", "tanh_off"], ops="^neg$", dtypes=[DType.float32], models=True)
    cells = {(c.op, c.backend): c for c in result.cells if c.op.startswith("model:")}
    assert set(cells) == {("model:mlp/train", "reference"), ("model:mlp/train", "tanh_off")}
    good, bad = cells[("model:mlp/train", "reference")], cells[("model:mlp/train", "tanh_off")]
    assert good.status == "pass" and good.cases == 2 and good.max_ratio <= 1.0
    assert bad.status == "fail" and bad.failed == 2 and bad.max_ratio > 1.0
    assert "max |compiled - eager|" in bad.message and result.exit_code == 1
    (pair,) = result.models["agreement"]
    assert (pair["model"], pair["mode"], pair["a"], pair["b"]) == ("mlp", "train", "reference", "tanh_off")
    assert 1e-4 < pair["output"] < 1.0 and pair["gradients"] > 0 and pair["buffers"] == 0.0
    doc = reports.to_json(result)
    assert {(c["family"], c["kind"]) for c in doc["cells"] if c["op"].startswith("model:")} == {("models", "model")}
    assert {(c["family"], c["kind"]) for c in doc["cells"] if c["op"].startswith("random:")} == {
        ("random draws", "random")}
    assert doc["models"]["tolerance"] == {"rtol": zoo.RTOL, "atol": zoo.ATOL}
    md = reports.to_markdown(result)
    assert "| model:mlp/train | M | ✅ pass | ❌ fail |" in md and "## Model zoo: pairwise agreement" in md
    assert "| random_bits | u32 | tanh_off/cpu | yes | 0 |" in md
    page = html.to_html(result)
    assert "<h2 id='agreement'>" in page and ">models</th>" in page


def test_models_are_not_run_on_other_devices():
    cells = verdicts.cells_for([("model:mlp/train", "f32")], [Target("x", "cuda", True, None)], [],
                              cpu_only=zoo.is_model_row)
    assert cells[0].status == "not run" and cells[0].message == "models run on cpu targets"


def test_a_model_with_an_op_the_backend_declines_is_unsupported_with_the_backends_reason():
    # A backend without FFTs (the reference interpreter minus the fft family, declined with a
    # reason): the spectrogram model's rows are unsupported, not errors or passes, and say why.
    from parity.ir.ops import ops_in_family

    no_fft = Perturbed("no_fft", unclaimed=ops_in_family("fft"))
    no_fft.declined = dict.fromkeys(ops_in_family("fft"), "this test backend has no FFTs")
    register_backend(no_fft)
    try:
        results = zoo.model_results("model:spectrogram/train", "no_fft")
    finally:
        unregister_backend("no_fft")
    assert [(r.case, r.status) for r in results] == [("model:spectrogram/train[f32]:forward", "unsupported"),
                                                     ("model:spectrogram/train[f32]:training", "unsupported")]
    for r in results:
        # torch.stft reaches parity whole (frontend/spectral.py): the row names it, and the
        # primitive its decomposition needs
        assert r.message.startswith("UnsupportedAtenOp: parity.stft.default at ")
        assert "spectrogram.py" in r.message and "cannot run on backend 'no_fft'" in r.message
        assert r.message.endswith("; why: backend 'no_fft' does not claim the IR op 'rfft': this test backend has "
                                  "no FFTs (needed by the decomposition of 'stft')")


def test_a_random_row_in_bfloat16_from_a_backend_returning_torch_tensors_is_compared_bit_for_bit():
    # triton returns torch tensors; np.asarray of a torch bfloat16 tensor raises (the row was an error)
    from parity.backends.registry import get_backend

    for op in ("random:uniform", "random:dropout"):
        result = zoo.random_result(op, "bf16", get_backend("triton"), "triton", "cpu")
        assert result.status == "pass", result.message
        assert result.attachments["record"]["bit_identical"] is True
