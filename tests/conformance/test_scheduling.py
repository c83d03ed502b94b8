"""Workers take a run's groups largest first (conformance/scheduling.py), so the run does not end
on one long group while the other workers idle; the cells stay the serial run's, cell for cell."""

from __future__ import annotations

import dataclasses
import json

from parity.conformance import runner
from parity.conformance.controller import Group, WorkerOptions
from parity.conformance.journal import read_journal
from parity.conformance.opdb import all_cases
from parity.conformance.scheduling import MODEL_NODES, batch_nodes, case_nodes

CASES = {c.id: c for c in all_cases()}


def test_the_estimate_counts_expanded_nodes_and_a_model_outweighs_any_op_group():
    assert case_nodes(CASES["neg[f32]:random"]) == 1
    assert case_nodes(CASES["uniform[u32]:f32_unit"]) > 100  # Threefry's twenty rounds
    assert batch_nodes([[CASES["neg[f32]:random"]], [CASES["uniform[u32]:f32_unit"]]]) == 1 + 3 + case_nodes(
        CASES["uniform[u32]:f32_unit"]) + 3
    assert Group(("m",), (("onnx", "cpu"),), "hf").work() == MODEL_NODES
    assert Group(("a", "b"), (("onnx", "cpu"),), "cases", nodes=40).work() == 40


def test_one_worker_takes_the_random_draws_before_the_ops_listed_ahead_of_them(tmp_path):
    ops = "^(neg|abs|exp|uniform)$"
    journal = tmp_path / "run.journal"
    serial = runner.run(["reference"], ops=ops, quick=True)
    parallel = runner.run(["reference"], ops=ops, quick=True,
                          workers=WorkerOptions(workers=1, journal=str(journal)))
    assert [dataclasses.asdict(c) for c in parallel.cells] == [dataclasses.asdict(c) for c in serial.cells]
    header = json.loads(journal.read_text().split("\n")[0])["run"]
    arrived = [r.op for r in read_journal(str(journal), header)]
    listed = [c.op for c in serial.cells]
    assert listed.index("uniform") > listed.index("neg")  # the op database lists it last ...
    assert arrived[0] == "uniform"  # ... and it ran first
