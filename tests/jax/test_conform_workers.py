"""The JAX frontend's rows on conformance workers (``parity conform --workers N``): run there as
op rows are, journaled as they arrive, and resumed from the journal."""

from __future__ import annotations

import dataclasses
import json

import pytest

from parity.conformance import runner
from parity.conformance.controller import WorkerOptions
from parity.conformance.declared import Declared
from parity.conformance.jax_frontend.check import run_cases
from parity.conformance.jax_frontend.deviations import jax_column
from parity.conformance.jax_frontend.registry import find
from parity.conformance.jax_frontend.rows import planned_groups
from parity.conformance.worker import Session, Task, WorkerSpec
from parity.ir.dtypes import DType

OPS = "^(neg|jax:neg|jax:while)$"


def _cells(run):
    return [dataclasses.asdict(c) for c in run.cells]


def _journaled(path) -> list[dict]:
    return [json.loads(line)["result"] for line in path.read_text().splitlines()[1:]]


def test_a_worker_runs_one_primitives_frontend_cases_as_the_serial_run_does():
    """CI's proof (in this process, no worker started); the test below runs real workers."""
    groups = planned_groups(ops="^jax:(neg|while)$", dtypes=[DType.float32])
    assert [{i.partition("[")[0] for i in ids} for ids in groups] == [{"jax:neg"}, {"jax:while"}]
    loaded = []
    for ids in groups:
        (got,) = Session(WorkerSpec()).run(Task(0, ids, (("jax", "cpu"),), "jax"), loaded.append)
        want = run_cases([find(i) for i in ids], Declared.of(jax_column(), "cpu"))
        assert [dataclasses.asdict(r) for r in got] == [dataclasses.asdict(r) for r in want]
        assert [r.case for r in got] == list(ids) and {r.status for r in got} == {"pass"}
    assert len(groups[0]) > 1  # every case of the primitive in one task
    assert loaded == [0, 0]  # the controller starts each target's time limit after its load


@pytest.mark.matrix
def test_workers_journal_the_frontend_rows_and_a_resumed_run_takes_them_from_it(tmp_path):
    serial = runner.run(["reference"], ops=OPS, quick=True, frontend=True)
    journal = tmp_path / "run.jsonl"
    on_workers = runner.run(["reference"], ops=OPS, quick=True, frontend=True,
                            workers=WorkerOptions(workers=1, journal=str(journal)))
    assert _cells(on_workers) == _cells(serial) and on_workers.exit_code == serial.exit_code == 0
    rows = _journaled(journal)
    frontend = {(r["case"], r["status"]) for r in rows if r["backend"] == "jax"}
    assert {case.partition("[")[0] for case, _ in frontend} == {"jax:neg", "jax:while"}  # while: its refusal case
    assert {status for _, status in frontend} == {"pass"}
    resumed = runner.run(["reference"], ops=OPS, quick=True, frontend=True,
                         workers=WorkerOptions(workers=1, journal=str(journal), resume=True))
    assert _cells(resumed) == _cells(serial)
    assert len(_journaled(journal)) == len(rows)  # nothing ran again: every row came from the journal
