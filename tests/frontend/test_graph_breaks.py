"""parity.compile warns when Dynamo splits the function and runs a piece in eager torch:
what failed, the user's line, Dynamo's reason and what to do, once per break, in both
strict modes (tests/parity/test_front_door.py covers every kind of break and fullgraph=True)."""

import warnings

import pytest
import torch

import parity
from parity.frontend.graph_breaks import GraphBreakWarning


def positives(x):
    y = x * 2
    count = torch.nonzero(y > 0).shape[0]  # a data-dependent size: Dynamo breaks the graph here
    return y.sum() + count


def test_strict_mode_names_the_break_the_line_and_the_fix():
    f = parity.compile(positives, backend="reference")
    x = torch.tensor([-1.0, 2.0, 3.0])
    with pytest.warns(GraphBreakWarning) as caught:
        assert f(x).item() == positives(x).item() == 10.0
    (message,) = [str(w.message) for w in caught if w.category is GraphBreakWarning]
    lines = message.splitlines()
    assert lines[0].startswith("parity.compile: Dynamo split the function at ")
    assert "test_graph_breaks.py:16" in lines[0] and "runs in eager torch, not on 'reference'" in lines[0]
    assert lines[1].startswith("  why: Dynamic shape operator") and "nonzero" in lines[1]
    assert "fullgraph=True" in lines[2] and "parity.explain" in lines[2]
    with warnings.catch_warnings():
        warnings.simplefilter("error", GraphBreakWarning)  # once per break, not per call
        f(torch.tensor([1.0, 1.0, -1.0]))


def test_no_warning_without_a_break():
    with warnings.catch_warnings():
        warnings.simplefilter("error", GraphBreakWarning)
        parity.compile(lambda x: torch.relu(x * 2), backend="reference")(torch.ones(3))


def test_strict_false_warns_about_a_break_too():
    with pytest.warns(GraphBreakWarning, match="Dynamo split the function at .*test_graph_breaks.py:16"):
        parity.compile(positives, backend="reference", strict=False)(torch.ones(3))


GRADIENT_NEEDS_NONZERO = '''
import torch, parity
def scatter_rows(x, v, mask):
    return torch.index_put(x, (mask,), v).sin()
x, v = torch.randn(5, 3, requires_grad=True), torch.randn(3, requires_grad=True)
mask = torch.tensor([True, False, True, False, False])
parity.compile(scatter_rows, backend="reference")(x, v, mask).sum().backward()
xe, ve = x.detach().clone().requires_grad_(), v.detach().clone().requires_grad_()
scatter_rows(xe, ve, mask).sum().backward()
print(torch.equal(v.grad, ve.grad) and torch.equal(x.grad, xe.grad))
'''


