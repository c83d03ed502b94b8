"""fx_to_ir itself: the calling spec, source locations, constants, errors, coverage."""

import json

import pytest
import torch

import parity
from parity.cli import main
from parity.frontend import coverage, translated_ops
from parity.frontend.aten import TABLE
from parity.frontend.source import loc_from_stack_trace


def _user_line(x):
    return torch.cos(x) + 1  # every node of this line carries it


def test_every_node_carries_the_users_source_line(monkeypatch):
    from parity.frontend import single_backend

    graphs = []
    real = single_backend.prepare
    monkeypatch.setattr(single_backend, "prepare", lambda graph, backend: graphs.append(graph) or real(graph, backend))
    x = torch.randn(3, requires_grad=True)
    parity.compile(_user_line, backend="reference")(x).sum().backward()
    line = _user_line.__code__.co_firstlineno + 1
    assert [g.name for g in graphs] == ["forward", "backward"]
    for graph in graphs:  # backward nodes carry the forward line they differentiate
        assert {(n.loc.line, n.loc.function) for n in graph.nodes} == {(line, "_user_line")}
        assert graph.nodes[0].loc.file.endswith("test_translate.py")


def test_stack_trace_skips_torch_frames():
    import torch.nn.functional as F

    trace = (f'File "/home/u/model.py", line 3, in forward\n    y = f(x)\n'
             f'File "{F.__file__}", line 99, in relu\n    return torch.relu(x)\n')
    assert str(loc_from_stack_trace(trace)) == "/home/u/model.py:3 in forward"
    assert loc_from_stack_trace(None) is None


def test_calling_spec_passes_inputs_through_and_appends_random_keys(to_ir):
    t = to_ir(lambda x, y: (x, y * 2, torch.rand(2)), torch.ones(2), torch.ones(2))
    assert t.outputs[0] == ("input", 0)
    assert [o[0] for o in t.outputs[1:]] == ["ir", "ir"]
    assert t.num_keys == 1 and str(t.graph.inputs[-1].type) == "u32[2]"


def test_captured_tensors_become_constants(to_ir):
    weight = torch.tensor([1.0, 2.0])
    t = to_ir(lambda x: x * weight, torch.ones(2))
    assert t.graph.op_counts().get("constant", 0) >= 1 and len(t.graph.inputs) == 1


def test_table_keys_are_real_aten_overloads_and_cover_most_of_core_aten():
    pytest.importorskip("transformers")  # registers the custom ops of frontend/aten/custom_ops.py
    import transformers.integrations.moe  # noqa: F401

    for key in TABLE:
        if "." not in key:  # a higher-order op (aten/rng_state.py), by its name
            assert isinstance(getattr(torch.ops.higher_order, key), torch._ops.HigherOrderOperator), key
            continue
        namespace, name, overload = (["aten"] if key.count(".") == 1 else []) + key.split(".")
        packet = getattr(getattr(torch.ops, namespace), name)
        assert isinstance(getattr(packet, overload), torch._ops.OpOverload), key
    report = coverage()
    assert report["translated"] == translated_ops()
    core_missing = set(report["core_missing"])
    assert "aten.convolution_backward.default" not in core_missing
    assert "aten.native_layer_norm_backward.default" not in core_missing
    assert len(core_missing) < 30


def test_parity_aten_cli_counts(capsys):
    assert main(["aten", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert "aten.add.Tensor" in report["translated"]
    assert main(["aten"]) == 0
    out = capsys.readouterr().out
    assert f"{len(report['translated'])} aten ops translate" in out
    assert f"{len(report['core_missing'])} Core ATen ops do not translate yet" in out


def _spectrum(x):  # a float8 value: no IR form (docs/troubleshooting-cli.md)
    return x.to(torch.float8_e4m3fn).to(torch.float32) * 2


def test_untranslated_op_is_reported_with_its_name_and_line():
    from parity.frontend.errors import UnsupportedAtenOp

    line = _spectrum.__code__.co_firstlineno + 1
    with pytest.raises(UnsupportedAtenOp, match=rf"^aten._to_copy.default at .*test_translate.py:{line} "
                                                 r"in _spectrum cannot run on backend 'reference'\n  why: parity's IR "
                                                 r"has no float8_e4m3fn dtype"):
        parity.compile(_spectrum, backend="reference")(torch.ones(1, 2, 8))
