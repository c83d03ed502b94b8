"""The Hugging Face zoo (conformance/hf): real transformers architectures through parity.

CI runs a subset that covers each family and the causes fixed at their root (real
constant tensors in fake-tensor tracing, backward inputs of the wrong shape on onnx,
transformers' MoE custom ops, unbounded nesting in Triton kernels). The whole zoo runs
with ``parity conform --models hf``. The checker itself is tested with planted faults:
a verdict nobody tried to fool is unproven.
"""

import pytest
import torch

from parity.backends.registry import backend_names, get_backend
from parity.conformance.hf import ARCHITECTURES, get_architecture
from parity.conformance.hf.check import NOISE_FACTOR, NOISE_LEVEL_FACTOR, RTOL, compare, run_entry
from parity.conformance.hf.matrix import _status

from .claimed import hf_graphs, why_declined

pytest.importorskip("transformers", reason="the Hugging Face models need transformers (pip install transformers)")

# One per family and each root cause, spread over the backends to keep CI short: GQA + RoPE
# (llama), MoE custom ops (mixtral), encoder masks on onnx (bert), relative buckets + cross
# attention (t5), patches (vit), BatchNorm + bottleneck convs (resnet), conv stem +
# encoder-decoder (whisper), decoders on parity's inductor backend (gpt2; phi3, whose attention
# layout once failed Inductor's view: backends/inductor/lowering.py), and the default,
# backend="auto", on the two models it once failed: MoE routing (mixtral: its stable top-k
# check) and BERT's analytically zero key-bias gradient (its float64 second chance). The whole
# zoo on every backend: parity conform --models hf.
CI_SUBSET = (("llama", "xla"), ("llama", "onnx"), ("mixtral", "reference"), ("mixtral", "xla"), ("bert", "onnx"),
             ("bert", "xla"), ("t5", "onnx"), ("vit", "xla"), ("resnet", "reference"), ("whisper", "xla"),
             ("gpt2", "inductor"), ("phi3", "inductor"), ("mixtral", "auto"), ("bert", "auto"))

# Longformer's global-attention check (.item()) is a graph break: its graphs on either side compile.
# inductor took 934 s to compile its training graphs on the loaded 2-core machine: measured, not in CI
LONGFORMER_BACKENDS = (pytest.param("xla", marks=pytest.mark.matrix), "onnx", pytest.param("auto", marks=pytest.mark.matrix))

pytestmark = pytest.mark.usefixtures("fresh_compiler")


def test_the_zoo_covers_every_family_with_40_architectures():
    assert len(ARCHITECTURES) >= 40
    assert len({spec.name for spec in ARCHITECTURES}) == len(ARCHITECTURES)
    families = {spec.family for spec in ARCHITECTURES}
    assert families == {"decoder", "encoder", "encoder-decoder", "vision", "audio", "multimodal"}
    notes = " ".join(spec.note for spec in ARCHITECTURES)
    for feature in ("GQA", "sliding window", "MoE", "Fourier"):
        assert feature in notes


@pytest.mark.slow
@pytest.mark.parametrize("name,backend", CI_SUBSET)
def test_forward_gradients_and_second_step_match_eager(name, backend):
    result = run_entry(get_architecture(name), backend)
    for stage in ("forward", "gradients", "step"):
        check = getattr(result, stage)
        assert check.passed, f"{name} on {backend}, {stage}: {check.error or check.tensor} ({check.worst:.3g})"
    assert result.graphs >= 2  # forward and backward graphs were translated, not run eagerly


@pytest.mark.slow
@pytest.mark.parametrize("backend", LONGFORMER_BACKENDS)
def test_longformer_sliding_window_attention_through_as_strided_matches_eager(backend):
    # overlapping chunks of a view (frontend/aten/strided.py): UnsupportedAtenOp on every backend before
    result = run_entry(get_architecture("longformer"), backend)
    for stage in ("forward", "gradients", "step"):
        check = getattr(result, stage)
        assert check.passed, f"longformer on {backend}, {stage}: {check.error or check.tensor} ({check.worst:.3g})"
    assert result.graphs >= 2


@pytest.mark.slow
def test_triton_runs_an_encoder_through_its_interpreter():
    result = run_entry(get_architecture("bert"), "triton")
    assert (result.forward.passed, result.gradients.passed, result.step.passed) == (True, True, True)


