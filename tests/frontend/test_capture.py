"""parity.capture: whole forward graphs via torch.export, as IR with the user's lines."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import parity
from parity import ir
from parity.frontend import aten
from parity.frontend.capture import capture_program
from parity.frontend.errors import UnsupportedAtenOp

RTOL, ATOL = 1e-4, 1e-5
LINE = {}  # function name -> first line, for the loc assertions


def _scaled_softmax(x, w):
    y = x @ w
    return torch.softmax(y, -1) * 3


def _helper(x):
    return torch.tanh(x)


def _calls_helper(x):
    return _helper(x) + 1


def test_function_graph_ops_types_and_values():
    x, w = torch.randn(2, 3), torch.randn(3, 4)
    graph = parity.capture(_scaled_softmax, x, w)
    assert isinstance(graph, ir.Graph)
    assert graph.name == "_scaled_softmax"
    assert [str(v.type) for v in graph.inputs] == ["f32[2,3]", "f32[3,4]"]
    assert [n.op for n in graph.nodes] == ["dot_general", "softmax", "constant", "broadcast_in_dim", "mul"]
    assert [str(v.type) for v in graph.outputs] == ["f32[2,4]"]
    (out,) = ir.evaluate(graph, [x.numpy(), w.numpy()])
    torch.testing.assert_close(torch.from_numpy(out), _scaled_softmax(x, w), rtol=RTOL, atol=ATOL)


def test_print_shows_the_users_source_lines():
    graph = parity.capture(_scaled_softmax, torch.randn(2, 3), torch.randn(3, 4))
    first = _scaled_softmax.__code__.co_firstlineno
    lines = {n.op: (n.loc.file, n.loc.line, n.loc.function) for n in graph.nodes}
    assert lines["dot_general"] == (__file__, first + 1, "_scaled_softmax")
    assert lines["softmax"] == (__file__, first + 2, "_scaled_softmax")
    text = str(graph)
    assert f'= softmax(%2) {{axis=1}} loc("{__file__}", {first + 2}, "_scaled_softmax")' in text
    assert ir.parse(text) == graph  # the printed graph is the graph


def test_lines_inside_called_helpers_are_the_innermost_user_frame():
    graph = parity.capture(_calls_helper, torch.randn(3))
    loc = {n.op: n.loc for n in graph.nodes}
    assert (loc["tanh"].line, loc["tanh"].function) == (_helper.__code__.co_firstlineno + 1, "_helper")
    assert (loc["add"].line, loc["add"].function) == (_calls_helper.__code__.co_firstlineno + 1, "_calls_helper")


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.bn = nn.BatchNorm1d(3)
        self.register_buffer("offset", torch.tensor([1.0, 2.0, 3.0]))

    def forward(self, x, *, shift):
        return self.bn(F.relu(self.fc(x))) + self.offset + shift


def test_module_parameters_and_buffers_are_graph_inputs_in_signature_order():
    torch.manual_seed(0)
    net = _Net().eval()
    x, shift = torch.randn(5, 4), torch.randn(3)
    program = capture_program(net, x, shift=shift)
    assert program.input_names == ["param fc.weight", "param fc.bias", "param bn.weight", "param bn.bias",
                                   "buffer offset", "buffer bn.running_mean", "buffer bn.running_var",
                                   "input x", "input shift"]  # eval mode never reads num_batches_tracked
    assert [str(v.type) for v in program.graph.inputs] == ["f32[3,4]", "f32[3]", "f32[3]", "f32[3]", "f32[3]",
                                                           "f32[3]", "f32[3]", "f32[5,4]", "f32[3]"]
    assert program.output_names == ["output 0"]
    assert program.state["fc.weight"] is net.fc.weight
    (out,) = program.run(x, shift=shift)
    torch.testing.assert_close(out, net(x, shift=shift), rtol=RTOL, atol=ATOL)
    # weights are inputs, not baked in: new weights, same graph
    with torch.no_grad():
        net.fc.weight.mul_(-2)
    torch.testing.assert_close(program.run(x, shift=shift)[0], net(x, shift=shift), rtol=RTOL, atol=ATOL)


def test_batch_norm_in_training_mode_outputs_the_updated_buffers_first():
    torch.manual_seed(0)
    bn = nn.BatchNorm1d(3).train()
    x = torch.randn(6, 3) * 2 + 1
    program = capture_program(bn, x)
    assert program.output_names == ["buffer num_batches_tracked", "buffer running_mean", "buffer running_var",
                                    "output 0"]
    count, mean, var, out = program.run(x)
    expected = bn(x)  # eager: updates bn's buffers (capture did not)
    torch.testing.assert_close(out, expected, rtol=RTOL, atol=ATOL)
    torch.testing.assert_close(mean, bn.running_mean, rtol=RTOL, atol=ATOL)
    torch.testing.assert_close(var, bn.running_var, rtol=RTOL, atol=ATOL)
    assert count.dtype == torch.int64 and count.item() == 1 == bn.num_batches_tracked.item()


def test_random_ops_get_key_inputs_last():
    program = capture_program(lambda x: torch.rand(3) + x, torch.ones(3))
    assert program.input_names == ["input x", "key 0"]
    assert str(program.graph.inputs[1].type) == "u32[2]"
    assert [n.op for n in program.graph.nodes] == ["uniform", "add"]


def test_attention_captures_as_the_ir_composite():
    q = k = v = torch.randn(1, 2, 4, 8)
    graph = parity.capture(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), q, k, v)
    assert "scaled_dot_product_attention" in graph.op_counts()
    (out,) = ir.evaluate(graph, [q.numpy(), k.numpy(), v.numpy()])
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(torch.from_numpy(out), expected, rtol=RTOL, atol=ATOL)


def _uses_tanh(x):
    y = x * 2
    return torch.tanh(y)  # the line the error names


def test_an_op_without_translation_names_the_op_and_the_line(monkeypatch):
    monkeypatch.delitem(aten.TABLE, "tanh.default")
    with pytest.raises(UnsupportedAtenOp) as info:
        parity.capture(_uses_tanh, torch.randn(3))
    first = str(info.value).splitlines()[0]
    assert first == (f"aten.tanh.default at {__file__}:{_uses_tanh.__code__.co_firstlineno + 2} in _uses_tanh "
                     f"cannot be captured into parity's IR")
    assert "fix: capture and export need every op in the IR" in str(info.value)


def test_code_that_cannot_be_captured_whole_is_torchs_export_error():
    def data_dependent(x):
        if x.sum() > 0:  # control flow on a value: torch.export cannot capture one graph
            return x + 1
        return x - 1

    with pytest.raises(Exception, match="(?i)data-dependent|guard|dynamic control flow"):
        parity.capture(data_dependent, torch.ones(2))


def test_compiled_functions_and_modules_capture_as_the_originals():
    compiled = parity.compile(_scaled_softmax, backend="reference")
    x, w = torch.randn(2, 3), torch.randn(3, 4)
    assert parity.capture(compiled, x, w) == parity.capture(_scaled_softmax, x, w)
    net = nn.Linear(3, 2)
    program = capture_program(parity.compile(net, backend="reference"), x)
    assert program.input_names == ["param weight", "param bias", "input input"]
