"""Capture of symbolic sizes: torch's size expressions become IR dim expressions, and a
dim declared dynamic is never silently fixed (tests/test_export_dynamic.py runs the files)."""

import pytest
import sympy
import torch
from torch.utils._sympy.functions import CleanDiv, FloorDiv, Mod, ModularIndexing, PythonMod

import parity
from parity.frontend.sizes import UntranslatedCase, sympy_dim
from parity.frontend.specialize import SpecializedDimension
from parity.ir import Symbol

s0, s1 = sympy.symbols("s0 s1", integer=True, positive=True)
B, S = Symbol("s0"), Symbol("s1")


@pytest.mark.parametrize("expr, want", [
    (s0 * 4, B * 4),
    (s0 * s1 + 2, B * S + 2),
    (FloorDiv(s1, 2), S // 2),
    (CleanDiv(s0 * 6, 3), B * 2),
    (Mod(s0, 3), B % 3),
    (PythonMod(s0 + 1, 2), (B + 1) % 2),
    (ModularIndexing(s0, 2, 4), B // 2 % 4),
    (s0**2, B * B),
    (sympy.Integer(7), 7),
])
def test_torch_size_expressions_become_dim_expressions(expr, want):
    assert sympy_dim(expr) == want


def test_a_size_function_ir_dims_lack_is_named():
    with pytest.raises(UntranslatedCase, match="uses Max"):
        sympy_dim(sympy.Max(s0, s1))


def test_size_arithmetic_in_the_graph_becomes_dims():
    graph = parity.capture(lambda x: x.reshape(x.shape[0] * x.shape[1], -1) * 2, torch.randn(3, 4, 2),
                           dynamic_shapes=({0: torch.export.Dim("b"), 1: torch.export.Dim("s")},))
    (b, s, _), (flat, _) = graph.inputs[0].type.shape, graph.outputs[0].type.shape
    assert flat == b * s


def _export(fn, *args, dims, tmp_path):
    return parity.export(fn, args, path=tmp_path / "m.onnx", input_names=["x"], dynamic_dims={"x": dims})


def test_a_dim_fixed_by_the_code_is_an_error_naming_the_op_and_line(tmp_path):
    def scale(x):
        return x * torch.ones(3, 4)  # works only for batch 3

    with pytest.raises(SpecializedDimension) as info:
        _export(scale, torch.randn(3, 4), dims={0: "batch"}, tmp_path=tmp_path)
    message = str(info.value)
    assert message.startswith("the dynamic dim 'batch' would be baked in as the constant 3\n")
    assert "return x * torch.ones(3, 4)" in message and f"{__file__}:" in message
    assert "op: broadcasting" in message and "drop 'batch' from dynamic_dims" in message


def test_a_one_sized_example_dim_is_an_error_with_what_to_do(tmp_path):
    with pytest.raises(SpecializedDimension) as info:
        _export(lambda x: x * 2, torch.randn(1, 4), dims={0: "batch"}, tmp_path=tmp_path)
    assert str(info.value) == (
        "the dynamic dim 'batch' would be baked in as the constant 1\n"
        "  why: batch is 1 in the example inputs, and tracing specializes sizes 0 and 1\n"
        "  fix: give an example with batch >= 2 (the export still runs at batch = 1)")


def test_a_dim_tied_to_another_is_an_error_naming_the_op(tmp_path):
    def square(x):
        return x @ x  # needs rows == columns

    with pytest.raises(SpecializedDimension) as info:
        _export(square, torch.randn(4, 4), dims={0: "batch", 1: "seq"}, tmp_path=tmp_path)
    message = str(info.value)
    assert message.startswith("the dynamic dim 'seq' would be tied to batch\n")
    assert "return x @ x" in message and "(op: mm)" in message


def test_equal_example_sizes_stay_separate_dims(tmp_path):
    proto = _export(lambda x: x.sum(1) * 2, torch.randn(4, 4), dims={0: "batch", 1: "seq"}, tmp_path=tmp_path)
    assert [d.dim_param for d in proto.graph.input[0].type.tensor_type.shape.dim] == ["batch", "seq"]


class Positions(torch.nn.Module):
    """A learned position table of 16 rows: the sequence can be at most 16 long."""

    def __init__(self):
        super().__init__()
        self.table = torch.nn.Parameter(torch.randn(16, 4))
        self.register_buffer("ids", torch.arange(16).unsqueeze(0))

    def forward(self, x):  # x [B, S, 4]
        return x + self.table[self.ids[:, : x.shape[1]]]


def test_a_bound_the_model_has_is_kept_as_an_assumption_not_a_specialization():
    from parity.frontend.capture import capture_program

    dims = {0: torch.export.Dim("batch"), 1: torch.export.Dim("seq")}
    program = capture_program(Positions(), torch.randn(2, 5, 4), dynamic_shapes=(dims,))
    seq = program.graph.inputs[-1].type.shape[1]
    assert [str(c) for c in program.graph.assumptions] == [f"{seq} must be <= 16 (torch.export: the model's range)"]
    model = Positions()
    for length in (1, 7, 16):
        x = torch.randn(3, length, 4)
        (got,) = program.run(x)
        torch.testing.assert_close(got, Positions.forward(_with_state(model, program), x))
    with pytest.raises(parity.ir.ParityError, match=rf"the model's range: {seq} must be <= 16, but {seq} = 17"):
        program.run(torch.randn(1, 17, 4))


def _with_state(model, program):
    model.load_state_dict({k: v for k, v in program.state.items()}, strict=False)
    return model


def test_dynamic_dims_of_keyword_arguments_export_as_models_are_called(tmp_path):
    """Keyword inputs with dynamic dims export (they used to be refused: "pass those tensors
    positionally"); the file runs at other sizes of the symbolic dim."""
    import onnxruntime

    def f(x):
        return x * 2

    path = tmp_path / "k.onnx"
    parity.export(f, (), kwargs={"x": torch.randn(2, 3)}, path=path, dynamic_dims={"x": {0: "batch"}})
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (name,) = [i.name for i in session.get_inputs()]
    assert session.get_inputs()[0].shape == ["batch", 3]
    for batch in (1, 5):
        x = torch.randn(batch, 3)
        (got,) = session.run(None, {name: x.numpy()})
        assert got.tolist() == (x * 2).tolist()