@pytest.mark.slow
@pytest.mark.parametrize("backend", [pytest.param(n, marks=pytest.mark.matrix) if n == "openvino" else n  # 22 s, an
                                     for n in backend_names()])  # xfail like numpy's, which CI keeps
def test_fnet_passes_where_its_ffts_are_claimed_and_is_unsupported_with_the_reason_elsewhere(backend):
    # Expectations from claims (tests/models/claimed.py): a backend that claims every node of
    # FNet's captured graphs must pass all three stages (every built-in does); one that declines the
    # fft family (the numpy plugin template) must report FNet unsupported, saying why. No hand list.
    if "cpu" not in get_backend(backend).available_devices():
        pytest.skip(f"backend {backend!r} has no CPU device available in this process (TRITON_INTERPRET=1)")
    result = run_entry(get_architecture("fnet"), backend)
    why = None if backend == "reference" else why_declined(hf_graphs("fnet"), backend)
    if why is None:
        for stage in ("forward", "gradients", "step"):
            check = getattr(result, stage)
            assert check.passed, f"fnet on {backend}, {stage}: {check.error or check.tensor} ({check.worst:.3g})"
        assert result.graphs >= 2
        return
    for stage in ("forward", "gradients", "step"):  # the step is unsupported for the same reason, not an error
        status, message = _status(result, stage)
        assert status == "unsupported" and message.startswith("UnsupportedAtenOp: aten._fft_c2c.default at "), message
        assert message.endswith(f"cannot run on backend {backend!r}; why: {why}"), message
    pytest.xfail(f"{backend} declines fnet: {why}")


# -- the checker, fooled on purpose --------------------------------------------------------------


def _pair(scale=1.0, noise=0.0):
    g = torch.Generator().manual_seed(0)
    eager = torch.randn(64, generator=g) * scale
    exact = eager.double() + torch.randn(64, generator=g, dtype=torch.float64) * noise
    return eager, exact


def test_a_gradient_off_by_more_than_the_tolerance_fails():
    eager, exact = _pair()
    got = eager.clone()
    got[5] += 3 * RTOL * eager.abs().max()
    check = compare({"g": got}, {"g": eager}, {"g": exact})
    assert not check.passed and check.tensor == "g" and check.worst == pytest.approx(3 * RTOL, rel=1e-3)


def test_a_missing_or_misshapen_tensor_fails():
    eager, exact = _pair()
    assert not compare({}, {"g": eager}, {"g": exact}).passed
    assert not compare({"g": eager[:10]}, {"g": eager}, {"g": exact}).passed
    assert not compare({"g": torch.full_like(eager, float("nan"))}, {"g": eager}, None).passed


def test_ill_conditioned_gradients_pass_only_within_twice_eagers_own_error():
    # float64 says 1.0; eager float32 is 1e-3 off (ill-conditioned), so 1e-4 of eager can't hold.
    exact = torch.ones(64, dtype=torch.float64)
    eager = torch.full((64,), 1.001)
    within = torch.full((64,), 1 - NOISE_FACTOR * 0.001 * 0.99)
    beyond = torch.full((64,), 1 - NOISE_FACTOR * 0.001 * 1.5)
    assert compare({"g": within}, {"g": eager}, {"g": exact}).passed
    assert not compare({"g": beyond}, {"g": eager}, {"g": exact}).passed


def test_noise_level_gradients_pass_only_as_noise():
    # An analytically zero gradient: float32 eager is rounding noise around float64's ~0.
    exact = torch.full((64,), 1e-20, dtype=torch.float64)
    eager = torch.full((64,), 1e-12)
    within = torch.full((64,), -0.9 * NOISE_LEVEL_FACTOR * 1e-12)
    beyond = torch.full((64,), -1.5 * NOISE_LEVEL_FACTOR * 1e-12)
    real_error = torch.full((64,), 3e-6)  # a wrong gradient is of the terms' size
    assert compare({"g": within}, {"g": eager}, {"g": exact}).passed
    assert not compare({"g": beyond}, {"g": eager}, {"g": exact}).passed
    assert not compare({"g": real_error}, {"g": eager}, {"g": exact}).passed


