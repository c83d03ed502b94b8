"""A serial conformance run sends plugins registered by entry point to a worker process
(conformance/isolation.py): a segfault, a hang and an allocation past the memory cap each
become their cell, with no worker option given, while built-in backends run in-process."""

import pathlib
from collections import Counter

import pytest

from parity.backends.registry import register_backend, unregister_backend
from parity.conformance import runner
from parity.conformance.isolation import FIRST_TASK_SECONDS, bundle_seconds, case_seconds, isolated
from parity.conformance.results import CRASHED, PASS, TIMED_OUT
from parity.conformance.selection import resolve_targets, select_cases
from parity.ir.dtypes import DType

HERE = pathlib.Path(__file__).parent
F32 = [DType.float32]
SCALE = 0.05  # the default limits, shortened: a hang costs seconds, not minutes


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
    result = runner.run(["reference", *entry_point_plugins], ops="^(neg|abs)$", dtypes=F32, quick=True,
                        limit_scale=SCALE)
    by = {(c.op, c.backend): c for c in result.cells}
    assert len(by) == 2 * 4
    assert all(by[("abs", name)].status == PASS for name in ["reference", *entry_point_plugins])
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
    alone = SCALE * (bundle_seconds([case_seconds(cases["neg[f32]:full_range"])]) + FIRST_TASK_SECONDS)
    assert f"ran past its time limit of {alone:.0f} s" in hang.message and "reproducible" in hang.message
    runs = Counter(int(line.split()[1]) for line in log.read_text().splitlines() if line.startswith("ep_hangs"))
    assert runs == {4: 1, 2: 2, 1: 2}  # one bundle, two halves, two quarters: not each case alone
    assert result.exit_code == 1
