"""Conformance on worker processes (conformance/controller.py): the same cells as a serial
run, and planted native faults (segfault, abort, os._exit, a hang, an allocation past the
memory cap, a one-off crash) contained as cells while every other cell still arrives."""

import dataclasses
import json
import pathlib

import pytest

from parity.backends.registry import unregister_backend
from parity.conformance import runner
from parity.conformance.controller import WorkerOptions
from parity.conformance.plugins import load_plugins
from parity.conformance.results import CRASHED, PASS, TIMED_OUT
from parity.ir.dtypes import DType

HERE = pathlib.Path(__file__).parent
F32 = [DType.float32]


@pytest.fixture
def plugins_importable(monkeypatch):
    monkeypatch.syspath_prepend(str(HERE))  # workers get the controller's sys.path
    yield
    for name in ("segfaults", "aborts", "exits", "hangs", "allocates", "flaky", "segfaults_on_matmul", "add_off"):
        unregister_backend(name)


def _cells(run):
    return [dataclasses.asdict(c) for c in run.cells]


def test_two_workers_give_the_serial_cells_cell_for_cell():
    ops = "^(neg|abs|exp|add|sum|dot_general|sort)$"
    serial = runner.run(["reference"], ops=ops, quick=True)
    parallel = runner.run(["reference"], ops=ops, quick=True, workers=WorkerOptions(workers=2))
    assert len(serial.cells) > 20
    assert _cells(parallel) == _cells(serial)
    assert parallel.cases == serial.cases and parallel.exit_code == serial.exit_code == 0


def test_a_fast_tier_column_runs_on_workers_as_it_does_serially():
    """Workers rebuild a column named "onnx@fast" (conformance/tiers.py), not only registered names."""
    from parity.backends.registry import get_backend
    from parity.conformance.tiers import at_precision
    from parity.ir.precision import Precision

    columns = at_precision([get_backend("onnx")], Precision.FAST)
    serial = runner.run(columns, ops="^logistic$", dtypes=F32, quick=True)
    parallel = runner.run(columns, ops="^logistic$", dtypes=F32, quick=True, workers=WorkerOptions(workers=1))
    assert [c.backend for c in parallel.cells] == ["onnx@fast"] * len(serial.cells)
    assert _cells(parallel) == _cells(serial) and serial.exit_code == 0


FAULTS = {  # backend name → (plugin, status of its neg cell, words the cell must say)
    "segfaults": ("faulty_backend:segfault", CRASHED, ["signal 11 (SIGSEGV)", "reproducible"]),
    "aborts": ("faulty_backend:aborts", CRASHED, ["signal 6 (SIGABRT)", "reproducible"]),
    "exits": ("faulty_backend:exits", CRASHED, ["exited with status 7", "reproducible"]),
    "allocates": ("faulty_backend:allocates", CRASHED, ["ran out of memory", "--worker-memory 1024 MiB",
                                                        "MemoryError", "reproducible"]),
    "hangs": ("faulty_backend:hangs", TIMED_OUT, ["ran past --case-timeout 3 s", "reproducible"]),
    "flaky": ("faulty_backend:flaky", CRASHED, ["signal 11 (SIGSEGV)", "flaky", "without crashing"]),
}


def test_every_planted_fault_becomes_a_cell_and_every_other_cell_arrives(plugins_importable, tmp_path, monkeypatch):
    monkeypatch.setenv("PARITY_TEST_FLAKY_MARKER", str(tmp_path / "flaky-marker"))
    options = WorkerOptions(workers=2, case_timeout=3, memory_mb=1024, plugins=tuple(p for p, _, _ in FAULTS.values()))
    result = runner.run(["reference", *FAULTS], ops="^(neg|abs)$", dtypes=F32, quick=True, workers=options)
    by = {(c.op, c.backend): c for c in result.cells}
    assert len(by) == 2 * (1 + len(FAULTS))
    for name, (_, status, words) in FAULTS.items():
        cell = by[("neg", name)]
        assert cell.status == status, (name, cell.message)
        assert cell.worst_case.startswith("neg[f32]:")
        for w in words:
            assert w in cell.message, (name, w, cell.message)
        assert by[("abs", name)].status == PASS, name  # the same backend's other op still runs
    for name in ("segfaults", "aborts"):  # the worker's last stderr lines: the fatal signal and where it hit
        assert "Last stderr lines:\nFatal Python error" in by[("neg", name)].message
        assert "faulty_backend.py" in by[("neg", name)].message
    assert by[("neg", "reference")].status == by[("abs", "reference")].status == PASS
    assert len(result.crashed) == len(FAULTS)
    assert result.exit_code == 1  # a crash is never a pass


