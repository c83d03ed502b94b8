"""The model zoo on workers (``parity conform --models --workers N``): the zoo's rows go
through the controller as the op database's cases do, with the same cells, the same
``models`` section (pairwise agreement, random-draw records), a journal to resume from,
and a planted crash contained as a cell. Only the smallest zoo model, mlp, runs."""

import dataclasses

import pytest

from parity.conformance import runner
from parity.conformance.controller import WorkerOptions
from parity.conformance.results import CRASHED, PASS
from parity.ir.dtypes import DType

from .test_workers import plugins_importable  # noqa: F401 - the fixture

F32 = [DType.float32]
SMALL = dict(ops="^neg$", dtypes=F32, quick=True, models=True, architectures=["mlp"])


def _cells(run):
    return [dataclasses.asdict(c) for c in run.cells]


def test_zoo_rows_on_workers_equal_the_serial_run_and_resume_from_their_journal(tmp_path):
    serial = runner.run(["reference", "onnx"], **SMALL)
    journal = tmp_path / "zoo.jsonl"
    parallel = runner.run(["reference", "onnx"], **SMALL, workers=WorkerOptions(workers=2, journal=str(journal)))
    model_cells = [c for c in serial.cells if c.op == "model:mlp/train" and c.device == "cpu"]
    assert [(c.backend, c.status, c.cases) for c in model_cells] == [("reference", PASS, 2), ("onnx", PASS, 2)]
    assert sum(c.op.startswith("random:") and c.device == "cpu" for c in serial.cells) == 16  # 8 rows × 2 backends
    assert _cells(parallel) == _cells(serial)
    assert parallel.models == serial.models  # agreement figures and random records, value for value
    (pair,) = serial.models["agreement"]
    assert (pair["a"], pair["b"]) == ("onnx", "reference") and pair["output"] > 0.0

    # A controller killed after the model rows of one backend: keep the header and the first
    # results, as a SIGKILL leaves them; --resume runs the rest and gives the same report.
    lines = journal.read_text().splitlines()
    assert sum('"op": "model:mlp/train"' in ln for ln in lines) == 4  # forward and training on each backend
    assert sum('"op": "random:' in ln for ln in lines) == 16
    kept = [lines[0]] + [ln for ln in lines[1:] if '"backend": "reference"' in ln]
    journal.write_text("\n".join(kept) + "\n")
    resumed = runner.run(["reference", "onnx"], **SMALL,
                         workers=WorkerOptions(workers=1, journal=str(journal), resume=True))
    assert _cells(resumed) == _cells(serial)
    assert resumed.models == serial.models  # the agreement needs reference's tensors, read back from the journal


def test_a_zoo_row_that_kills_its_worker_is_a_crashed_cell_and_the_rest_arrive(plugins_importable):  # noqa: F811
    options = WorkerOptions(workers=1, plugins=("faulty_backend:segfaults_on_matmul",))
    result = runner.run(["reference", "segfaults_on_matmul"], **SMALL, workers=options)
    by = {(c.op, c.dtype, c.backend): c for c in result.cells}
    crashed = by[("model:mlp/train", "f32", "segfaults_on_matmul")]
    assert crashed.status == CRASHED and crashed.cases == 2
    assert "model:mlp/train[f32]:" in crashed.message and "signal 11 (SIGSEGV)" in crashed.message
    assert "reproducible" in crashed.message
    assert by[("model:mlp/train", "f32", "reference")].status == PASS
    random_cells = [c for (op, _, b), c in by.items() if op.startswith("random:") and b == "segfaults_on_matmul"]
    assert len(random_cells) == 8 and {c.status for c in random_cells} == {PASS}
    assert by[("neg", "f32", "segfaults_on_matmul")].status == PASS
    assert result.models["agreement"] == []  # a crashed backend gave no tensors to compare
    assert result.exit_code == 1


def test_an_unknown_zoo_model_is_refused_with_the_zoo_named():
    with pytest.raises(ValueError, match="no zoo model named 'mpl'; the zoo has mlp, cnn"):
        runner.run(["reference"], ops="^neg$", models=True, architectures=["mpl"], workers=WorkerOptions(workers=1))


HF = dict(ops="^neg$", dtypes=F32, quick=True, models="hf", architectures=["distilbert"])


def _timeless(section):
    """The ``hf`` section without its compile seconds, which are measurements of the run."""
    return {k: [{f: v for f, v in rec.items() if f != "compile_seconds"} for rec in recs] if k != "rtol" else recs
            for k, recs in section["hf"].items()}


def test_hugging_face_rows_and_anchors_on_workers_equal_the_serial_run():
    serial = runner.run(["reference"], **HF)
    parallel = runner.run(["reference"], **HF, workers=WorkerOptions(workers=2))
    hf_cells = [(c.op, c.backend, c.status, c.cases) for c in serial.cells if c.op.startswith("hf:")]
    assert hf_cells == [("hf:distilbert", "reference", PASS, 3)]
    assert _cells(parallel) == _cells(serial)
    assert [a["compiler"] for a in parallel.models["hf"]["anchors"]] == ["aot_eager", "torch-inductor"]
    assert _timeless(parallel.models) == _timeless(serial.models)
    assert all(r["compile_seconds"] > 0 for r in parallel.models["hf"]["entries"] + parallel.models["hf"]["anchors"])


def test_a_hugging_face_row_that_kills_its_worker_is_a_crashed_cell(plugins_importable):  # noqa: F811
    options = WorkerOptions(workers=1, plugins=("faulty_backend:segfaults_on_matmul",))
    result = runner.run(["reference", "segfaults_on_matmul"], **HF, anchors=False, workers=options)
    by = {(c.op, c.backend): c for c in result.cells}
    crashed = by[("hf:distilbert", "segfaults_on_matmul")]
    assert crashed.status == CRASHED and crashed.cases == 3
    assert "hf:distilbert[f32]:" in crashed.message and "signal 11 (SIGSEGV)" in crashed.message
    assert by[("hf:distilbert", "reference")].status == PASS
    assert [e["compiler"] for e in result.models["hf"]["entries"]] == ["reference"]  # the dead one gave no record
    assert result.models["hf"]["anchors"] == []
    assert result.exit_code == 1