def test_a_data_dependent_size_in_the_gradient_trace_is_one_warning_at_the_users_line_and_nothing_else(tmp_path):
    # index_put's gradient with a boolean mask is grad[mask] (nonzero): AOTAutograd's trace fails,
    # Dynamo runs the frame eagerly and logs its own warning plus autograd's anomaly report
    import subprocess
    import sys

    script = tmp_path / "model.py"
    script.write_text(GRADIENT_NEEDS_NONZERO)
    run = subprocess.run([sys.executable, "-W", "default", str(script)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip() == "True"  # eager's gradients
    lines = run.stderr.strip().splitlines()
    assert lines[0] == (f"{script}:4: GraphBreakWarning: parity.compile: the function at {script}:4 in scatter_rows "
                        "runs in eager torch, not on 'reference'")
    assert lines[1].startswith("  why: aten.nonzero.default has an output whose size depends on the data")
    assert lines[2].startswith("  fix: give that value a static size")
    assert lines[3].strip() == "return torch.index_put(x, (mask,), v).sin()"  # Python shows the warned line
    assert len(lines) == 4, run.stderr  # no Dynamo log lines, no anomaly-mode report


def test_an_rnn_module_inside_a_function_gets_the_allow_rnn_fix():
    """A function calling an nn.GRU it closes over (not the module compiled itself, which
    rnn_modules.py names at the compile line): Dynamo's break names RNNs, and the fix is the
    one-line switch, which then runs it on the backend with eager's numbers."""
    gru = torch.nn.GRU(3, 4, batch_first=True)
    x = torch.randn(2, 5, 3)

    def encode(t):
        return gru(t)[0].tanh()

    with pytest.warns(GraphBreakWarning) as caught:
        parity.compile(encode, backend="reference")(x)
    (message,) = [str(w.message) for w in caught if w.category is GraphBreakWarning]
    assert "RNN, GRU, or LSTM" in message.splitlines()[1]
    assert message.splitlines()[2].startswith("  fix: set torch._dynamo.config.allow_rnn = True")
    torch._dynamo.reset()  # Dynamo does not retry a frame it skipped
    with pytest.raises(parity.frontend.graph_breaks.GraphBreakError, match=r"fix: set torch._dynamo.config.allow_rnn"):
        parity.compile(encode, backend="reference", fullgraph=True)(x)
    torch._dynamo.reset()
    with torch._dynamo.config.patch(allow_rnn=True), warnings.catch_warnings():
        warnings.simplefilter("error", GraphBreakWarning)
        got = parity.compile(encode, backend="reference")(x)
    torch.testing.assert_close(got, encode(x), rtol=1e-5, atol=1e-6)


def test_a_module_full_backward_hook_gets_the_tensor_hook_fix():
    """Dynamo runs a module with a full backward hook eagerly (torch.compile too: "Module-level
    backwards hooks require compiled autograd"); the fix the warning names, a hook on the
    module's output tensor, then compiles with no break and eager's gradients."""
    torch.manual_seed(0)
    lin = torch.nn.Linear(4, 4)
    x = torch.randn(3, 4)

    def halve(module, grad_in, grad_out):
        return (grad_in[0] * 0.5,)

    hooked = torch.nn.Sequential(lin, torch.nn.Tanh())
    hooked[1].register_full_backward_hook(halve)
    torch._dynamo.reset()
    with pytest.warns(GraphBreakWarning) as caught:
        parity.compile(hooked, backend="reference")(x).sum().backward()
    (message,) = [str(w.message) for w in caught if w.category is GraphBreakWarning]
    assert "backwards hooks" in message.splitlines()[1]
    assert message.splitlines()[2].startswith("  fix: hook the tensor instead: in forward, out.register_hook(fn)")

    class TensorHooked(torch.nn.Module):  # the fix applied
        def forward(self, t):
            out = torch.tanh(lin(t))
            out.register_hook(lambda g: g * 0.5)  # the gradient that reaches tanh's output, halved
            return out

    expected = torch.autograd.grad(hooked(x).sum(), lin.weight)[0]
    torch._dynamo.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error", GraphBreakWarning)
        got = torch.autograd.grad(parity.compile(TensorHooked(), backend="reference")(x).sum(), lin.weight)[0]
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)


@torch.compiler.disable
def _sorted_eagerly(h):
    return h.sort(-1).values


def test_a_break_the_user_asked_for_with_compiler_disable_names_no_rewrite():
    """torch.compiler.disable on a helper is the user's own choice: the warning says where the
    code runs and that nothing needs fixing (not "rewrite that code"); eager's numbers."""
    def f(x):
        h = x * 2
        return _sorted_eagerly(h).tanh() + h

    x = torch.randn(3, 5)
    torch._dynamo.reset()
    with pytest.warns(GraphBreakWarning) as caught:
        got = parity.compile(f, backend="reference")(x)
    torch.testing.assert_close(got, f(x), rtol=1e-5, atol=1e-6)
    (message,) = [str(w.message) for w in caught if w.category is GraphBreakWarning]
    assert "torch.compiler.disable" in message.splitlines()[1]
    assert message.splitlines()[2].startswith("  fix: none needed if that function is meant to run in eager torch")
