"""parity.export(format="stablehlo"): the StableHLO text of the captured graph, written by
the xla backend, with the inputs and outputs named in a header comment."""

import re
import subprocess
import sys

import numpy as np
import pytest
import torch

import parity
from parity.backends.xla import stablehlo_export
from parity.backends.xla.symbolic_export import export_symbolic
from parity.frontend.export import EXPORTERS
from parity.ir import GraphBuilder, Symbol, f32
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
    assert path.read_text() == text and EXPORTERS["stablehlo"] == ("xla", "export")
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


def layer() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True).eval()


SIZES = [(1, 1), (2, 7), (7, 33), (33, 2)]  # 1, 2, primes; batch above and below seq


def test_dynamic_batch_and_seq_stay_symbolic_in_the_text(tmp_path):
    """The encoder layer computes B*heads and B*S: the text keeps both dims as `?` and
    names them in the header; jax.export's Exported that the text came from runs at every
    size and matches eager."""
    exported = []
    original = stablehlo_export.export_symbolic

    def keep(graph, dim_names=None):
        exported.append(original(graph, dim_names))
        return exported[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(stablehlo_export, "export_symbolic", keep)
        text = parity.export(layer(), (torch.randn(2, 7, 32),), format="stablehlo", path=tmp_path / "l.mlir",
                             input_names=["x"], dynamic_dims={"x": {0: "batch", 1: "seq"}})
    assert signature(text) == ["tensor<?x?x32xf32>"]
    assert "// dynamic dims: batch, seq" in text and "jax.uses_shape_polymorphism = true" in text
    (module,) = exported
    assert text.endswith(module.mlir_module())
    for batch, seq in SIZES:
        x = torch.randn(batch, seq, 32)
        (got,) = module.call(x.numpy())
        np.testing.assert_allclose(np.asarray(got), layer()(x).detach().numpy(), rtol=0, atol=2e-6)


def test_jax_format_runs_in_a_fresh_process_at_every_size(tmp_path):
    """format="jax" writes jax.export's serialized module; a process without parity loads
    it and runs it at sizes it was not captured at."""
    path = tmp_path / "layer.jax"
    parity.export(layer(), (torch.randn(2, 7, 32),), format="jax", path=path, input_names=["x"],
                  dynamic_dims={"x": {0: "batch", 1: "seq"}})
    inputs = {f"{b}x{s}": torch.randn(b, s, 32) for b, s in SIZES}
    np.savez(tmp_path / "inputs.npz", **{k: v.numpy() for k, v in inputs.items()})
    script = (
        "import sys, numpy as np, jax\n"
        "assert 'parity' not in sys.modules\n"
        f"module = jax.export.deserialize(open({str(path)!r}, 'rb').read())\n"
        f"inputs = np.load({str(tmp_path / 'inputs.npz')!r})\n"
        f"np.savez({str(tmp_path / 'out.npz')!r}, **{{k: np.asarray(module.call(inputs[k])[0]) for k in inputs}})\n")
    subprocess.run([sys.executable, "-c", script], check=True, cwd=tmp_path)
    outputs = np.load(tmp_path / "out.npz")
    for key, x in inputs.items():
        np.testing.assert_allclose(outputs[key], layer()(x).detach().numpy(), rtol=0, atol=2e-6)


def graph_of(types, build):
    b = GraphBuilder("g")
    inputs = [b.input(t) for t in types]
    return b.build(build(b, *inputs))


def test_a_divisibility_the_graph_relies_on_is_asserted_when_called():
    N = Symbol("N")
    graph = graph_of([f32[N]], lambda b, x: [b.reshape(x, shape=(N // 3, 3))])
    module = export_symbolic(graph, {"N": "n"})
    (got,) = module.call(np.arange(9, dtype=np.float32))
    assert np.asarray(got).tolist() == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    with pytest.raises(ValueError, match=r"constraint .*n.*3.*found -1"):
        module.call(np.arange(7, dtype=np.float32))


def test_a_bound_from_torch_is_asserted_when_called(tmp_path):
    """A position table of 16 rows bounds seq; the module refuses seq = 17 by the bound."""
    table = torch.randn(16, 4)

    def positions(x):
        return x + table[: x.shape[0]]

    module = parity.export(positions, (torch.randn(5, 4),), format="jax", path=tmp_path / "p.jax",
                           input_names=["x"], dynamic_dims={"x": {0: "seq"}})
    x = torch.randn(16, 4)
    np.testing.assert_array_equal(np.asarray(module.call(x.numpy())[0]), positions(x).numpy())
    with pytest.raises(ValueError, match=r"seq <= 16|- seq \+ 16"):
        module.call(np.zeros((17, 4), np.float32))


def test_a_broadcast_fact_has_no_jax_form_and_is_refused_by_name():
    B, S = Symbol("B"), Symbol("S")
    graph = graph_of([f32[B], f32[S]],
                     lambda b, x, y: [b.add(b.broadcast_in_dim(x, shape=(S,), broadcast_dimensions=(0,)), y)])
    with pytest.raises(ParityError, match=r"relies on B must be 1 or S.*jax.export cannot state.*format='onnx'"):
        export_symbolic(graph)


def test_an_input_dim_that_is_an_expression_is_refused():
    B = Symbol("B")
    graph = graph_of([f32[B * 2]], lambda b, x: [b.exp(x)])
    with pytest.raises(ParityError, match=r"input 0 has the dimension B\*2, an expression"):
        export_symbolic(graph)
