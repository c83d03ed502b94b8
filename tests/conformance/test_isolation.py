"""A serial conformance run sends plugins registered by entry point to a worker process
(conformance/isolation.py): a segfault, a hang and an allocation past the memory cap each
become their cell, with no worker option given, while built-in backends run in-process."""

import pathlib
from collections import Counter

import pytest

from parity.backends.registry import register_backend, unregister_backend
from parity.conformance import runner
from parity.conformance.controller import WorkerOptions
from parity.conformance.isolation import (
    CASE_SECONDS,
    COMPILE_SECONDS,
    bundle_seconds,
    case_seconds,
    isolated,
    time_limit,
)
from parity.conformance.results import CRASHED, PASS, TIMED_OUT
from parity.conformance.selection import resolve_targets, select_cases
from parity.ir.dtypes import DType

HERE = pathlib.Path(__file__).parent
F32 = [DType.float32]
SCALE = 0.03  # the default limits, shortened: a hang costs 1.0-1.1 s, not minutes (a quick neg case runs in ms)
SHORT = WorkerOptions(timeout_scale=SCALE)  # and the default memory cap (memory_mb None)


@pytest.fixture
def entry_point_plugins(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(HERE))  # workers get the controller's sys.path
    from entry_point_faults import ENTRY_POINTS, write_dist_info

    write_dist_info(tmp_path / "site")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    yield list(ENTRY_POINTS)
    for name in ENTRY_POINTS:
        unregister_backend(name)


def test_only_plugins_a_worker_can_find_are_isolated(entry_point_plugins):
    from faulty_backend import segfault

    register_backend(segfault())  # registered in this process only: a worker could not rebuild it
    try:
        targets = resolve_targets(["reference", "inductor", "segfaults", *entry_point_plugins], ["cpu"])
        assert [t.backend for t in isolated(targets)] == entry_point_plugins
        assert [t.backend for t in isolated(targets, ["segfaults"])] == ["segfaults", *entry_point_plugins]
    finally:
        unregister_backend("segfaults")


def test_a_serial_run_turns_each_native_failure_of_a_plugin_into_its_cell(entry_point_plugins, tmp_path,
                                                                          monkeypatch):
    log = tmp_path / "bundles.log"
    monkeypatch.setenv("PARITY_TEST_BUNDLE_LOG", str(log))
    plugins = ["ep_segfaults", "ep_hangs", "ep_allocates"]
    result = runner.run(["reference", *plugins], ops="^(neg|abs)$", dtypes=F32, quick=True, isolate=SHORT)
    by = {(c.op, c.backend): c for c in result.cells}
    assert len(by) == 2 * 4
    assert all(by[("abs", name)].status == PASS for name in ["reference", *plugins])
    assert by[("neg", "reference")].status == PASS

    segfault = by[("neg", "ep_segfaults")]
    assert segfault.status == CRASHED, segfault.message
    assert segfault.worst_case.startswith("neg[f32]:") and "signal 11 (SIGSEGV)" in segfault.message
    assert "reproducible" in segfault.message and "entry_point_faults.py" in segfault.message

    allocation = by[("neg", "ep_allocates")]
    assert allocation.status == CRASHED, allocation.message
    assert "ran out of memory: MemoryError" in allocation.message and "reproducible" in allocation.message

    # The hang: one case of four. Bisection runs the bundle, its halves, then the hanging half's
    # halves; the case alone runs on a fresh worker under its own sized limit.
    hang = by[("neg", "ep_hangs")]
    assert hang.status == TIMED_OUT and hang.worst_case == "neg[f32]:full_range", hang.message
    cases = {c.id: c for c in select_cases(ops="^neg$", dtypes=F32, quick=True)}
    alone = SCALE * bundle_seconds([case_seconds(cases["neg[f32]:full_range"])])
    assert f"ran past its time limit of {alone:.0f} s" in hang.message and "reproducible" in hang.message
    runs = Counter(int(line.split()[1]) for line in log.read_text().splitlines() if line.startswith("ep_hangs"))
    assert runs == {4: 1, 2: 2, 1: 2}  # one bundle, two halves, two quarters: not each case alone
    assert result.exit_code == 1


def test_a_plugin_s_zoo_rows_run_on_its_worker_too(entry_point_plugins):
    """A plugin that segfaults in a model's linear layer: its model cells are crashed, its random
    draws pass, the reference's model runs in this process, and agreement is computed as before."""
    result = runner.run(["reference", "ep_segfaults_on_matmul"], ops="^neg$", dtypes=F32, quick=True, models=True,
                        architectures=["mlp"], isolate=WorkerOptions())  # no hang here: the default limits
    by = {(c.op, c.backend): c for c in result.cells}
    models = [op for op, backend in by if op.startswith("model:mlp") and backend == "reference"]
    assert models and all(by[(op, "reference")].status == PASS for op in models)
    for op in models:
        cell = by[(op, "ep_segfaults_on_matmul")]
        assert cell.status == CRASHED and "signal 11 (SIGSEGV)" in cell.message, cell.message
    randoms = [op for op, backend in by if op.startswith("random:") and backend == "ep_segfaults_on_matmul"]
    assert randoms and all(by[(op, "ep_segfaults_on_matmul")].status == PASS for op in randoms)
    assert by[("neg", "ep_segfaults_on_matmul")].status == PASS and result.models["random"]


def test_the_command_line_isolates_a_plugin_loaded_by_module_without_worker_flags(monkeypatch, capsys):
    from parity.cli import main

    monkeypatch.syspath_prepend(str(HERE))
    try:
        code = main(["conform", "--plugin", "faulty_backend:segfault", "--backend", "segfaults", "--ops", "^neg$",
                     "--dtype", "f32", "--quick", "--summary-only"])
    finally:
        unregister_backend("segfaults")
    out = capsys.readouterr().out
    assert code == 1  # the run completed: a crashed cell, and its report
    assert "crashed neg[f32] on segfaults/cpu" in out and "signal 11 (SIGSEGV)" in out


def test_a_backend_that_never_loads_times_out_its_cells_without_bisecting(entry_point_plugins, tmp_path,
                                                                          monkeypatch):
    log = tmp_path / "loads.log"
    monkeypatch.setenv("PARITY_TEST_BUNDLE_LOG", str(log))
    result = runner.run(["ep_hangs_loading"], ops="^neg$", dtypes=F32, quick=True,
                        isolate=WorkerOptions(timeout_scale=0.01))
    (cell,) = result.cells
    assert cell.status == TIMED_OUT and cell.cases == 4
    assert "did not finish loading the backend within 3 s (importing its runtime)" in cell.message, cell.message
    assert log.read_text().splitlines() == ["ep_hangs_loading claims"]  # loaded once: no case is to blame



def test_the_default_time_limit_is_a_plugin_s_and_sized_from_its_cases():
    cases = select_cases(ops="^reduce_sum$", dtypes=F32)
    per_case = [case_seconds(c) for c in cases]
    assert any(s > CASE_SECONDS + 1 for s in per_case)  # the 10**6-term sums get their seconds
    assert time_limit("vendor", per_case) == COMPILE_SECONDS + sum(per_case)
    assert time_limit("vendor", per_case, scale=0.5) == (COMPILE_SECONDS + sum(per_case)) / 2
    # built-ins: none (Triton's CPU interpreter ran dot_general's ten f32 cases in 135 s against 54 s)
    assert time_limit("triton", per_case) is None and time_limit("xla@fast", per_case) is None
    assert time_limit("triton", per_case, case_timeout=7.0) == 7.0 and time_limit("vendor", per_case, 0) is None
