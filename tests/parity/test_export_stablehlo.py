"""parity.export(format="stablehlo"): the StableHLO text of the captured graph, written by
the xla backend, with the inputs and outputs named in a header comment."""

import re

import pytest
import torch

import parity
from parity.export import EXPORTERS
from parity.ir.errors import ParityError


def mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).eval()


def signature(text: str) -> list[str]:
    """The tensor types of @main's arguments, in order."""
    head = re.search(r"func\.func public @main\((.*?)\) ->", text).group(1)
    return re.findall(r"%arg\d+: (tensor<[^>]*>)", head)


def test_module_exports_with_weights_folded_in(tmp_path):
    path = tmp_path / "mlp.mlir"
    text = parity.export(mlp(), (torch.randn(8, 16),), format="stablehlo", path=path, input_names=["x"],
                         output_names=["logits"])
    assert path.read_text() == text and EXPORTERS["stablehlo"] == "xla"
    assert signature(text) == ["tensor<8x16xf32>"]  # the weights are constants in the file
    assert text.count("stablehlo.dot_general") == 2 and "stablehlo.select" in text and "stablehlo.constant" in text
    assert "// input %arg0: x: f32[8,16]" in text and "// output 0: logits: f32[8,4]" in text


def test_parameters_as_named_inputs_in_order(tmp_path):
    text = parity.export(mlp(), (torch.randn(2, 16),), format="stablehlo", path=tmp_path / "m.mlir",
                         params="inputs")
    assert signature(text) == ["tensor<32x16xf32>", "tensor<32xf32>", "tensor<4x32xf32>", "tensor<4xf32>",
                               "tensor<2x16xf32>"]
    header = [line for line in text.splitlines() if line.startswith("// input")]
    assert header == ["// input %arg0: 0.weight: f32[32,16]", "// input %arg1: 0.bias: f32[32]",
                      "// input %arg2: 2.weight: f32[4,32]", "// input %arg3: 2.bias: f32[4]",
                      "// input %arg4: input: f32[2,16]"]


def test_function_with_two_outputs_and_64_bit_types(tmp_path):
    def f(a, b):
        return torch.exp(a) @ b, (a.sum(0) * 2).to(torch.int64)

    text = parity.export(f, (torch.randn(4, 5, dtype=torch.float64), torch.randn(5, 3, dtype=torch.float64)),
                         format="stablehlo", path=tmp_path / "f.mlir")
    assert signature(text) == ["tensor<4x5xf64>", "tensor<5x3xf64>"]  # x64 kept, not cut to f32
    assert "stablehlo.exponential" in text and re.search(r"-> \(tensor<4x3xf64>.*tensor<5xi64>", text)
    assert "// input %arg0: a: f64[4,5]" in text and "// output 1: output1: i64[5]" in text


def test_symbolic_dims_are_refused_with_what_to_do(tmp_path):
    with pytest.raises(ParityError, match=r"needs static shapes, and dims \['batch'\] are symbolic.*format='onnx'"):
        parity.export(mlp(), (torch.randn(8, 16),), format="stablehlo", path=tmp_path / "d.mlir",
                      input_names=["x"], dynamic_dims={"x": {0: "batch"}})
    assert not (tmp_path / "d.mlir").exists()
