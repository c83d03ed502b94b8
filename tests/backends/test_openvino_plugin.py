"""The OpenVINO plugin (examples/openvino_backend) through parity.compile: an MLP and a Hugging Face
BERT with its attention mask (strict), int64 as int32 pairs, its options, parameters bound once, DLPack inputs, its artifact in
the disk cache, and the OpenVINO behaviours its lowering works around.

scripts/test.sh installs the plugin (and openvino from the registry). Where it is not installed
these tests skip with that reason; under CI (the CI environment variable set) they fail instead."""

import os

import numpy as np
import pytest
import torch

import parity
from parity.backends import disk_cache
from parity.frontend import compiled_graph
from parity.ir import GraphBuilder, f32, i64
from parity.ir.usage import UsageError

INSTALL = "install the OpenVINO plugin: pip install -e examples/openvino_backend (scripts/test.sh does)"
if os.environ.get("CI"):
    import parity_openvino_backend  # noqa: F401  (CI installs it: missing is a failure there, never a skip)
parity_openvino_backend = pytest.importorskip("parity_openvino_backend", reason=INSTALL)


def _mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 8),
                               torch.nn.LayerNorm(8), torch.nn.Softmax(-1)).eval()


def test_an_mlp_runs_strict_and_binds_its_parameters_once():
    compiled_graph.reset_caches()
    model = _mlp()
    compiled = parity.compile(model, backend="openvino", strict=True, cache_dir=False)
    x = torch.randn(4, 16)
    with torch.no_grad():
        for _ in range(3):
            torch.testing.assert_close(compiled(x), model(x))
        executable, = [e for e in compiled_graph._EXECUTABLES.values() if hasattr(e, "binds")]
        assert executable.binds == 1 and len(executable.parameters) == 6
        model[0].weight.mul_(-1)  # an in-place update: bound again before the next call
        torch.testing.assert_close(compiled(x), model(x))
        assert executable.binds == 2


def _bert():
    transformers = pytest.importorskip("transformers", reason="the BERT cell needs transformers (pip install 'parity[hf]')")
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=64, max_position_embeddings=64)
    ids = torch.randint(0, 100, (2, 8))
    mask = torch.ones(2, 8, dtype=torch.long)
    mask[1, 5:] = 0
    return transformers.BertModel(config).eval(), ids, mask


@pytest.mark.matrix  # 20 s on 2 cores: the MLP is CI's model cell
def test_bert_with_its_mask_runs_strict_and_matches_eager():
    """Every op of the BERT runs on OpenVINO, its int64 position and mask arithmetic as int32 pairs."""
    model, ids, mask = _bert()
    with torch.no_grad():
        want = model(input_ids=ids, attention_mask=mask).last_hidden_state
        got = parity.compile(model, backend="openvino", strict=True, cache_dir=False)(input_ids=ids,
                                                                                     attention_mask=mask)
    torch.testing.assert_close(got.last_hidden_state, want, rtol=1e-5, atol=1e-5)


def test_int64_beyond_int32_survives_as_pairs():
    """The CPU plugin computes int64 in 32 bits; as pairs, 2**40 + 3 moves, adds, multiplies and compares."""
    backend = parity_openvino_backend.OpenVinoBackend()
    b = GraphBuilder()
    x, y = b.input(i64[2, 2]), b.input(i64[2, 2])
    total = b.add(b.transpose(x, permutation=[1, 0]), y)
    graph = b.build([total, b.mul(x, y), b.lt(x, y), b.convert(x, dtype=f32)])
    big = np.array([[2**40 + 3, -1], [-(2**62), 7]], np.int64)
    other = np.array([[5, 2**33], [-3, -(2**31) - 1]], np.int64)
    added, product, less, floats = backend.compile(graph, "cpu")(big, other)
    np.testing.assert_array_equal(added, big.T + other)
    np.testing.assert_array_equal(product, big * other)  # wraps as int64 does
    np.testing.assert_array_equal(less, big < other)
    np.testing.assert_array_equal(floats, big.astype(np.float32))


def test_its_options_reach_the_runtime_and_are_checked():
    backend = parity_openvino_backend.OpenVinoBackend()
    b = GraphBuilder()
    x = b.input(f32[3])
    run = backend.compile(b.build([b.neg(x)]), "cpu", backend_options={"threads": 1})
    assert run.compiled.get_property("INFERENCE_NUM_THREADS") == 1
    assert str(run.compiled.get_property("INFERENCE_PRECISION_HINT")) == "<Type: 'float32'>"
    with pytest.raises(UsageError, match=r"option 'performance_hint' is one of \['LATENCY', 'THROUGHPUT'\]"):
        parity.compile(_mlp(), backend="openvino", backend_options={"performance_hint": "FAST"})


