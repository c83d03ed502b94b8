"""Repro round trip: the folder holds a loadable regression and a script that, run in a
fresh interpreter without the model, reproduces the fault (and passes on the real backend)."""

import json
import subprocess
import sys

from parity.conformance import regressions
from parity.debugger import diff_graph
from parity.debugger.planted import planted_runner
from parity.debugger.repro import load, rerun
from parity.ir import parse

from .graphs import mixed

PLUGIN = '''from parity.backends.registry import get_backend
from parity.conformance.mutants import Planted
from parity.debugger.planted import FAULT_CLASSES

BACKEND = Planted(get_backend("reference"), FAULT_CLASSES["dropped_term"])
'''


def _guilty_report():
    graph, arrays = mixed()
    node = next(n for n in graph.nodes if n.op == "dot_general")
    runner, planted = planted_runner("reference", node, "dropped_term")
    return diff_graph(graph, arrays, runner=runner), node, arrays, planted


def test_repro_folder_round_trip(tmp_path):
    report, node, _, planted = _guilty_report()
    folders = report.write_repro(tmp_path)
    assert len(folders) == 1 and folders[0].name.startswith("01-g0.n2-dot_general")
    case = load(folders[0])
    assert [n.op for n in case.graph.nodes] == ["dot_general"]
    assert parse(case.graph.to_text()).content_hash() == case.graph.content_hash()
    assert case.meta["found"]["node"] == "g0.n2" and case.meta["op"] == "dot_general"
    # the operands are the exact bytes the backend fed the node (its own upstream values)
    assert case.arrays[0].tobytes() == report.kept["g0.n2"][0].tobytes()
    assert regressions.load(next(folders[0].glob("*.ir"))).case().id.startswith("dot_general[f32]:regression")
    assert rerun(folders[0], planted)["reproduced"]


def test_repro_script_reproduces_in_a_fresh_process(tmp_path):
    report, *_ = _guilty_report()
    folder = report.write_repro(tmp_path / "repros")[0]
    (tmp_path / "my_plugin.py").write_text(PLUGIN, encoding="utf-8")
    env_path = {"PYTHONPATH": str(tmp_path)}
    import os

    env = {**os.environ, **env_path}
    faulty = subprocess.run([sys.executable, str(folder / "repro.py"), "--backend-from", "my_plugin:BACKEND",
                             "--json"], capture_output=True, text=True, env=env, timeout=300)
    assert faulty.returncode == 1, faulty.stderr
    result = json.loads(faulty.stdout)
    assert result["reproduced"] and result["backend_ratio"] > 1 and result["spec_passed"]
    assert result["nodes"] <= 10
    clean = subprocess.run([sys.executable, str(folder / "repro.py")], capture_output=True, text=True, env=env,
                           timeout=300)
    assert clean.returncode == 0, clean.stderr
    assert "within the contract" in clean.stdout and "dot_general" in clean.stdout


def test_at_most_ten_repros(tmp_path):
    from parity.backends.registry import get_backend
    from parity.conformance.mutants import Planted
    from parity.debugger.execute import NodeRunner
    from parity.debugger.planted import FAULT_CLASSES, applies

    from .graphs import chain

    graph, arrays = chain(20, 8)
    real = get_backend("reference")
    planted = Planted(real, FAULT_CLASSES["few_ulp"])
    faulty = {n: planted for n in graph.nodes if applies(FAULT_CLASSES["few_ulp"], n)}
    report = diff_graph(graph, arrays, runner=NodeRunner(real, fault_at=faulty))
    assert len(report.guilty()) == len(faulty) > 10
    assert len(report.kept) == 10  # only the worst K operands were kept while streaming
    folders = report.write_repro(tmp_path)
    assert len(folders) == 10 and [f.name[:2] for f in folders] == [f"{i:02d}" for i in range(1, 11)]