def test_the_spec_sets_the_bar_where_it_is_farther_from_float64_than_eager():
    # MobileNetV2's gradients: eager (torch's fused CPU batch-norm kernel, fewer roundings) is 2-4x
    # closer to float64 than the spec, the IR rounded per op. A backend as close as the spec passes;
    # one 4x as far as the spec (a real error) fails, as does one beyond twice eager's where no spec ran.
    exact = torch.ones(64, dtype=torch.float64)
    eager, spec = torch.full((64,), 1 + 1e-4), torch.full((64,), 1 - 3e-4)
    as_spec, four_times = torch.full((64,), 1 + 3e-4), torch.full((64,), 1 - 12e-4)
    assert not compare({"g": as_spec}, {"g": eager}, {"g": exact}).passed
    assert compare({"g": as_spec}, {"g": eager}, {"g": exact}, {"g": spec}).passed
    check = compare({"g": four_times}, {"g": eager}, {"g": exact}, {"g": spec})
    assert not check.passed and check.ratio64 == pytest.approx(4.0, rel=1e-3)
    # the spec never lowers the bar below eager's own error
    assert compare({"g": as_spec}, {"g": torch.full((64,), 1 - 3e-4)}, {"g": exact}, {"g": exact.float()}).passed


def test_the_reported_tensor_is_the_failing_one_not_the_noisiest():
    # A noise-level tensor far from eager but within twice eager's own float64 error passes;
    # the verdict names the tensor that really fails.
    noise_exact = torch.zeros(8, dtype=torch.float64)
    noise_eager, noise_got = torch.full((8,), 2e-6), torch.full((8,), -1.25e-6)  # 1.6 × |eager| away, passes
    eager, exact = _pair()
    bad = eager.clone()
    bad[0] += 5 * RTOL * eager.abs().max()
    check = compare({"noise": noise_got, "bad": bad}, {"noise": noise_eager, "bad": eager},
                    {"noise": noise_exact, "bad": exact})
    assert not check.passed and check.tensor == "bad"


def test_a_recorded_deviation_excuses_only_its_measured_ratio():
    from parity.conformance.hf.check import Check, EntryResult
    from parity.conformance.hf.matrix import DEVIATIONS, _status

    (recorded,) = [d for d in DEVIATIONS if (d.model, d.backend) == ("mobilenet-v2", "reference")]
    entry = EntryResult("mobilenet-v2", "reference")
    entry.gradients = Check(False, 2.6e-4, "grad w", 3, ratio64=2.07)
    assert _status(entry, "gradients")[0] == "deviation"
    entry.gradients = Check(False, 2.6e-4, "grad w", 3, ratio64=recorded.ratio64 * 1.01)
    assert _status(entry, "gradients")[0] == "fail"
    entry.gradients = Check(False, float("inf"), error="RuntimeError: boom")
    assert _status(entry, "gradients")[0] == "error"
    other = EntryResult("resnet", "reference")
    other.gradients = Check(False, 2.6e-4, "grad w", 3, ratio64=2.07)
    assert _status(other, "gradients")[0] == "fail"
    elsewhere = EntryResult("mobilenet-v2", "xla")  # recorded for reference, onnx and triton only
    elsewhere.gradients = Check(False, 2.6e-4, "grad w", 3, ratio64=2.07)
    assert _status(elsewhere, "gradients")[0] == "fail"


def test_an_auto_row_is_excused_only_by_deviations_recorded_for_every_backend_it_ran_on():
    """backend="auto" runs each graph on its pick: MobileViT's gradients once ran onnx's forward
    with xla's backward (2.02x eager's float64 distance on a cancelling bias sum), each recorded
    alone (onnx up to 3.0x, xla up to 3.25x)."""
    from parity.conformance.hf.check import Check, EntryResult

    def status(picks, ratio64, name="mobilevit"):
        entry = EntryResult(name, "auto", picks=picks)
        entry.gradients = Check(False, 3.7e-3, "grad value.bias", 3, ratio64=ratio64)
        return _status(entry, "gradients")

    verdict, message = status(["onnx", "onnx", "xla"], 2.02)
    assert verdict == "deviation", message
    assert "2.02x eager's float64 distance (auto ran it on onnx, xla) (recorded up to 3.25x on xla: " in message
    assert status(["onnx", "eager torch"], 2.9)[0] == "deviation"  # a graph in eager torch needs no excuse
    assert status(["onnx", "xla"], 3.3)[0] == "fail"  # past the widest measured ratio
    assert status(["onnx"], 3.1)[0] == "fail"  # past onnx's own
    assert status(["onnx", "numpy"], 2.02)[0] == "fail"  # nothing recorded for numpy on this model
    assert status([], 2.02)[0] == "fail" and status(["eager torch"], 2.02)[0] == "fail"
    assert status(["onnx", "xla"], 2.02, name="resnet")[0] == "fail"  # recorded for MobileViT only