def test_its_artifact_is_loaded_from_the_disk_cache_and_checked(tmp_path):
    backend = parity_openvino_backend.OpenVinoBackend()
    b = GraphBuilder()
    x = b.input(f32[3])
    graph = b.build([b.exp(x)])
    first, loaded = disk_cache.compile_cached(graph, backend, "cpu", str(tmp_path))
    assert not loaded and len(list(tmp_path.rglob("*.bin"))) == 1
    again, loaded = disk_cache.compile_cached(graph, backend, "cpu", str(tmp_path))
    assert loaded
    np.testing.assert_array_equal(again(np.ones(3, np.float32))[0], first(np.ones(3, np.float32))[0])
    b = GraphBuilder()
    y = b.input(f32[3])
    with pytest.raises(ValueError, match="artifact holds another graph"):
        backend.load_artifact(b.build([b.neg(y)]), "cpu", backend.save_artifact(first))


def test_it_reads_dlpack_tensors_and_keeps_what_openvino_would_change():
    """-0.0 and subnormal constants (OpenVINO flushes them) and NaN through exp (OpenVINO: inf)."""
    backend = parity_openvino_backend.OpenVinoBackend()
    b = GraphBuilder()
    x = b.input(f32[3])
    constant = b.constant(np.array([-0.0, 1e-45, 2.0], np.float32))
    graph = b.build([b.add(x, constant), b.exp(x)])
    added, exp = backend.compile(graph, "cpu")(torch.tensor([-0.0, 0.0, float("nan")]))
    assert np.signbit(added[0]) and added[1] == np.float32(1e-45) and np.isnan(added[2])
    assert np.isnan(exp[2])


def test_a_batch_that_changes_runs_on_the_symbolic_graph():
    model = _mlp()
    compiled = parity.compile(model, backend="openvino", dynamic=True, cache_dir=False)
    with torch.no_grad():
        for batch in (3, 5, 1):
            x = torch.randn(batch, 16)
            torch.testing.assert_close(compiled(x), model(x))


def test_comparisons_are_right_whichever_kernels_the_cpu_gets():
    """OpenVINO's AVX-512 kernels answer NaN > x and NaN >= x true and call subnormals not finite
    (its AVX2 kernels do not): the rules use Less, LessEqual, IsNaN and IsInf only (checked on any
    CPU), and the answers are checked here (which catches the kernels only on an AVX-512 CPU)."""
    from parity_openvino_backend.lowering import to_model

    b = GraphBuilder()
    x, y = b.input(f32[4]), b.input(f32[4])
    window = b.reduce_window(x, kind="max", window_dimensions=(2,), window_strides=(2,), padding=((0, 0),),
                             window_dilations=(1,))
    graph = b.build([b.gt(x, y), b.ge(x, y), b.is_finite(x), window])
    model, _, _ = to_model(graph)
    assert not {op.get_type_name() for op in model.get_ordered_ops()} & {"Greater", "GreaterEqual", "IsFinite"}
    nan = float("nan")
    left = np.array([nan, 1.0, 1e-45, 2.0], np.float32)
    right = np.array([1.0, nan, 0.0, 2.0], np.float32)
    gt, ge, finite, peak = parity_openvino_backend.OpenVinoBackend().compile(graph, "cpu")(left, right)
    assert gt.tolist() == [False, False, True, False] and ge.tolist() == [False, False, True, True]
    assert finite.tolist() == [False, True, True, True]
    assert np.isnan(peak[0]) and peak[1] == 2.0


def test_layer_norm_is_decomposed_where_onednn_is_capped_below_the_cpu(monkeypatch):
    """OpenVINO's MVN kernel ignores ONEDNN_MAX_CPU_ISA and, capped, crashes (layer_norm[f32]:last):
    under a cap the plugin leaves layer_norm to its decomposition; gelu stays native."""
    for cap, native in ((None, True), ("ALL", True), ("AVX2", False), ("avx512_core", False)):
        if cap is None:
            monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
        else:
            monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", cap)
        monkeypatch.delenv("DNNL_MAX_CPU_ISA", raising=False)
        claims = parity_openvino_backend.OpenVinoBackend().claims()
        assert ("layer_norm" in claims) is native and "gelu" in claims, cap
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA")
    monkeypatch.setenv("DNNL_MAX_CPU_ISA", "AVX2")
    assert "layer_norm" not in parity_openvino_backend.OpenVinoBackend().claims()
