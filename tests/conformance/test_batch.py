"""Batches of op × dtype bundles compiled as one graph (conformance/execute.py ``run_batch``,
``runner.batches``, the controller's re-run of a crashed batch): fewer compilations, and the
verdicts of a run without batches, even where a batch answers wrongly, fails or crashes."""

import math
import pathlib
from collections import defaultdict

import pytest

from parity.backends.reference import ReferenceBackend
from parity.backends.registry import unregister_backend
from parity.conformance import runner
from parity.conformance.controller import WorkerOptions, _bundles
from parity.conformance.execute import Prepared, run_bundle, run_bundles, split_bundles
from parity.conformance.results import PASS
from parity.conformance.selection import select_cases
from parity.ir.dtypes import DType

HERE = pathlib.Path(__file__).parent
OPS = "^(neg|abs|exp|floor)$"  # four bundles in f32: a batch of three and one of one
F32 = [DType.float32]


@pytest.fixture
def plugins(monkeypatch):
    """The test plugins (batching_backend.py); this folder goes on workers' import path too."""
    monkeypatch.syspath_prepend(str(HERE))
    import batching_backend

    batching_backend.COMPILED.clear()
    yield batching_backend
    unregister_backend("batch_segfaults")


def _bundles_of(ops=OPS):
    groups = defaultdict(list)
    for c in select_cases(ops=ops, dtypes=F32, quick=True):
        groups[(c.op, c.dtype)].append(Prepared(c))
    return list(groups.values())


def _verdicts(results):
    return [(r.case, r.status, r.output_hash, r.max_ulp) for r in results]


def _unbatched(bundles):
    return _verdicts([r for b in bundles for r in run_bundle(ReferenceBackend(), "cpu", b)])


def test_a_batch_compiles_once_and_gives_each_bundles_results(plugins):
    bundles = _bundles_of()
    results = run_bundles(plugins.batching(), "cpu", bundles)
    assert len(bundles) == 4 and len(plugins.COMPILED) == 2  # three bundles as one graph, then the fourth
    assert _verdicts(results) == _unbatched(bundles)
    assert {r.status for r in results} == {PASS}


def test_a_wrong_answer_in_a_batch_gives_way_to_the_bundles_own(plugins):
    bundles = _bundles_of()
    results = run_bundles(plugins.batch_wrong(), "cpu", bundles)
    assert _verdicts(results) == _unbatched(bundles)  # every case passes, as each bundle alone does
    assert len(plugins.COMPILED) == 3  # the batch, the bundle it got wrong again on its own, the fourth bundle


def test_a_batch_that_fails_to_compile_runs_bundle_by_bundle(plugins):
    bundles = _bundles_of()
    results = run_bundles(plugins.batch_raises(), "cpu", bundles)
    assert _verdicts(results) == _unbatched(bundles)
    assert len(plugins.COMPILED) == 1 + 3 + 1  # the failed batch, its three bundles, the fourth


def test_bundles_are_cut_by_op_and_dtype_in_order():
    cases = [p for b in _bundles_of() for p in b]
    assert [[p.case.id for p in b] for b in split_bundles(cases)] == [[p.case.id for p in b] for b in _bundles_of()]
    ids = [p.case.id for p in cases]
    assert [list(b) for b in _bundles(ids)] == [[p.case.id for p in b] for b in _bundles_of()]


def test_a_serial_run_batches_and_keeps_the_unbatched_cells(plugins):
    batched = runner.run([plugins.batching()], ops=OPS, quick=True)
    plain = runner.run(["reference"], ops=OPS, quick=True)
    groups = len({(c.op, c.dtype) for c in batched.cells})
    assert len(plugins.COMPILED) == math.ceil(groups / 3)
    keys = ("op", "dtype", "status", "cases", "passed", "failed", "max_ulp", "hashes")
    assert [[getattr(c, k) for k in keys] for c in batched.cells] == [[getattr(c, k) for k in keys] for c in plain.cells]


def test_a_batch_that_crashes_its_worker_runs_again_bundle_by_bundle(plugins):
    options = WorkerOptions(workers=1, plugins=("batching_backend:batch_segfaults",))
    result = runner.run(["batch_segfaults"], ops=OPS, dtypes=F32, quick=True, workers=options)
    assert [(c.op, c.status, c.cases) for c in result.cells] == [(c.op, PASS, c.cases) for c in result.cells]
    assert len(result.cells) == 4 and result.exit_code == 0


def test_the_last_batch_is_cut_in_two_halves_that_two_workers_share(plugins, tmp_path, monkeypatch):
    """At the very end of a run on workers, the last batch on one target is cut in two halves of its
    bundles (conformance/controller.py), so that the worker that frees up takes one."""
    log = tmp_path / "compiled.log"
    monkeypatch.setenv("BATCHING_COMPILED_LOG", str(log))
    ops = "^(neg|abs|exp|floor|ceil)$"  # five bundles in f32: batches of three and two
    options = WorkerOptions(workers=2, plugins=("batching_backend:batching",))
    result = runner.run(["batching"], ops=ops, dtypes=F32, quick=True, workers=options)
    graphs = log.read_text().split("\n")[:-1]
    assert sorted(len(g.split()) for g in graphs) == [1, 1, 3]  # the last batch, of two, ran as two halves
    plain = runner.run(["reference"], ops=ops, dtypes=F32, quick=True)
    keys = ("op", "dtype", "status", "cases", "passed", "failed", "max_ulp", "hashes")
    assert [[getattr(c, k) for k in keys] for c in result.cells] == [[getattr(c, k) for k in keys] for c in plain.cells]
