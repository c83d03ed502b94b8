"""parity.compile's default ``dynamic=None`` is torch.compile's automatic dynamic: the first call
captures static sizes, and a dim (or a Python number) that changes becomes symbolic at the next
capture, which serves every later value. ``dynamic=False`` keeps the old behaviour, a capture per
shape. Captures are Dynamo's ``unique_graphs``; numbers are compared with eager torch.

A symbolic int used as a tensor value (``x * k``, ``arange(past, past + n)``) reaches the graph as an
``i64[]`` input computed per call from the bound sizes (frontend/translate.py, Translation.size_values).
"""

import warnings

import pytest
import torch
from torch._dynamo.utils import counters

import parity
from parity.frontend.capture import capture_program
from parity.frontend.graph_breaks import GraphBreakWarning
from parity.frontend.translate import fx_to_ir

BATCHES = [3, 5, 1, 7, 2, 16, 9, 11, 4, 13, 6, 64, 33]


def _mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4)).eval()


def _calls(compiled, eager, batches):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for batch in batches:
            x = torch.randn(batch, 16)
            torch.testing.assert_close(compiled(x), eager(x), rtol=1e-5, atol=2e-6)
    return [w for w in caught if issubclass(w.category, GraphBreakWarning)]


@pytest.mark.parametrize("backend", ["onnx", "xla", "reference", pytest.param("inductor", marks=pytest.mark.matrix)])
def test_a_batch_that_changes_is_captured_twice_then_served_at_every_size(backend):
    mlp = _mlp()
    torch._dynamo.reset()  # automatic dynamic remembers changed dims per code object (Sequential.forward)
    counters.clear()
    assert _calls(parity.compile(mlp, backend=backend), mlp, BATCHES) == []
    captures = counters["stats"]["unique_graphs"]
    torch._dynamo.reset()
    counters.clear()
    _calls(torch.compile(mlp, backend="eager"), mlp, BATCHES)  # torch.compile's own count, for comparison
    # the first size static; the second call's capture has a symbolic batch, which serves every
    # later size but 1: Dynamo specializes sizes 0 and 1, so size 1 takes a third, static capture
    assert captures == 3 == counters["stats"]["unique_graphs"]


def test_dynamic_false_captures_every_size_until_dynamos_limit():
    counters.clear()
    mlp = _mlp()
    with torch._dynamo.config.patch(recompile_limit=4):
        caught = _calls(parity.compile(mlp, backend="onnx", dynamic=False), mlp, BATCHES[:6])
    assert counters["stats"]["unique_graphs"] == 4
    (warning,) = caught
    assert warning.category.__name__ == "RecompileLimitWarning"
    # Dynamo's record names torch's module-call wrapper (inner(*args)): the warning names the user's
    # parity.compile line (Sequential's forward is torch's code) and forward's parameter name
    assert warning.filename == __file__
    first, why, fix = str(warning.message).splitlines()
    assert first.startswith(f"parity.compile: {__file__}:") and " was compiled 4 times" in first
    assert why.startswith("  why: the size of input at dim 0 changed")
    assert "torch._dynamo.mark_dynamic(input, 0)" in fix


def scales(x, k):
    return x * k


def positions(x, past):
    return x + torch.arange(past, past + x.shape[0])


def strided_positions(x, past):
    return x * torch.arange(past, past + 2 * x.shape[0], 2, dtype=torch.float32) / past


def decays(x, lr):
    return x * lr + lr


NUMBER_CASES = {
    "int used as a value": (scales, lambda n: (torch.arange(3.0), n)),
    "negative int used as a value": (scales, lambda n: (torch.arange(3.0), -n)),  # no dim can be negative
    "int starting a slice of a static tensor": (lambda x, k: x[k:k + 2] * 2, lambda n: (torch.arange(12.0), n)),
    "int starting an arange": (positions, lambda n: (torch.arange(n + 2), 3 * n)),
    "int starting a strided float arange": (strided_positions, lambda n: (torch.randn(2 * n + 3), n + 1)),
    "float argument": (decays, lambda n: (torch.randn(3), 0.1 * n)),
}


