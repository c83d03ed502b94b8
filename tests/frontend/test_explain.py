"""parity.explain: graph breaks and why, aten ops per graph, and per backend which ops run
native, decomposed, unsupported or untranslatable — without compiling anything."""

import pytest
import torch
import torch.nn.functional as F

import parity
from parity.backends.reference import ReferenceBackend
from parity.backends.registry import register_backend, unregister_backend
from parity.frontend import STATS, aten, compiled_graph
from parity.frontend.explain import ExplainReport


@pytest.fixture(autouse=True)
def _fresh():
    torch._dynamo.reset()
    compiled_graph.reset_caches()
    yield
    torch._dynamo.reset()


def _with_print(x):
    y = torch.sin(x) * 2
    print("between graphs")  # the graph break
    return F.gelu(y) + 1


PRINT_LINE = _with_print.__code__.co_firstlineno + 2


def test_print_graph_break_is_reported_with_reason_and_line(capsys):
    report = parity.explain(_with_print, torch.randn(3), backends=["reference"])
    assert isinstance(report, ExplainReport)
    assert capsys.readouterr().out == "between graphs\n"  # the call ran once
    (brk,) = report.breaks
    assert (brk.loc.file, brk.loc.line, brk.loc.function) == (__file__, PRINT_LINE, "_with_print")
    assert "print" in brk.reason
    assert [(g.index, g.kind) for g in report.graphs] == [(0, "inference"), (1, "inference")]
    assert [(r.op, r.count) for r in report.graphs[0].ops] == [("aten.sin.default", 1), ("aten.mul.Tensor", 1)]
    assert [r.op for r in report.graphs[1].ops] == ["aten.gelu.default", "aten.add.Tensor"]
    assert report.graphs[0].op("aten.sin.default").status == {"reference": "native"}
    # gelu is an IR composite the reference backend runs through its decomposition
    gelu = report.graphs[1].op("aten.gelu.default")
    assert gelu.status == {"reference": "decomposed"}
    assert gelu.why["reference"] == "runs the decomposition of gelu"
    assert gelu.loc.line == PRINT_LINE + 1


def test_nothing_is_compiled_for_a_backend():
    parity.explain(_with_print, torch.randn(3))
    assert STATS["translations"] == 0 and STATS["backend_compiles"] == 0


def test_readable_summary():
    text = str(parity.explain(_with_print, torch.randn(3), backends=["reference", "xla"]))
    lines = text.splitlines()
    assert lines[0] == "2 graph(s), 1 graph break(s); backends: reference, xla"
    assert lines[1].startswith(f"break 1 at {__file__}:{PRINT_LINE} in _with_print: ")
    assert "graph 0 (inference, 2 aten ops):" in lines
    assert "  aten.gelu.default x1  reference: decomposed  xla: decomposed" in lines
    assert "  aten.sin.default x1   reference: native  xla: native" in lines


def test_an_op_without_translation_shows_as_untranslatable_everywhere(monkeypatch):
    monkeypatch.delitem(aten.TABLE, "sin.default")
    report = parity.explain(lambda x: torch.sin(x) + torch.cos(x), torch.randn(3), backends=["reference", "xla"])
    sin = report.graphs[0].op("aten.sin.default")
    assert sin.status == {"reference": "untranslatable", "xla": "untranslatable"}
    assert sin.why["xla"] == "parity has no translation for this op (see `parity aten`)"
    assert report.graphs[0].op("aten.cos.default").status == {"reference": "native", "xla": "native"}
    assert report.ops_with("untranslatable", "reference") == ["aten.sin.default"]
    assert "      reference: parity has no translation for this op (see `parity aten`)" in str(report)


class _NoTanh(ReferenceBackend):
    """The reference backend without tanh."""

    name = "no_tanh_explain"

    def claims(self):
        return {op: claim for op, claim in super().claims().items() if op != "tanh"}


@pytest.fixture
def no_tanh():
    register_backend(_NoTanh())
    yield _NoTanh.name
    unregister_backend(_NoTanh.name)


def test_per_backend_native_decomposed_unsupported(no_tanh):
    def f(x):
        return torch.tanh(x) + F.gelu(x, approximate="tanh") + F.gelu(x) + torch.softmax(x, -1)

    report = parity.explain(f, torch.randn(2, 3), backends=["reference", no_tanh])
    graph = report.graphs[0]
    tanh = graph.op("aten.tanh.default")
    assert tanh.status == {"reference": "native", no_tanh: "unsupported"}
    assert tanh.why[no_tanh] == "backend 'no_tanh_explain' does not claim the IR op 'tanh'"
    # one gelu needs tanh inside its decomposition, the other does not: the op shows the worst
    gelu = graph.op("aten.gelu.default")
    assert gelu.count == 2 and gelu.status[no_tanh] == "unsupported"
    assert gelu.why[no_tanh].endswith("(needed by the decomposition of 'gelu')")
    assert graph.op("aten._softmax.default").status[no_tanh] == "decomposed"
    assert graph.op("aten.add.Tensor").status[no_tanh] == "native"
    assert report.ops_with("unsupported", no_tanh) == ["aten.gelu.default", "aten.tanh.default"]


def test_unknown_backend_is_rejected_up_front_with_the_choices():
    # a name no registry knows is a typo (issue 27): a UsageError; a built-in whose stack is
    # not installed is still listed as unavailable
    from parity.validate import UsageError

    with pytest.raises(UsageError, match=r"^unknown backend 'nope'; choose from: reference, "):
        parity.explain(lambda x: x + 1, torch.ones(2), backends=["reference", "nope"])


def test_training_inputs_give_forward_graphs_and_a_module_without_breaks():
    from parity.conformance.models import get_model

    model, inputs = get_model("gpt").instantiate()
    report = parity.explain(model, *inputs, backends=["reference"])
    assert report.breaks == [] and [g.kind for g in report.graphs] == ["forward"]
    attention = report.graphs[0].op("aten._scaled_dot_product_flash_attention_for_cpu.default")
    assert attention.count == 2 and attention.status["reference"] == "decomposed"


def test_explaining_twice_captures_again():
    def f(x):
        return torch.cos(x)

    first = parity.explain(f, torch.ones(2), backends=["reference"])
    second = parity.explain(f, torch.ones(2), backends=["reference"])
    assert [r.op for r in first.graphs[0].ops] == [r.op for r in second.graphs[0].ops] == ["aten.cos.default"]


def test_a_compiled_function_is_explained_as_the_original():
    report = parity.explain(parity.compile(_with_print, backend="reference"), torch.randn(3), backends=["reference"])
    assert len(report.graphs) == 2 and len(report.breaks) == 1