def test_a_crash_is_not_excused_by_a_recorded_deviation(plugins_importable):
    from faulty_backend import segfault

    backend = segfault()
    from parity.backends.base import Deviation

    type(backend).deviations = (Deviation("neg", "excuses anything up to", "1e30 ulp"),)
    try:
        result = runner.run(["segfaults"], ops="^neg$", dtypes=F32, quick=True,
                            workers=WorkerOptions(workers=1, plugins=("faulty_backend:segfault",)))
    finally:
        type(backend).deviations = ()
    cell = next(c for c in result.cells if c.op == "neg")
    assert cell.status == CRASHED and result.exit_code == 1


def test_fuzz_on_workers_counts_as_the_serial_fuzzer_and_keeps_a_crash_as_a_crash(plugins_importable):
    from parity.conformance import fuzz
    from parity.conformance.controller import fuzz_results

    serial = fuzz.run(24, seed=3, backends=["reference"], save=False, do_shrink=False)
    options = WorkerOptions(workers=2, plugins=("faulty_backend:segfault",))
    load_plugins(options.plugins)  # the controller's copy (parity fuzz --plugin does this)
    parallel = fuzz.run(24, seed=3, backends=["reference", "segfaults"], save=False, do_shrink=False,
                        results_for=fuzz_results(options))
    assert parallel.backends["reference"] == serial.backends["reference"]
    with_neg = [i for i in range(24) if "neg" in fuzz.generate(3, i).graph.op_counts()]
    assert with_neg, "the stream must hold a graph with neg for this test to mean anything"
    crashed = sorted(int(c["case"].rpartition("-")[2]) for c in parallel.crashes)
    assert crashed == with_neg and all(c["backend"] == "segfaults" for c in parallel.crashes)
    assert parallel.backends["segfaults"]["pass"] == 24 - len(with_neg)
    assert "SIGSEGV" in parallel.crashes[0]["message"]


def test_the_monarch_engine_gives_the_serial_cells_and_contains_a_segfault(plugins_importable):
    pytest.importorskip("monarch.actor", reason="torchmonarch is not installed (pip install 'parity[distributed]')")
    serial = runner.run(["reference"], ops="^(neg|abs)$", dtypes=F32, quick=True)
    options = WorkerOptions(workers=2, engine="monarch", plugins=("faulty_backend:segfault",))
    result = runner.run(["reference", "segfaults"], ops="^(neg|abs)$", dtypes=F32, quick=True, workers=options)
    assert _cells(result)[:len(serial.cells)] == _cells(serial)  # the reference cells, field for field
    by = {(c.op, c.backend): c for c in result.cells}
    assert by[("abs", "segfaults")].status == PASS
    crashed = by[("neg", "segfaults")]
    assert crashed.status == CRASHED and "reproducible" in crashed.message and "neg[f32]" in crashed.message
    # Monarch reports the dead process one of two ways: its supervision event (Killed(sig=11)),
    # or, on a loaded machine, a timeout of its proc-mesh agent that says the process crashed
    # (seen in one full run out of four here). Both are a crash; neither may read as a pass.
    signalled = "signal 11 (SIGSEGV)" in crashed.message and "Killed(sig=11)" in crashed.message
    assert signalled or "The process likely crashed" in crashed.message, crashed.message
    assert result.exit_code == 1


def test_simulated_hosts_each_run_only_the_backends_they_offer(plugins_importable):
    ops = "^(neg|abs|exp)$"
    serial = runner.run(["reference", "numpy"], ops=ops, dtypes=F32, quick=True)
    hosts = (("host-a", ("reference",)), ("host-b", ("numpy", "segfaults")))
    options = WorkerOptions(workers=1, plugins=("faulty_backend:segfault",), hosts=hosts)
    result = runner.run(["reference", "numpy", "segfaults"], ops=ops, dtypes=F32, quick=True, workers=options)
    # A worker refuses a backend its host does not offer, so a misrouted case would read 'crashed'.
    assert _cells(result)[:len(serial.cells)] == _cells(serial)
    assert [(c.op, c.status) for c in result.cells if c.backend == "segfaults"] == [
        ("neg", CRASHED), ("abs", PASS), ("exp", PASS)]
    with pytest.raises(ValueError, match="no host offers backend 'numpy'"):
        runner.run(["numpy"], ops=ops, dtypes=F32, quick=True,
                   workers=WorkerOptions(hosts=(("host-a", ("reference",)),)))