@pytest.mark.parametrize("backend", ["onnx", "xla", "reference"])
@pytest.mark.parametrize("case", sorted(NUMBER_CASES))
def test_a_python_number_that_changes_becomes_a_graph_input(case, backend):
    counters.clear()
    fn, args = NUMBER_CASES[case]
    compiled = parity.compile(fn, backend=backend)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(1, 7):
            call = args(n)
            torch.testing.assert_close(compiled(*call), fn(*call), rtol=1e-6, atol=0)
    assert [w for w in caught if issubclass(w.category, GraphBreakWarning)] == []
    assert counters["stats"]["unique_graphs"] == 2


def test_a_size_value_on_inductor_gives_eagers_numbers_for_values_met_again():
    """inductor keeps a size value's tensor per value (InductorExecutable.guarded): a value met
    again, or a new one, gives eager's numbers, in the dynamic graph and its direct calls."""
    compiled = parity.compile(scales, backend="inductor")
    with torch.no_grad():
        for n in (2, 3, 4, 3, 2, 7, 4):
            x = torch.arange(3.0)
            torch.testing.assert_close(compiled(x, n), scales(x, n), rtol=1e-6, atol=0)


def test_a_size_used_as_a_value_is_an_input_computed_at_each_call():
    from torch.fx.experimental.proxy_tensor import make_fx

    gm = make_fx(positions, tracing_mode="symbolic")(torch.arange(5), 7)
    assert fx_to_ir(gm).size_values == ()  # by default the graph computes it (capture, export, tools)
    translation = fx_to_ir(gm, sizes_as_inputs=True)  # parity.compile's way
    (past,) = translation.size_values
    graph = translation.graph
    # the tensor, the carrier of the int's symbol, then the size value: i64[], after them
    assert [str(v.type) for v in graph.inputs][-1] == "i64[]"
    assert str(past) in {name for name in translation.symbols}


def test_capture_computes_a_size_used_as_a_value_inside_the_graph():
    # a captured graph takes the user's tensors alone, so the size is computed in it (a sum of ones)
    seq = torch.export.Dim("seq", min=2, max=64)
    program = capture_program(lambda x: x + torch.arange(x.shape[0], 2 * x.shape[0]), torch.arange(5),
                              dynamic_shapes=({0: seq},))
    assert [name.split()[0] for name in program.input_names] == ["input"]
    for n in (3, 9, 17):
        x = torch.arange(n) * 3
        (got,) = program.run(x)
        assert torch.equal(got, x + torch.arange(n, 2 * n))


def pads(x):
    return torch.nn.functional.pad(x, (2, 1), mode="replicate").square().sum()


def test_a_graph_whose_op_has_no_symbolic_form_compiles_per_shape_with_one_warning():
    # replication padding's backward pads a symbolic dim, which no IR op holds: the symbolic capture's
    # backward graph is compiled again per concrete shape instead of failing (frontend/per_shape.py)
    compiled = parity.compile(pads, backend="onnx")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for length in (5, 6, 7, 9, 6):
            x = torch.randn(2, 3, length, requires_grad=True)
            x_eager = x.detach().clone().requires_grad_(True)
            compiled(x).backward()
            pads(x_eager).backward()
            torch.testing.assert_close(x.grad, x_eager.grad, rtol=1e-6, atol=1e-6)
    (warning,) = [w for w in caught if issubclass(w.category, GraphBreakWarning)]
    assert warning.category.__name__ == "PerShapeWarning"
    first, fix = str(warning.message).splitlines()
    assert first.startswith("parity.compile: the sizes of the backward graph at ")
    assert ("change between calls, but aten.replication_pad1d_backward.default has no form with symbolic sizes in "
            "parity's IR (on every backend) (padding a symbolic dimension): it compiles again for each new shape, as "
            "with dynamic=False") in first
    # the IR's own limit: no other backend would run it at symbolic sizes, so none is suggested
    assert fix.startswith("  fix: nothing is needed for correct results") and "use a backend" not in fix
