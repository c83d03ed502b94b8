"""The model zoo on every registered backend: the forward, the loss, every parameter's
gradient and every buffer (BatchNorm running statistics) match eager torch in float32.

Backends come from the backend registry (reference and xla, plus any plugin found);
a backend that fails a model fails here. A backend that does not claim an op of the
model's captured graphs (tests/models/claimed.py: ONNX and Triton lower no FFT yet) must
refuse it with that reason, an xfail; the day it claims them, the model must pass there.
Other known gaps are listed as data below with the exact reason, as strict xfails: they
turn into failures the moment they are fixed.
"""

import copy

import pytest
import torch

from parity.backends.registry import backend_names, get_backend
from parity.conformance import zoo
from parity.conformance.models import MODELS, get_model
from parity.conformance.models.check import compare
from parity.conformance.models.gpt import GPTConfig, batch, train_step
from parity.frontend import compiled_graph
from parity.frontend.errors import UnsupportedAtenOp

from .claimed import why_declined, zoo_graphs

RTOL, ATOL = 1e-4, 1e-5

# (model, backend or "*") -> (the error it raises today, why). Found by this suite.
KNOWN_FAILURES: dict = {}


# Plugins whose own CI cells live elsewhere: their zoo rows run with -m matrix (the OpenVINO plugin's
# MLP and BERT are tests/backends/test_openvino_plugin.py; its zoo rows add 64 s).
ZOO_ROWS_IN_THE_FULL_RUN_ONLY = ("openvino",)


def _backends():
    """Every backend the registry lists; reference always first."""
    names = backend_names()
    assert "reference" in names and "xla" in names
    return [pytest.param(n, marks=() if n == "reference" else pytest.mark.matrix
                         if n in ZOO_ROWS_IN_THE_FULL_RUN_ONLY else pytest.mark.slow) for n in names]


def _cases():
    for spec in MODELS:
        for mode in spec.modes:
            yield spec.name, mode


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    compiled_graph.reset_caches()
    yield
    torch._dynamo.reset()


@pytest.mark.parametrize("backend", _backends())
@pytest.mark.parametrize(("model", "mode"), list(_cases()))
def test_forward_and_gradients_match_eager(model, mode, backend):
    if "cpu" not in get_backend(backend).available_devices():
        # not run, never passed: e.g. triton on CPU needs TRITON_INTERPRET=1 (scripts/test.sh sets it)
        pytest.skip(f"backend {backend!r} has no CPU device available in this process")
    known = KNOWN_FAILURES.get((model, backend)) or KNOWN_FAILURES.get((model, "*"))
    if known:
        error, reason = known
        with pytest.raises(UnsupportedAtenOp, match=error):  # fixed? move it out of KNOWN_FAILURES
            compare(get_model(model), backend, mode)
        pytest.xfail(reason)
    why = None if backend == "reference" else why_declined(zoo_graphs(model, mode), backend)
    if why is not None:  # derived from the backend's claims, so it lapses when the backend gains the op
        with pytest.raises(UnsupportedAtenOp) as info:
            compare(get_model(model), backend, mode)
        assert f"cannot run on backend {backend!r}" in str(info.value) and f"why: {why}" in str(info.value)
        for row in zoo.model_results(f"model:{model}/{mode}", backend):  # the matrix's cells say the same
            assert row.status == "unsupported" and row.message.endswith(f"; why: {why}"), row.message
        pytest.xfail(f"{backend} declines {model}: {why}")
    result = compare(get_model(model), backend, mode)
    assert result.translations == 2  # captured whole: one forward and one backward graph
    grads = [label for label in result.pairs if label.startswith("grad ")]
    assert len(grads) == len(list(get_model(model).instantiate()[0].parameters()))
    for label, (got, expected) in result.pairs.items():
        assert not expected.isnan().any(), f"{label}: eager gave NaN (a parameter without a gradient?)"
        torch.testing.assert_close(got, expected, rtol=RTOL, atol=ATOL, msg=lambda m, label=label: f"{label}: {m}")


def test_batch_norm_running_stats_move_in_train_mode_and_stay_in_eval_mode():
    # The comparison above checks compiled == eager; this checks the stats really change
    # (a missing update would compare equal if both stayed at their initial values).
    for mode, moves in (("train", True), ("eval", False)):
        result = compare(get_model("cnn"), "reference", mode)
        mean, _ = result.pairs["buffer bn1.running_mean"]
        count, _ = result.pairs["buffer bn1.num_batches_tracked"]
        assert bool((mean != 0).any()) is moves
        assert count.item() == (1 if moves else 0)


def test_cnn_eval_mode_uses_the_running_stats():
    spec = get_model("cnn")
    model, (x,) = spec.instantiate(mode="eval")
    model.bn1.running_mean.fill_(0.5)
    model.bn1.running_var.fill_(4.0)
    import parity

    torch.testing.assert_close(parity.compile(model, backend="reference")(x), copy.deepcopy(model)(x), rtol=RTOL, atol=ATOL)


def test_gpt_training_steps_follow_eager():
    import parity

    torch.manual_seed(0)
    cfg = GPTConfig()
    model = get_model("gpt").build()
    eager = copy.deepcopy(model)
    compiled = parity.compile(model, backend="reference")
    # SGD, not Adam: Adam divides by the gradient's own size, so the key bias (whose exact
    # gradient is 0: softmax ignores a shift shared by all keys) moves by ±lr on rounding noise.
    opt_c = torch.optim.SGD(model.parameters(), lr=0.3, momentum=0.9)
    opt_e = torch.optim.SGD(eager.parameters(), lr=0.3, momentum=0.9)
    tokens, targets = batch(cfg, torch.Generator().manual_seed(1))  # one batch, learnt by heart
    losses = [(train_step(compiled, opt_c, tokens, targets), train_step(eager, opt_e, tokens, targets))
              for _ in range(4)]
    for got, expected in losses:
        assert got == pytest.approx(expected, rel=RTOL, abs=ATOL)
    assert losses[-1][1] < losses[0][1] - 0.3  # it does learn
    for p, q in zip(model.parameters(), eager.parameters()):
        torch.testing.assert_close(p, q, rtol=RTOL, atol=ATOL)


def test_zoo_registry_is_complete_and_small():
    assert [s.name for s in MODELS] == ["mlp", "cnn", "resnet_block", "gpt", "lstm", "vit", "spectrogram"]
    assert get_model("cnn").modes == ("train", "eval")
    with pytest.raises(KeyError, match="the zoo has mlp, cnn"):
        get_model("alexnet")
    for spec in MODELS:
        model, _ = spec.instantiate()
        assert sum(p.numel() for p in model.parameters()) < 20_000, spec.name
