"""parity.diff on torch code (forward and backward graphs, the user's source lines), and
``parity diff script.py:fn`` on the command line."""

import json

import torch

from parity import diff
from parity.cli import main
from parity.debugger import diff_graphs
from parity.debugger.capture import capture_graphs
from parity.debugger.planted import planted_runner


def _model(x, w):
    h = torch.tanh(x @ w)
    return (h * h).sum(dim=1)


def _inputs():
    g = torch.Generator().manual_seed(0)
    return torch.randn(4, 6, generator=g), torch.randn(6, 3, generator=g, requires_grad=True)


def test_forward_and_backward_graphs_with_source_lines():
    report = diff(_model, *_inputs(), backend="reference")
    assert [g.kind for g in report.graphs] == ["forward", "backward"]
    assert report.exit_code == 0 and report.guilty() == []
    tanh = next(r for r in report.rows if r.op == "tanh" and r.kind == "forward")
    assert tanh.loc.startswith(__file__) and "_model" in tanh.loc
    assert any(r.kind == "backward" for r in report.rows)


def test_backward_graph_reads_the_backends_forward_values():
    graphs = capture_graphs(_model, *_inputs())
    backward = graphs[1]
    assert backward.links, "saved activations are linked to the forward outputs they are"
    node = next(n for n in backward.graph.nodes if n.op == "dot_general")
    runner, planted = planted_runner("reference", node, "dropped_term")
    report = diff_graphs(graphs, runner=runner)
    top = report.ranked()[0]
    assert planted.changed and (top.kind, top.op, top.verdict) == ("backward", "dot_general", "bug")


SCRIPT = '''import torch

def fn(x):
    return torch.exp(x) * 3 - 1

def example_inputs():
    return (torch.linspace(-2, 2, 8),)
'''


def test_cli_writes_json_html_and_no_repro_when_clean(tmp_path, capsys):
    script = tmp_path / "model.py"
    script.write_text(SCRIPT, encoding="utf-8")
    out = {k: tmp_path / f"d.{k}" for k in ("json", "html")}
    code = main(["diff", f"{script}:fn", "--json", str(out["json"]), "--html", str(out["html"]),
                 "--repro", str(tmp_path / "repros")])
    assert code == 0
    text = capsys.readouterr().out
    assert "parity diff: reference/cpu" in text and "no node is over its contract" in text
    doc = json.loads(out["json"].read_text())
    assert any(r["op"] == "exp" and r["loc"].startswith(str(script)) for r in doc["rows"])
    assert out["html"].read_text().startswith("<!doctype html>")
    assert "wrote 0 repro folder(s)" in text


def test_cli_explains_missing_inputs(tmp_path, capsys):
    script = tmp_path / "bare.py"
    script.write_text("def fn(x):\n    return x\n", encoding="utf-8")
    assert main(["diff", f"{script}:fn"]) == 2
    assert "define fn.example_args" in capsys.readouterr().out
    assert main(["diff", f"{script}:nope"]) == 2
    assert main(["diff", "no_such_file.py:fn"]) == 2


def test_cli_runs_the_docs_example_script(tmp_path, capsys):
    """docs/diff.md's model.py: a module with example_args, and a function with example_inputs()."""
    import pathlib

    doc = (pathlib.Path(__file__).parents[2] / "docs" / "diff.md").read_text(encoding="utf-8")
    script = doc.split("# model.py\n", 1)[1].split("```", 1)[0]
    (tmp_path / "model.py").write_text(script, encoding="utf-8")
    assert main(["diff", f"{tmp_path / 'model.py'}:net", "--no-backward"]) == 0
    assert main(["diff", f"{tmp_path / 'model.py'}:fn"]) == 0
    out = capsys.readouterr().out
    assert "dot_general" in out and "exp" in out


def test_parity_diff_is_the_top_level_function():
    import importlib
    import types

    import parity

    assert isinstance(parity.diff, types.FunctionType)  # no module shadows it: the debugger is parity.debugger
    assert isinstance(importlib.import_module("parity.debugger"), types.ModuleType)
    report = parity.diff(_model, *_inputs(), backend="reference")
    assert report.exit_code == 0 and [g.kind for g in report.graphs] == ["forward", "backward"]