def test_cli_two_workers_one_planted_segfault(plugins_importable, tmp_path, capsys):
    from parity.cli import main

    report = tmp_path / "report.json"
    code = main(["conform", "--workers", "2", "--plugin", "faulty_backend:segfault", "--backend", "reference",
                 "--backend", "segfaults", "--ops", "^(neg|abs)$", "--dtype", "f32", "--quick", "--summary-only",
                 "--json", str(report)])
    assert code == 1
    doc = json.loads(report.read_text())
    statuses = {(c["op"], c["backend"]): c["status"] for c in doc["cells"]}
    assert statuses == {("neg", "reference"): "pass", ("abs", "reference"): "pass", ("neg", "segfaults"): "crashed",
                        ("abs", "segfaults"): "pass"}
    assert doc["summary"]["segfaults/cpu"]["crashed"] == 1
    assert "crashed neg[f32] on segfaults/cpu" in capsys.readouterr().out


def test_under_the_monarch_engine_a_hang_times_out_and_a_late_reported_segfault_is_a_crash(plugins_importable):
    """Monarch reports a dead process about 10 s late, after a 3 s case timeout has stopped the
    worker: the cell must still say crashed (the signal), not timed out."""
    pytest.importorskip("monarch.actor", reason="torchmonarch is not installed (pip install 'parity[distributed]')")
    options = WorkerOptions(workers=1, engine="monarch", case_timeout=3,
                            plugins=("faulty_backend:hangs", "faulty_backend:segfault"))
    result = runner.run(["hangs", "segfaults"], ops="^(neg|abs)$", dtypes=F32, quick=True, workers=options)
    by = {(c.op, c.backend): c for c in result.cells}
    hang = by[("neg", "hangs")]
    assert hang.status == TIMED_OUT, hang.message
    assert "ran past --case-timeout 3 s" in hang.message and "reproducible" in hang.message
    crash = by[("neg", "segfaults")]
    assert crash.status == CRASHED, crash.message
    assert "signal 11 (SIGSEGV)" in crash.message and "reproducible" in crash.message
    assert by[("abs", "hangs")].status == by[("abs", "segfaults")].status == PASS and result.exit_code == 1


def test_monarch_hosts_are_the_host_meshes_of_a_monarch_job(plugins_importable, tmp_path):
    pytest.importorskip("monarch.actor", reason="torchmonarch is not installed (pip install 'parity[distributed]')")
    from monarch.job import LocalJob

    from parity.conformance import monarch_engine

    hosts = (("host-a", ("reference",)), ("host-b", ("numpy", "segfaults")))
    job = tmp_path / "job.pkl"
    LocalJob(hosts=("host-a", "host-b")).dump(str(job))  # as a scheduler's job (SlurmJob, ...) is written
    engine = monarch_engine.MonarchEngine(("host-a", "host-b"), str(job))
    assert sorted(engine.host_meshes) == ["host-a", "host-b"]
    assert all(type(m).__name__ == "HostMesh" for m in engine.host_meshes.values())
    ops = "^(neg|abs)$"
    serial = runner.run(["reference", "numpy"], ops=ops, dtypes=F32, quick=True)
    options = WorkerOptions(workers=1, engine="monarch", plugins=("faulty_backend:segfault",), hosts=hosts,
                            monarch_job=str(job))
    result = runner.run(["reference", "numpy", "segfaults"], ops=ops, dtypes=F32, quick=True, workers=options)
    assert _cells(result)[:len(serial.cells)] == _cells(serial)  # a misrouted case would read 'crashed'
    assert [(c.op, c.status) for c in result.cells if c.backend == "segfaults"] == [("neg", CRASHED), ("abs", PASS)]
    with pytest.raises(ValueError, match="has no host mesh of that name"):
        monarch_engine.MonarchEngine(("gpu-box",), str(job))
