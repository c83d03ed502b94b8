"""Run the op database on backends and devices; build the conformance matrix.

For every case the oracle runs once (``evaluate(graph, inputs, oracle=True)``); then
each (backend, device) target gets the graph with every composite it does not claim
(in that dtype) expanded by the decompose pass. A graph that still holds a node the
backend does not claim in its dtype is *unsupported*; a device the backend lists but
that is absent here is *not run* (never a pass); compile errors and exceptions are
failures whose message is kept.

Cells (op × dtype × backend × device) then meet the backend's declared deviations: a
failing cell whose every failing case a deviation explains is a *recorded deviation*
(a case is explained when its error is within the ULPs the deviation records, or, for a
``flush_to_zero`` deviation of the case's dtype, when it passes with that dtype's
subnormals read as zero on both sides), any other failing cell is an *unexpected
failure*, and a deviation that explains no failure of the cells it covers is *stale*.
A case that raised or returned outputs of the wrong number, shape or dtype is never
explained, and a deviation that records no number in ULPs (or a flush-to-zero one with
no dtype) explains nothing and is *invalid*. Any of these unexpected outcomes makes
:attr:`ConformanceRun.exit_code` 1.

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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..backends.base import ANY_OP, Backend, Deviation
from ..backends.registry import BackendNotFound, backend_names, get_backend
from ..ir.dtypes import DType
from ..ir.graph import Graph
from ..ir.interpreter import evaluate
from ..ir.ops import node_dtype
from ..ir.passes import decompose
from . import opdb, regressions
from .case import Case
from .compare import measure
from .declared import Declared
from .local import flush_subnormals as flush_declared
from .opdb.common import EDGE, LONG

# Cell statuses, worst first (a row of the matrix shows its worst cell).
FAIL, DEVIATION, PASS, UNSUPPORTED, NOT_RUN = "fail", "deviation", "pass", "unsupported", "not run"
STATUS_ORDER = (FAIL, DEVIATION, PASS, UNSUPPORTED, NOT_RUN)

@dataclass
class CaseResult:
    """One case on one (backend, device)."""

    case: str
    op: str
    dtype: str
    backend: str
    device: str
    status: str  # pass | fail | error | unsupported
    path: str = ""  # native | extern | decomposed
    max_ulp: float | None = None
    max_ratio: float = 0.0
    max_rel: float | None = None
    mismatches: int = 0
    message: str = ""
    worst: dict = field(default_factory=dict)
    malformed: bool = False  # outputs of the wrong number, shape or dtype (no deviation excuses it)
    # Measured again with subnormals flushed to zero (only for a failing case of a dtype the
    # backend declares flush-to-zero in): whether it passes then, and its max ULP.
    flushed_passed: bool | None = None
    flushed_ulp: float | None = None


@dataclass
class Cell:
    """op × dtype × backend × device, aggregated over its cases."""

    op: str
    dtype: str
    backend: str
    device: str
    status: str
    cases: int = 0
    passed: int = 0
    failed: int = 0
    unsupported: int = 0
    path: str = ""
    max_ulp: float | None = None
    max_ratio: float = 0.0
    worst_case: str = ""
    worst: dict = field(default_factory=dict)
    message: str = ""
    deviation: dict | None = None  # the declared deviation covering this cell, if any
    explained_by: list[dict] = field(default_factory=list)  # the deviations that explain its failures
    # Explained by flush-to-zero: the max ULP that remains once subnormals are flushed (what
    # the matrix shows; max_ulp keeps the raw figure).
    flush_to_zero: bool = False
    flushed_ulp: float | None = None


@dataclass
class DeviationCheck:
    backend: str
    op: str
    dtype: str | None
    device: str | None
    reason: str
    max_error: str
    state: str  # recorded | stale | not checked | invalid
    cells: list[str] = field(default_factory=list)
    problem: str = ""  # why an invalid deviation explains nothing


@dataclass
class Target:
    backend: str
    device: str
    available: bool
    instance: Backend | None = None
    error: str = ""  # the backend could not be loaded


@dataclass
class ConformanceRun:
    targets: list[Target]
    cells: list[Cell]
    deviations: list[DeviationCheck]
    type_rules: list[dict]
    cases: int
    elapsed_s: float
    options: dict
    # --models: {"agreement": [...], "random": [...], "tolerance": {...}} (conformance/zoo.py)
    models: dict = field(default_factory=dict)

    @property
    def unexpected_failures(self) -> list[Cell]:
        return [c for c in self.cells if c.status == FAIL]

    @property
    def stale_deviations(self) -> list[DeviationCheck]:
        return [d for d in self.deviations if d.state == "stale"]

    @property
    def invalid_deviations(self) -> list[DeviationCheck]:
        return [d for d in self.deviations if d.state == "invalid"]

    @property
    def type_rule_failures(self) -> list[dict]:
        return [t for t in self.type_rules if not t["ok"]]

    @property
    def exit_code(self) -> int:
        bad = (self.unexpected_failures or self.stale_deviations or self.invalid_deviations
               or self.type_rule_failures)
        return 1 if bad else 0

    def summary(self) -> dict[str, dict[str, int]]:
        """Per "backend/device": number of cells in each status, and of cases."""
        out: dict[str, dict[str, int]] = {}
        for t in self.targets:
            out[f"{t.backend}/{t.device}"] = {s: 0 for s in STATUS_ORDER} | {"cases": 0, "cases_passed": 0}
        for c in self.cells:
            row = out[f"{c.backend}/{c.device}"]
            row[c.status] += 1
            row["cases"] += c.cases
            row["cases_passed"] += c.passed
        return out


class Unsupported(Exception):
    pass


def lower_for(backend: Backend, graph: Graph, claims=None) -> tuple[Graph, dict[str, str]]:
    """``graph`` as ``backend`` receives it: composites it does not claim in their dtype
    expanded. Returns (graph, {op: path}); raises :class:`Unsupported` naming the first
    node the backend does not claim in its dtype."""
    claims = backend.claims() if claims is None else claims
    present = {n.op for n in graph.nodes}
    native = {n.op for n in graph.nodes if n.op in claims and node_dtype(n) in claims[n.op].dtypes}
    # Ops of the case graph are claimed per dtype; composites met inside a decomposition by
    # name (a dtype they do not claim then shows as unsupported below).
    lowered, _ = decompose(graph, claimed=lambda op: op in native or (op not in present and op in claims))
    for n in lowered.nodes:
        claim = claims.get(n.op)
        dtype = node_dtype(n)
        if claim is None or dtype not in claim.dtypes:
            what = n.op if claim is None else f"{n.op} in {dtype.short}"
            via = "" if n.op in graph.op_counts() else " (reached through a decomposition)"
            raise Unsupported(f"{backend.name} does not claim {what}{via}")
    paths = {}
    for n in graph.nodes:
        if n.op in native:
            paths[n.op] = "extern" if claims[n.op].extern else "native"
        else:
            paths[n.op] = "decomposed"
    return lowered, paths


def run_case(backend: Backend, device: str, case: Case, *, arrays=None, graph=None, oracle=None,
             claims=None) -> CaseResult:
    """Run one case on one backend and device and measure it (never raises for backend errors)."""
    prepared = Prepared(case) if arrays is None else Prepared(case, arrays, graph, oracle)
    return run_bundle(backend, device, [prepared], claims)[0]


class Prepared:
    """A case with its inputs, graph and oracle outputs, computed once for every target."""

    def __init__(self, case: Case, arrays=None, graph=None, oracle=None):
        self.case = case
        self.arrays = case.arrays() if arrays is None else arrays
        self.graph = case.graph(self.arrays) if graph is None else graph
        self.oracle = evaluate(self.graph, self.arrays, oracle=True) if oracle is None else oracle


def run_bundle(backend: Backend, device: str, bundle: Sequence[Prepared], claims=None) -> list[CaseResult]:
    """Run several cases as one graph (one compilation), measuring each.

    The cases' graphs are placed side by side in one graph; if compiling or running it
    fails, each case is run alone so that the failure lands on the case that causes it.
    """
    claims = backend.claims() if claims is None else claims
    declared = Declared.of(backend, device)
    results: list[CaseResult | None] = [None] * len(bundle)
    runnable = []
    for i, p in enumerate(bundle):
        try:
            runnable.append((i, *lower_for(backend, p.graph, claims)))
        except Unsupported as exc:
            results[i] = CaseResult(**_ids(backend, device, p.case), status="unsupported", message=str(exc))
    if len(runnable) > 1 and all(g.sharding is None for _, g, _ in runnable):  # a mesh is per graph
        merged = Graph(f"bundle_{bundle[0].case.op}", [v for _, g, _ in runnable for v in g.inputs],
                       [n for _, g, _ in runnable for n in g.nodes], [v for _, g, _ in runnable for v in g.outputs])
        try:
            outputs = _execute(backend, device, merged, [a for i, _, _ in runnable for a in bundle[i].arrays])
        except Exception:  # noqa: BLE001 - isolate the failing case below
            outputs = None
        if outputs is not None:
            k = 0
            for i, g, paths in runnable:
                n = len(g.outputs)
                results[i] = _measured(backend, device, bundle[i], paths, outputs[k:k + n], declared)
                k += n
            return results
    for i, g, paths in runnable:
        try:
            outputs = _execute(backend, device, g, bundle[i].arrays)
        except Exception as exc:  # the backend's failure is a result, not a crash of the runner
            results[i] = CaseResult(**_ids(backend, device, bundle[i].case), status="error",
                                    path=paths.get(bundle[i].case.op, ""), max_ratio=np.inf,
                                    message=f"{type(exc).__name__}: {_short(str(exc))}")
            continue
        results[i] = _measured(backend, device, bundle[i], paths, outputs, declared)
    return results


def _ids(backend: Backend, device: str, case: Case) -> dict:
    return dict(case=case.id, op=case.op, dtype=case.dtype.short, backend=backend.name, device=device)


def _execute(backend: Backend, device: str, graph: Graph, arrays) -> list[np.ndarray]:
    executable = backend.compile(graph, device)
    return [_as_array(o) for o in executable(*arrays)]


def _as_array(output) -> np.ndarray:
    """A backend's output as a host NumPy array. torch tensors (the Triton backend returns
    them, possibly on a GPU) come to the host first; bfloat16, which NumPy's buffer protocol
    lacks, crosses as its 16-bit words."""
    if type(output).__module__.startswith("torch"):
        import torch  # only when a backend returned torch tensors

        output = output.detach().cpu().contiguous()
        if output.dtype is torch.bfloat16:
            return output.view(torch.int16).numpy().view(DType.bfloat16.numpy)
        return output.numpy()
    return np.asarray(output)


def _measured(backend, device, p: Prepared, paths, outputs, declared: Declared) -> CaseResult:
    m = measure(p.case, p.graph, p.arrays, p.oracle, outputs, declared)
    result = CaseResult(**_ids(backend, device, p.case), status="pass" if m.passed else "fail",
                        path=paths.get(p.case.op, ""), max_ulp=m.max_ulp, max_ratio=m.max_ratio, max_rel=m.max_rel,
                        mismatches=m.mismatches, message=m.message, worst=m.worst, malformed=m.malformed)
    local = p.case.bound is not None and p.case.bound.kind == "local"  # measure_local flushes per node
    if not m.passed and not m.malformed and not local and p.case.dtype in declared.flushes:
        flushed = measure_flushed(p, outputs, declared)
        result.flushed_passed, result.flushed_ulp = flushed.passed, flushed.max_ulp
    return result


def flush_subnormals(array: np.ndarray, dtype: DType | None = None) -> np.ndarray:
    """``array`` (of IR dtype ``dtype``: default, its own) with values below float32's normal
    range (float64's for f64) as signed zeros: what a runtime with FTZ/DAZ reads and makes of
    them (f16/bf16 compute in float32)."""
    a = np.asarray(array)
    dtype = dtype or (DType.from_numpy(a.dtype) if a.dtype.kind in "fV" or a.dtype == DType.bfloat16.numpy else None)
    if dtype is None or not dtype.is_float:
        return a
    tiny = np.finfo(np.float64 if dtype is DType.float64 else np.float32).tiny
    wide = a.astype(np.float64)
    return np.where(np.abs(wide) < tiny, np.copysign(0.0, wide), wide).astype(a.dtype)


def measure_flushed(p: Prepared, outputs, declared: Declared):
    """The case measured as if the subnormals of the dtypes ``declared`` flushes (below each
    one's own smallest normal; no other dtype's) were zero: each output element against the
    oracle or the oracle on flushed inputs (whichever is nearer: a runtime may flush some
    operands and not others), results flushed on both sides."""
    flushes = declared.flushes
    arrays = [flush_declared(a, t.dtype, flushes) for a, t in zip(p.arrays, p.graph.input_types)]
    flushed = evaluate(p.graph, arrays, oracle=True)
    expected, actual = [], []
    for o, f, a, t in zip(p.oracle, flushed, outputs, p.graph.output_types):
        o, f, a = (flush_declared(v, t.dtype, flushes) for v in (o, f, a))
        expected.append(np.where(_distance(f, a) <= _distance(o, a), f, o).astype(np.asarray(o).dtype))
        actual.append(a)
    return measure(p.case, p.graph, arrays, expected, actual, declared)


def _distance(expected, actual) -> np.ndarray:
    """|expected - actual| per element, 0 where both are NaN (or equal), inf where one is."""
    e, a = np.asarray(expected), np.asarray(actual)
    if e.dtype.kind not in "fV" and e.dtype != DType.bfloat16.numpy:
        return np.where(e == a, 0.0, np.inf)
    e, a = e.astype(np.float64), a.astype(np.float64)
    with np.errstate(invalid="ignore"):
        d = np.abs(e - a)
    return np.where((e == a) | (np.isnan(e) & np.isnan(a)), 0.0, np.where(np.isnan(d), np.inf, d))


def _short(text: str, limit: int = 600) -> str:
    return text if len(text) <= limit else text[:limit] + " …"


def resolve_targets(backends: Sequence[str | Backend] | None, devices: Sequence[str] | None) -> list[Target]:
    """(backend, device) pairs: every device a backend lists (filtered by ``devices``)."""
    targets = []
    for b in backends if backends else backend_names():
        if isinstance(b, Backend):
            instance, error = b, ""
        else:
            try:
                instance, error = get_backend(b), ""
            except (BackendNotFound, ImportError) as exc:
                instance, error = None, str(exc)
        if instance is None:
            targets.append(Target(str(b), "cpu", False, None, error))
            continue
        available = set(instance.available_devices())
        for device in instance.devices:
            if devices and device not in devices:
                continue
            targets.append(Target(instance.name, device, device in available, instance))
    return targets


def select_cases(*, ops: str | None = None, dtypes: Iterable[DType] | None = None, quick: bool = False,
                 cases: Sequence[Case] | None = None) -> list[Case]:
    """The cases a run covers: the op database and the fuzzer regressions (or ``cases``).
    ``quick`` keeps, per (op, dtype), the edge cases, the regressions and the first other
    case: layout variants and the 10**6-term reductions are left out."""
    everything = opdb.all_cases() + regressions.cases() if cases is None else cases
    chosen = opdb.select(everything, ops=ops, dtypes=set(dtypes or ()), tags_excluded=(LONG,) if quick else ())
    if not quick:
        return chosen
    kept, seen = [], set()
    for c in chosen:
        key = (c.op, c.dtype)
        if EDGE in c.tags or regressions.REGRESSION in c.tags or key not in seen:
            kept.append(c)
            seen.add(key)
    return kept


ProgressFn = Callable[[int, int, str], None]


def run(backends: Sequence[str | Backend] | None = None, *, devices: Sequence[str] | None = None,
        dtypes: Iterable[DType] | None = None, ops: str | None = None, quick: bool = False,
        cases: Sequence[Case] | None = None, progress: ProgressFn | None = None, models: bool | str = False,
        architectures: Sequence[str] | None = None, anchors: bool = True) -> ConformanceRun:
    """Run the selected cases on every target and build the matrix (see the module docstring).

    ``models`` adds the rows of :mod:`.zoo`: the model zoo (forward and training step
    through ``parity.compile``) and the random draws that must be bit-identical (True or
    ``"zoo"``), the Hugging Face zoo (``"hf"``, only ``architectures`` if given, with the
    torch.compile ``anchors``), or both (``"all"``)."""
    start = time.perf_counter()
    dtypes = list(dtypes or ())
    targets = resolve_targets(backends, devices)
    chosen = select_cases(ops=ops, dtypes=dtypes, quick=quick, cases=cases)
    live = [t for t in targets if t.available]
    claims = {id(t.instance): t.instance.claims() for t in live}
    results: list[CaseResult] = []
    groups: dict[tuple, list[Case]] = defaultdict(list)
    for case in chosen:  # one compilation per (op, dtype): compiling dominates a backend's time
        groups[(case.op, case.dtype)].append(case)
    done = 0
    for group in groups.values():
        if progress:
            progress(done, len(chosen), f"{group[0].op}[{group[0].dtype.short}]")
        bundle = [Prepared(c) for c in group]
        for t in live:
            results += run_bundle(t.instance, t.device, bundle, claims[id(t.instance)])
        done += len(group)
    if progress:
        progress(len(chosen), len(chosen), "")
    cells = _cells(chosen, targets, results)
    section: dict = {}
    chosen_count = len(chosen)
    if models:
        from . import zoo

        done = len(chosen)
        extra, section = zoo.rows(targets, progress=lambda text: progress(done, done, text) if progress else None,
                                  which="zoo" if models is True else models, architectures=architectures,
                                  anchors=anchors)
        keys = list(dict.fromkeys((r.op, r.dtype) for r in extra))
        cells += _cells_for(keys, targets, extra, cpu_only=zoo.is_whole_model_row)
        chosen_count = len(chosen) + len({r.case for r in extra})  # model and random-draw cases too
    deviations = _check_deviations(targets, cells, whole=not (ops or dtypes or cases))
    type_rules = _type_rules(ops)
    options = {"backends": [t.backend for t in targets], "devices": list(devices or []),
               "dtypes": [d.short for d in dtypes], "ops": ops, "quick": quick}
    options["models"] = models
    return ConformanceRun(targets, cells, deviations, type_rules, chosen_count, time.perf_counter() - start,
                          options, section)


def _cells(cases: Sequence[Case], targets: Sequence[Target], results: Sequence[CaseResult]) -> list[Cell]:
    return _cells_for(list(dict.fromkeys((c.op, c.dtype.short) for c in cases)), targets, results)


def _cells_for(keys: Sequence[tuple[str, str]], targets: Sequence[Target], results: Sequence[CaseResult],
               cpu_only: Callable[[str], bool] = lambda op: False) -> list[Cell]:
    """One cell per (op, dtype) key and target; rows ``cpu_only`` accepts are not run elsewhere."""
    by_cell: dict[tuple, list[CaseResult]] = defaultdict(list)
    for r in results:
        by_cell[(r.op, r.dtype, r.backend, r.device)].append(r)
    cells = []
    for t in targets:
        deviations = t.instance.deviations if t.instance is not None else ()
        for op, dtype in keys:
            cell = Cell(op, dtype, t.backend, t.device, NOT_RUN)
            if not t.available:
                cell.message = t.error or f"device {t.device} is not available to {t.backend} here"
            elif t.device != "cpu" and cpu_only(op):
                cell.message = "models run on cpu targets"
            else:
                _aggregate(cell, by_cell[(op, dtype, t.backend, t.device)], deviations)
            cells.append(cell)
    return cells


#: CaseResult.path of a whole-model case (conformance/hf) that failed within a deviation recorded
#: for it with its measured number (conformance/hf/matrix.py: DEVIATIONS); never an exception.
RECORDED = "recorded deviation"


def _aggregate(cell: Cell, results: Sequence[CaseResult], deviations: Sequence[Deviation]) -> None:
    cell.cases = len(results)
    ran = [r for r in results if r.status != "unsupported"]
    cell.unsupported = len(results) - len(ran)
    if not ran:
        cell.status = UNSUPPORTED
        cell.message = results[0].message if results else ""
        return
    cell.path = ran[0].path
    cell.passed = sum(r.status == "pass" for r in ran)
    cell.failed = len(ran) - cell.passed
    ulps = [r.max_ulp for r in ran if r.max_ulp is not None and np.isfinite(r.max_ulp)]
    cell.max_ulp = max(ulps) if ulps else None
    worst = max(ran, key=lambda r: (r.status != "pass", r.max_ratio))
    cell.max_ratio = worst.max_ratio
    covering = [d for d in deviations if _covers(d, cell.op, cell.dtype, cell.device)]
    cell.deviation = _deviation_dict(covering[0]) if covering else None
    if not cell.failed:
        cell.status = PASS
        return
    cell.worst_case, cell.worst, cell.message = worst.case, worst.worst, worst.message
    failing = [r for r in ran if r.status != "pass"]
    if all(r.path == RECORDED for r in failing):  # whole-model rows measured within their recorded deviation
        cell.status = DEVIATION
        return
    explained = [_explaining(covering, r) for r in failing]
    if all(explained):
        cell.status = DEVIATION
        cell.explained_by = [_deviation_dict(d) for d in dict.fromkeys(explained)]
        cell.deviation = cell.explained_by[0]
        if any(d.flush_to_zero for d in explained):
            cell.flush_to_zero = True
            # a case measured flushed counts its flushed error (None: an exact op, bit-exact once flushed)
            left = [(r.flushed_ulp if r.flushed_passed is not None else r.max_ulp) or 0.0 for r in ran]
            cell.flushed_ulp = max(u for u in left if np.isfinite(u))
        return
    cell.status = FAIL
    unexplained = next(r for r, d in zip(failing, explained) if d is None)
    if unexplained.status == "error" or unexplained.malformed:
        if covering:
            cell.message = "a deviation never excuses an exception or a malformed output. " + cell.message
        return
    numeric = [d for d in covering if not d.flush_to_zero]
    if numeric and _ulp_limit(numeric[0]) is None:
        cell.message = (f"the deviation covering it records no number in ULPs ({numeric[0].max_error!r}), "
                        "so it explains nothing. " + cell.message)
    elif numeric:
        cell.message = (f"max error {cell.max_ulp:.3g} ULP exceeds the recorded deviation "
                        f"({numeric[0].max_error}). " + cell.message)


def _covers(d: Deviation, op: str, dtype: str, device: str) -> bool:
    if d.flush_to_zero and d.dtype is None:  # flush-to-zero is measured per dtype: without one it is invalid
        return False
    return d.op in (op, ANY_OP) and (d.dtype is None or d.dtype.short == dtype) and (
        d.device is None or d.device == device)


def _explaining(covering: Sequence[Deviation], r: CaseResult) -> Deviation | None:
    """The deviation that explains one failing case: a flush_to_zero one (of the case's
    dtype) if the case passes with subnormals flushed, else one whose recorded ULPs cover
    the error that remains. Nothing explains an exception, a malformed output, an error
    with no ULP figure, or (from a deviation that records no number) anything."""
    if r.status == "error" or r.malformed:
        return None
    if r.flushed_passed:
        return next(d for d in covering if d.flush_to_zero)
    error = r.max_ulp if r.flushed_passed is None else r.flushed_ulp
    if error is None or not np.isfinite(error):
        return None
    for d in covering:
        if d.flush_to_zero:
            continue
        limit = _ulp_limit(d)
        if limit is not None and error <= limit:
            return d
    return None


_ULP = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?(?:e[-+]?[0-9]+)?)\s*ulp", re.IGNORECASE)


def _ulp_limit(d: Deviation) -> float | None:
    """The ULPs a deviation records ("5 ulp (measured ...)" → 5.0), or None when it says no number."""
    m = _ULP.match(d.max_error)
    return float(m.group(1)) if m else None


def invalid_reason(d: Deviation) -> str:
    """Why a declared deviation cannot explain anything ("" when it is valid)."""
    if d.flush_to_zero:
        return "" if d.dtype is not None else "flush-to-zero is declared per dtype (measured): this one names none"
    if _ulp_limit(d) is None:
        return f"max_error must start with the number it allows, e.g. '5 ulp (measured 4.2)'; got {d.max_error!r}"
    return ""


def _deviation_dict(d: Deviation) -> dict:
    return {"op": d.op, "dtype": d.dtype.short if d.dtype else None, "device": d.device, "reason": d.reason,
            "max_error": d.max_error}


def _check_deviations(targets: Sequence[Target], cells: Sequence[Cell], whole: bool = True) -> list[DeviationCheck]:
    """Each declared deviation's state. One that covers every op (ANY_OP) can be called
    stale only by a run over the whole database (``whole``)."""
    checks = []
    seen = set()
    for t in targets:
        if t.instance is None or t.backend in seen:
            continue
        seen.add(t.backend)
        mine = [c for c in cells if c.backend == t.backend and c.status not in (NOT_RUN, UNSUPPORTED)]
        for d in t.instance.deviations:
            covered = [c for c in mine if _covers(d, c.op, c.dtype, c.device)]
            if invalid_reason(d):
                state = "invalid"
            elif not covered:
                state = "not checked"
            elif any(_deviation_dict(d) in c.explained_by for c in covered):
                state = "recorded"
            elif d.op == ANY_OP and not whole:
                state = "not checked"
            elif all(c.status in (PASS, DEVIATION) for c in covered):
                state = "stale"
            else:
                state = "recorded"  # covered cells fail beyond it: those cells are the failures
            cells_of = [c for c in covered if _deviation_dict(d) in c.explained_by] or covered
            checks.append(DeviationCheck(t.backend, d.op, d.dtype.short if d.dtype else None, d.device, d.reason,
                                         d.max_error, state, [f"{c.op}[{c.dtype}]@{c.device}" for c in cells_of],
                                         invalid_reason(d)))
    return checks


def _type_rules(ops: str | None) -> list[dict]:
    pattern = re.compile(ops) if ops else None
    out = []
    for e in opdb.error_cases():
        if pattern is not None and not pattern.search(e.op):
            continue
        problem = e.check()
        out.append({"case": e.id, "op": e.op, "expected": e.message, "ok": problem is None, "problem": problem or ""})
    return out
