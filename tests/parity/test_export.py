"""parity.export(format="onnx"): named, self-contained files that plain onnxruntime runs
(checked in a subprocess that cannot import parity), parameters as constants or inputs,
symbolic dims, and the errors for what it cannot do."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import textwrap

import numpy as np
import onnx
import pytest
import torch

import parity
from parity.frontend.export import EXPORTERS, ExportError


def mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4)).eval()


def run_without_parity(path, feeds: dict[str, np.ndarray], tmp_path) -> list[np.ndarray]:
    """Run the file in a fresh interpreter where parity cannot be imported (no site hooks,
    so the editable install's finder is absent; only the site-packages directory is on the path)."""
    np.savez(tmp_path / "feeds.npz", **feeds)
    script = textwrap.dedent(f"""
        import sys
        sys.path.append({sysconfig.get_paths()["purelib"]!r})
        try:
            import parity
            sys.exit("parity is importable here")
        except ModuleNotFoundError:
            pass
        import numpy as np, onnxruntime as ort
        feeds = dict(np.load({str(tmp_path / "feeds.npz")!r}))
        session = ort.InferenceSession({str(path)!r}, providers=["CPUExecutionProvider"])
        outs = session.run(None, feeds)
        np.savez({str(tmp_path / "outs.npz")!r}, *outs)
    """)
    done = subprocess.run([sys.executable, "-I", "-S", "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr + done.stdout
    outs = np.load(tmp_path / "outs.npz")
    return [outs[f"arr_{i}"] for i in range(len(outs.files))]


def test_exported_module_runs_in_plain_onnxruntime_and_matches_eager(tmp_path):
    model, x = mlp(), torch.randn(8, 16)
    path = tmp_path / "mlp.onnx"
    proto = parity.export(model, (x,), path=path, input_names=["x"], output_names=["logits"])
    onnx.checker.check_model(onnx.load(path), full_check=True)
    assert [i.name for i in proto.graph.input] == ["x"] and [o.name for o in proto.graph.output] == ["logits"]
    assert sorted(t.name for t in proto.graph.initializer)  # the weights live in the file
    assert sum(np.prod(t.dims) for t in proto.graph.initializer) >= 16 * 32 + 32 * 4
    (got,) = run_without_parity(path, {"x": x.numpy()}, tmp_path)
    np.testing.assert_allclose(got, model(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_parameters_as_named_inputs(tmp_path):
    model, x = mlp(), torch.randn(3, 16)
    proto = parity.export(model, (x,), path=tmp_path / "m.onnx", params="inputs")
    names = [i.name for i in proto.graph.input]
    assert names == ["0.weight", "0.bias", "2.weight", "2.bias", "input"]
    assert not proto.graph.initializer or all(np.prod(t.dims) < 16 for t in proto.graph.initializer)
    feeds = {name: p.detach().numpy() for name, p in model.named_parameters()} | {"input": x.numpy()}
    (got,) = run_without_parity(tmp_path / "m.onnx", feeds, tmp_path)
    np.testing.assert_allclose(got, model(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_values_the_function_never_returns_are_not_in_the_file(tmp_path):
    # capture records max_pool2d_with_indices; its indices (ArgMax, Range, ...) must not reach
    # the file, with parameters as inputs too (where nothing is folded)
    conv = torch.nn.Conv2d(2, 4, 3).eval()
    model, x = torch.nn.Sequential(conv, torch.nn.MaxPool2d(2)).eval(), torch.randn(1, 2, 8, 8)
    for params in ("constants", "inputs"):
        proto = parity.export(model, (x,), path=tmp_path / f"{params}.onnx", params=params)
        ops = {n.op_type for n in proto.graph.node}
        assert "ArgMax" not in ops and "Range" not in ops, (params, ops)


def test_dynamic_batch_dim_is_symbolic_and_runs_at_other_sizes(tmp_path):
    model = mlp()
    proto = parity.export(model, (torch.randn(8, 16),), path=tmp_path / "d.onnx", input_names=["x"],
                          dynamic_dims={"x": {0: "batch"}})
    dims = proto.graph.input[0].type.tensor_type.shape.dim
    assert (dims[0].dim_param, dims[1].dim_value) == ("batch", 16)
    assert proto.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    for n in (1, 5):
        x = torch.randn(n, 16)
        (got,) = run_without_parity(tmp_path / "d.onnx", {"x": x.numpy()}, tmp_path)
        np.testing.assert_allclose(got, model(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_slices_along_static_dims_keep_a_symbolic_batch(tmp_path):
    def heads(x):  # [B, 3, 8] -> three [B, 8] pieces, selected along the static dim
        return x[:, 0] * x[:, 1] + x[:, 2], x[:, 1:, 2:6]

    x = torch.randn(4, 3, 8)
    parity.export(heads, (x,), path=tmp_path / "h.onnx", input_names=["x"], dynamic_dims={"x": {0: "batch"}})
    for n in (1, 6):
        xn = torch.randn(n, 3, 8)
        got = run_without_parity(tmp_path / "h.onnx", {"x": xn.numpy()}, tmp_path)
        for g, w in zip(got, heads(xn)):
            np.testing.assert_array_equal(g, w.numpy())


def test_symbolic_size_arithmetic_becomes_a_dim_expression(tmp_path):
    def flat(x):
        return x.reshape(x.shape[0] * 2, -1)  # a dim that is an expression of the batch

    proto = parity.export(flat, (torch.randn(4, 6),), path=tmp_path / "f.onnx", input_names=["x"],
                          dynamic_dims={"x": {0: "batch"}})
    assert [d.dim_param or d.dim_value for d in proto.graph.output[0].type.tensor_type.shape.dim] == ["batch*2", 3]
    for n in (1, 5):
        x = torch.randn(n, 6)
        (got,) = run_without_parity(tmp_path / "f.onnx", {"x": x.numpy()}, tmp_path)
        np.testing.assert_array_equal(got, flat(x).numpy())


def test_function_with_two_outputs_and_default_names(tmp_path):
    def f(a, b):
        return torch.softmax(a @ b, dim=-1), a.sum(0)

    a, b = torch.randn(4, 5), torch.randn(5, 3)
    proto = parity.export(f, (a, b), path=tmp_path / "f.onnx")
    assert [i.name for i in proto.graph.input] == ["a", "b"]
    assert [o.name for o in proto.graph.output] == ["output0", "output1"]
    assert "Softmax" in [n.op_type for n in proto.graph.node]  # the native composite
    got = run_without_parity(tmp_path / "f.onnx", {"a": a.numpy(), "b": b.numpy()}, tmp_path)
    for g, e in zip(got, f(a, b)):
        np.testing.assert_allclose(g, e.numpy(), rtol=1e-6, atol=1e-6)


def test_transformer_encoder_layer_matches_eager(tmp_path):
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True).eval()
    x = torch.randn(2, 6, 32)
    proto = parity.export(layer, (x,), path=tmp_path / "enc.onnx", input_names=["x"])
    ops = {n.op_type for n in proto.graph.node}
    # the composites stay whole ONNX ops; unmasked float32 attention is MatMul/Softmax/MatMul
    # (ORT has no Attention kernel at parity's opset: backends/onnx/composites.py)
    assert {"Softmax", "LayerNormalization"} <= ops and not {"Exp", "Attention"} & ops
    (got,) = run_without_parity(tmp_path / "enc.onnx", {"x": x.numpy()}, tmp_path)
    np.testing.assert_allclose(got, layer(x).detach().numpy(), rtol=1e-5, atol=1e-5)


def test_export_errors_say_what_to_do(tmp_path):
    with pytest.raises(ExportError, match=r"unknown export format 'tflite'; choose from: onnx, stablehlo, jax"):
        parity.export(mlp(), (torch.randn(2, 16),), format="tflite", path=tmp_path / "m")
    with pytest.raises(ExportError, match=r"2 input names for 1 arguments"):
        parity.export(mlp(), (torch.randn(2, 16),), path=tmp_path / "m.onnx", input_names=["x", "y"])
    with pytest.raises(ExportError, match=r"dynamic_dims names \['y'\]"):
        parity.export(mlp(), (torch.randn(2, 16),), path=tmp_path / "m.onnx", input_names=["x"],
                      dynamic_dims={"y": {0: "n"}})
    with pytest.raises(ExportError, match=r"unknown params value 'weights'; choose from: constants, inputs"):
        parity.export(mlp(), (torch.randn(2, 16),), path=tmp_path / "m.onnx", params="weights")
    assert EXPORTERS["onnx"] == ("onnx", "export")
