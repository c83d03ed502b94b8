"""Run the op database on backends and devices; build the conformance matrix.

For every case the oracle runs once (``evaluate(graph, inputs, oracle=True)``); then
each (backend, device) target gets the graph with every composite it does not claim
(in that dtype) expanded by the decompose pass (:mod:`.execute`). A graph that still
holds a node the backend does not claim in its dtype is *unsupported*; a device the
backend lists but that is absent here is *not run* (never a pass); compile errors and
exceptions are failures whose message is kept.

Cells (op × dtype × backend × device, :mod:`.results`) then meet the backend's declared
deviations (:mod:`.verdicts`): a failing cell that its deviations explain is a *recorded
deviation*, any other failing cell an *unexpected failure*, and a deviation that explains
nothing it covers is *stale* (or *invalid* when it records no number in ULPs). Any of
these unexpected outcomes makes :attr:`ConformanceRun.exit_code` 1.

A serial run still sends a plugin's cases (a backend that is not built in, found by entry
point or ``plugins``) to a worker process (:mod:`.isolation`): its crash or hang is a cell.

Example::

    >>> from parity.conformance.runner import run
    >>> result = run(["reference"], ops="^neg$")
    >>> result.exit_code, {c.status for c in result.cells}
    (0, {'pass'})
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import replace

from ..backends.base import Backend
from ..ir.dtypes import DType
from . import opdb
from .arguments import check_run_arguments
from .case import Case
from .controller import Group, WorkerOptions, run_groups, worker_spec
from .execute import Prepared, run_bundles
from .isolation import COMPILE_SECONDS, case_seconds, default_memory_mb, isolated
from .jax_frontend.check import COLUMN as FRONTEND_COLUMN
from .jax_frontend.check import DEVICE as FRONTEND_DEVICE
from .jax_frontend.rows import planned_groups
from .plugins import load_plugins
from .results import CaseResult, ConformanceRun, ProgressFn, Target
from .scheduling import batch_nodes
from .selection import resolve_targets, select_cases
from .verdicts import cells_for, cells_of_cases, check_deviations

__all__ = ["run"]


def run(backends: Sequence[str | Backend] | None = None, *, devices: Sequence[str] | None = None,
        dtypes: Iterable[DType] | None = None, ops: str | None = None, quick: bool = False,
        cases: Sequence[Case] | None = None, progress: ProgressFn | None = None, models: bool | str = False,
        architectures: Sequence[str] | None = None, anchors: bool = True,
        workers: WorkerOptions | None = None, plugins: Sequence[str] = (),
        isolate: bool | WorkerOptions = True, frontend: bool = False) -> ConformanceRun:
    """Run the selected cases on every target and build the matrix (see the module docstring).

    ``models`` adds the rows of :mod:`.zoo`: the model zoo (forward and training step
    through ``parity.compile``) and the random draws that must be bit-identical (True or
    ``"zoo"``), the Hugging Face zoo (``"hf"``, only ``architectures`` if given, with the
    torch.compile ``anchors``), or both (``"all"``).

    ``workers`` runs the cases on worker processes (:mod:`.controller`): the same results,
    with crashes and hangs contained as *crashed* / *timed out* cells, and a journal to
    resume from. The cases are then named by id, so ``cases`` must be None.

    Without ``workers``, ``isolate`` runs the op database's cases of every plugin target
    (:func:`.isolation.isolated`; ``plugins``: ``module:attr`` specs to load, as
    ``--plugin``) on one worker under the default limits (:mod:`.isolation`), or those of
    the ``WorkerOptions`` ``isolate`` is (its ``memory_mb`` None: the default cap); the
    built-in backends run here."""
    start = time.perf_counter()
    dtypes = list(dtypes or ())
    loaded = load_plugins(workers.plugins if workers is not None else plugins)  # in the controller, as in workers
    check_run_arguments(backends, devices, dtypes, ops, models)
    targets = resolve_targets(backends, devices)
    chosen = select_cases(ops=ops, dtypes=dtypes, quick=quick, cases=cases)
    live = [t for t in targets if t.available]
    groups: dict[tuple, list[Case]] = defaultdict(list)
    for case in chosen:  # one compilation per (op, dtype), or per batch of them (batches): compiling dominates
        groups[(case.op, case.dtype)].append(case)
    which = "zoo" if models is True else models or None
    if which == "zoo" and architectures:
        from .zoo import model_ops

        model_ops(architectures)  # an unknown zoo model is refused before anything runs
    if workers is not None and cases is not None:
        raise ValueError("a run on workers names its cases by id: select them with ops/dtypes/quick, not cases=")
    apart = isolated(live, loaded) if workers is None and isolate is not False and cases is None else []
    zoo_apart = which == "zoo" and bool(apart)  # the zoo's rows of isolated plugins run on their worker too
    jax_ran = None  # the JAX frontend's results, when workers ran them (else they run below, here)
    if workers is None:
        results = _run_serial(list(groups.values()), [t for t in live if t not in apart], progress)
        zoo_results: list[CaseResult] = []
        if apart:
            more, zoo_results, _, _ = _run_on_workers(list(groups.values()), apart, _isolation(isolate, plugins), ops,
                                                   dtypes, quick,
                                                   len(chosen), "zoo" if zoo_apart else None, architectures, anchors,
                                                   progress)
            results += more
    else:
        jax_groups = planned_groups(ops=ops, dtypes=dtypes, quick=quick) if frontend and cases is None else []
        results, zoo_results, hf, jax_ran = _run_on_workers(list(groups.values()), live, workers, ops, dtypes, quick,
                                                            len(chosen), which, architectures, anchors, progress,
                                                            jax_groups)
    cells = cells_of_cases(chosen, targets, results)
    section: dict = {}
    chosen_count = len(chosen)
    if which:
        from . import zoo

        done = len(chosen)
        zoo_progress = (lambda text: progress(done, done, text)) if progress else None
        if workers is None:
            here = [t for t in targets if t not in apart] if zoo_apart else targets
            extra, section = zoo.rows(here, progress=zoo_progress, which=which, architectures=architectures,
                                      anchors=anchors)
            if zoo_apart:  # the isolated plugins' rows join the agreement and the random records
                extra += zoo_results
                section = zoo.section_of(extra)
        else:  # every row came from the workers
            extra = zoo_results
            section = zoo.section_of([r for r in extra if not zoo.is_hf_row(r.op)])
            if hf is not None:
                section["hf"] = hf
        keys = list(dict.fromkeys((r.op, r.dtype) for r in extra))
        cells += cells_for(keys, targets, extra, cpu_only=zoo.is_whole_model_row)
        chosen_count = len(chosen) + len({r.case for r in extra})  # model and random-draw cases too
    judged = targets
    if frontend and cases is None:
        from .jax_frontend.rows import frontend_rows

        more, keys, column = frontend_rows(ops=ops, dtypes=dtypes, quick=quick, ran=jax_ran,
                                           progress=(lambda text: progress(1, 1, text)) if progress else None)
        if keys:
            targets = [*targets, column]
            cells += cells_for(keys, [column], more)
            chosen_count += len(more)
            # --quick runs one case per primitive: a deviation measured on another case is not judged
            judged = targets if not quick else judged
    deviations = check_deviations(judged, cells, whole=cases is None and not (ops or dtypes),
                                  applies=_deviation_applies(which))
    type_rules = _type_rules(ops)
    options = {"backends": [t.backend for t in targets], "devices": list(devices or []),
               "dtypes": [d.short for d in dtypes], "ops": ops, "quick": quick}
    options["models"] = models
    options["frontend"] = frontend
    return ConformanceRun(targets, cells, deviations, type_rules, chosen_count, time.perf_counter() - start,
                          options, section)


def _isolation(isolate: bool | WorkerOptions, plugins: Sequence[str]) -> WorkerOptions:
    """The isolated worker's options: one worker, the default limits or ``isolate``'s."""
    given = isolate if isinstance(isolate, WorkerOptions) else WorkerOptions()
    memory = default_memory_mb() if given.memory_mb is None else given.memory_mb
    return replace(given, workers=1, memory_mb=memory, plugins=tuple(plugins))


def _run_on_workers(groups: list[list[Case]], live: list[Target], workers: WorkerOptions, ops, dtypes, quick: bool,
                    count: int, which: str | None, architectures, anchors: bool, progress: ProgressFn | None,
                    jax_groups: Sequence[tuple[str, ...]] = ()):
    """(op results, zoo results, ``hf`` section or None, JAX frontend results or None) of a run on
    workers: the op database's groups, then, as ``which`` asks, the zoo's random and model rows and
    the Hugging Face zoo's architectures (each on every parity backend, then on torch.compile's
    anchors), then ``jax_groups`` (case ids of the JAX frontend's rows, one primitive each, on
    ``jax/cpu``), through one controller and one journal."""
    spec = worker_spec(workers.plugins, workers.memory_mb, ops, [d.short for d in dtypes], quick)
    header = {"ops": ops, "dtypes": sorted(d.short for d in dtypes), "quick": quick,
              "targets": [[t.backend, t.device] for t in live], "cases": count}
    sized = workers.case_timeout is None  # the default limit is sized from the cases (.isolation)
    # one task per batch of bundles; each bundle past a batch's first may take a compilation more
    plan = [Group(tuple(c.id for g in chunk for c in g), tuple((t.backend, t.device) for t in live),
                  seconds=tuple(case_seconds(c) + (COMPILE_SECONDS if k and not j else 0.0)
                                for k, g in enumerate(chunk) for j, c in enumerate(g)) if sized else (),
                  nodes=batch_nodes(chunk))
            for chunk in batches(groups, live)]
    zoo_groups, hf_groups = [], []
    if which in ("zoo", "all"):
        from . import zoo

        names = architectures if which == "zoo" else None
        zoo_groups = [Group(ids, tuple(ts), "zoo") for ids, ts in zoo.row_groups(live, names)]
        header["zoo"] = [list(g.case_ids) for g in zoo_groups]
    hf = None
    if which in ("hf", "all"):
        from .hf import matrix as hf  # the Hugging Face zoo loads only when asked for

        for name, backends in hf.row_groups(live, architectures):
            hf_groups.append(Group(hf.case_ids(name), tuple((b, "cpu") for b in backends), "hf"))
            if anchors:
                hf_groups.append(Group((hf.anchor_case_id(name),), tuple((a, "cpu") for a in hf.ANCHORS),
                                       "hf-anchor"))
        header["hf"] = [[*g.case_ids, *map(list, g.targets)] for g in hf_groups]
    frontend_plan = [Group(ids, ((FRONTEND_COLUMN, FRONTEND_DEVICE),), "jax") for ids in jax_groups]
    if frontend_plan:  # a journal of another selection of the frontend's rows is not resumed
        header["jax"] = [list(ids) for ids in jax_groups]
    results = run_groups(plan + zoo_groups + hf_groups + frontend_plan, workers, spec, header, progress)
    jax_start = len(results) - sum(len(g.case_ids) for g in frontend_plan)
    jax_ran = results[jax_start:] if frontend_plan else None
    results = results[:jax_start]
    ops_end = sum(len(g.case_ids) * len(g.targets) for g in plan)
    zoo_end = ops_end + sum(len(g.case_ids) * len(g.targets) for g in zoo_groups)
    if hf is None:
        return results[:ops_end], results[ops_end:zoo_end], None, jax_ran
    rows, anchor_results = hf.split_anchors(results[zoo_end:])
    return results[:ops_end], results[ops_end:zoo_end] + rows, hf.section_of(rows, anchor_results), jax_ran


def _run_serial(groups: list[list[Case]], live: list[Target], progress: ProgressFn | None) -> list[CaseResult]:
    if not live:
        return []
    claims = {id(t.instance): t.instance.claims() for t in live}
    results: list[CaseResult] = []
    total, done = sum(len(g) for g in groups), 0
    for chunk in batches(groups, live):
        if progress:
            progress(done, total, f"{chunk[0][0].op}[{chunk[0][0].dtype.short}]")
        bundles = [[Prepared(c) for c in group] for group in chunk]
        for t in live:
            results += run_bundles(t.instance, t.device, bundles, claims[id(t.instance)])
        done += sum(len(group) for group in chunk)
    if progress:
        progress(total, total, "")
    return results


def batches(groups: list[list[Case]], live: Sequence[Target]) -> list[list[list[Case]]]:
    """``groups`` (one op × dtype's cases each) in runs of as many as the targets batch into one
    compilation (the largest ``compile_batch`` among them, :func:`.execute.run_batch`): one
    step of the serial run, one task on workers."""
    size = max([1, *(getattr(t.instance, "compile_batch", 1) for t in live if t.instance is not None)])
    return [groups[i:i + size] for i in range(0, len(groups), size)]


def _deviation_applies(which: str | None):
    """Which rows a declared deviation can explain, so can be judged stale over: the op
    database's and the random draws' (measured against the oracle), never whole-model rows
    (held to the zoo's own tolerance against eager torch)."""
    if not which:
        return lambda op: True
    from .zoo import is_whole_model_row

    return lambda op: not is_whole_model_row(op)


def _type_rules(ops: str | None) -> list[dict]:
    pattern = re.compile(ops) if ops else None
    out = []
    for e in opdb.error_cases():
        if pattern is not None and not pattern.search(e.op):
            continue
        problem = e.check()
        out.append({"case": e.id, "op": e.op, "expected": e.message, "ok": problem is None, "problem": problem or ""})
    return out