@pytest.mark.matrix
@pytest.mark.slow
@pytest.mark.parametrize("planted", [0.0, 6e-4])
def test_mobilenet_v2_gradients_on_onnx_pass_at_the_specs_distance_and_a_4x_error_fails(planted, monkeypatch):
    """onnx's MobileNetV2 gradients are up to 6x eager's distance from float64 (~1e-4 of scale), as
    the reference interpreter's own are (up to 10x: the IR rounded per op against torch's fused
    batch-norm kernel, on a model ill-conditioned at batch 2 over 1x1 maps): they pass against the
    spec's bar. A fault planted on the classifier's weight gradient, 6e-4 of its scale (about 4x the
    spec's 1.4e-4 there, measured 2026-12-06), fails."""
    from parity.conformance.hf import check

    compile_with = check.compiler_for

    def planted_fault(name, strict=True):
        def compile_model(model):
            if name != "reference" and planted:
                weight = model.classifier.weight
                weight.register_hook(lambda g: g + torch.where(g.abs() == g.abs().max(), planted * g.abs().max(), 0))
            return compile_with(name, strict)(model)
        return compile_model

    monkeypatch.setattr(check, "compiler_for", planted_fault)
    result = run_entry(get_architecture("mobilenet-v2"), "onnx")
    assert result.forward.passed and result.step.passed
    if not planted:
        assert result.gradients.passed, (result.gradients.tensor, result.gradients.ratio64)
    else:
        assert not result.gradients.passed and result.gradients.tensor == "grad classifier.weight"
        assert _status(result, "gradients")[0] == "fail"  # not excused as onnx's recorded deviation


# The two models issue 36 named, MobileNetV2 (its gradients pass against the spec's bar), and the
# cheapest of each other family in the README's two-phase table (decoder, encoder, encoder-decoder,
# audio, multimodal: 30-80 s for both phases at one thread).
AUTO_TWO_PHASE = ["mobilevit", "efficientnet", "mobilenet-v2", "phi3", "mpnet", "pegasus", "whisper", "clip"]


@pytest.mark.matrix
@pytest.mark.slow
@pytest.mark.parametrize("name", AUTO_TWO_PHASE)
def test_auto_trains_from_a_cold_cache_and_again_once_a_plugin_it_cached_is_uninstalled(name, monkeypatch):
    """Issue 36's done criterion: training on backend="auto" passes from a cold cache with the
    plugin template installed (a candidate of every race), then in a "new process" sharing only
    that disk cache, with the plugin uninstalled."""
    pytest.importorskip("parity_numpy_backend", reason="install the template: pip install --no-deps -e "
                                                       "examples/plugin_template")
    from parity.backends import registry
    from parity.frontend import auto, auto_compile_times, auto_installed, compiled_graph

    def new_process():
        auto._CHOICES.clear()
        auto_compile_times.reset()
        auto_installed.reset()
        compiled_graph.reset_caches()

    def trains(phase):
        result = run_entry(get_architecture(name), "auto")
        for stage in ("forward", "gradients", "step"):
            verdict, message = _status(result, stage)
            assert verdict in ("pass", "deviation"), f"{name} on auto, {phase}, {stage}: {verdict}: {message}"
        assert result.graphs >= 2 and "eager torch" not in result.picks, result.picks
        return result

    new_process()
    trains("cold cache, plugin installed")  # numpy races in every graph; it need not win
    entry_points = registry._entry_points
    monkeypatch.setattr(registry, "_entry_points", lambda: {k: v for k, v in entry_points().items() if k != "numpy"})
    registry.unregister_backend("numpy")
    new_process()
    assert "numpy" not in registry.backend_names()
    assert "numpy" not in trains("the plugin uninstalled").picks
