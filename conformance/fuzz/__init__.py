"""Differential fuzzing: random valid graphs on every backend, each node held to its bound.

:func:`run` generates ``budget`` graphs (:mod:`.generate`, reproducible from ``(seed,
index)``), runs them on every backend — several graphs side by side per compilation,
as the runner bundles cases — and measures every node against its own bound on the
backend's own operands (:data:`~..bounds.LOCAL`). A failing node that the backend
declares as a deviation (within the ULPs it records; or flush-to-zero in a dtype it declares
flushing) is counted as such; no deviation excuses an error or a malformed output. Any other
mismatch — a node over its bound, or a compile/run error on a valid graph — is shrunk
(:mod:`.shrink`) and saved as a regression (:mod:`..regressions`) that every later
``parity conform`` replays. A mismatch is *known* (counted, not saved again) only when it
is the very graph a saved regression was found in (same backend, seed and index) failing
the same way, or has the signature (backend, op and dtype; or error type) of a mismatch
already found in this run. A saved regression of the same op elsewhere hides nothing: a
fixed bug's signature must not mask a new one.

Example::

    >>> report = run(4, seed=1, backends=["reference"], save=False)
    >>> report.graphs, report.backends["reference"]["fail"], report.findings
    (4, 0, [])
"""

from __future__ import annotations

import hashlib
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ...backends.base import Backend
from .. import regressions
from ..execute import Prepared, run_bundle, run_case
from ..regressions.place import save_directory
from ..results import CRASHED, TIMED_OUT
from ..selection import resolve_targets
from .generate import FuzzGraph, fuzz_case, generate
from .shrink import shrink

__all__ = ["Finding", "FuzzReport", "generate", "run"]


@dataclass
class Finding:
    """One mismatch: where it was found, what failed, and where its regression lives."""

    backend: str
    device: str
    graph: str  # "s{seed}-{index}"
    status: str  # fail | error
    op: str  # the failing node's op (error: the last node of the shrunk graph)
    dtype: str
    message: str
    max_ulp: float | None = None
    max_ratio: float | None = None
    worst: dict = field(default_factory=dict)
    nodes: int = 0  # before shrinking
    shrunk_nodes: int = 0
    regression: str = ""  # the saved regression's name ("" if not saved)
    saved_in: str = ""  # the folder it was saved in
    duplicate: bool = False  # known: a saved regression's own graph, or an earlier finding's signature
    known: str = ""  # the saved regression this very graph was found as
    text: str = ""  # the shrunk graph


@dataclass
class FuzzReport:
    seed: int
    budget: int
    graphs: int = 0
    elapsed_s: float = 0.0
    backends: dict[str, Counter] = field(default_factory=dict)  # name -> status counts
    findings: list[Finding] = field(default_factory=list)
    ops: Counter = field(default_factory=Counter)  # node count per op over the generated graphs
    outside: Counter = field(default_factory=Counter)  # backend -> nodes not held to their bound (local.py)
    # graphs that killed their worker or timed out (runs on workers only): never shrunk in this process
    crashes: list[dict] = field(default_factory=list)

    @property
    def new_findings(self) -> list[Finding]:
        return [f for f in self.findings if not f.duplicate]

    def to_json(self) -> dict:
        """A JSON-ready dict: the counts per backend, the findings, the ops exercised."""
        from dataclasses import asdict

        from ..reports import _clean

        return _clean({"seed": self.seed, "budget": self.budget, "graphs": self.graphs,
                       "elapsed_s": round(self.elapsed_s, 1), "nodes": sum(self.ops.values()),
                       "backends": {k: dict(v) for k, v in self.backends.items()}, "outside": dict(self.outside),
                       "findings": [asdict(f) for f in self.findings], "crashes": self.crashes,
                       "ops": dict(self.ops.most_common())})

    def lines(self) -> list[str]:
        """A plain-text summary (the CLI prints it)."""
        out = [f"fuzz: {self.graphs} graphs (seed {self.seed}), {sum(self.ops.values())} nodes over "
               f"{len(self.ops)} ops, {self.elapsed_s:.1f} s"]
        for name, c in self.backends.items():
            out.append(f"  {name}: {c['pass']} pass, {c['fail']} fail, {c['error']} error, "
                       f"{c['deviation']} recorded deviation, {c['unsupported']} unsupported; "
                       f"{self.outside[name]} nodes outside the contract's domain"
                       + (f"; {c['crashed'] + c['timed out']} crashed or timed out" if self.crashes else ""))
        for r in self.crashes:
            out.append(f"  {r['status']} on {r['backend']}/{r['device']}: {r['case']}: {r['message'][:300]}")
        for f in self.findings:
            tag = (f"known: {f.known}" if f.known else "as an earlier finding" if f.duplicate
                   else f"saved {f.saved_in}/{f.regression}.ir" if f.regression else "new")
            err = f" max {f.max_ulp:.3g} ulp" if f.max_ulp is not None else ""
            out.append(f"  {f.status} on {f.backend}/{f.device}: {f.op}[{f.dtype}]{err} in {f.graph} "
                       f"({f.nodes} → {f.shrunk_nodes} nodes; {tag}): {f.message[:160]}")
        return out


ProgressFn = Callable[[int, int, str], None]
#: ``results_for(seed, chunks, targets)`` → {(case id, backend): CaseResult} (see :func:`run`).
ResultsFn = Callable[[int, list, list], dict]


def run(budget: int, *, seed: int = 0, backends: Sequence[str | Backend] | None = None, device: str = "cpu",
        bundle: int = 16, do_shrink: bool = True, save: bool = True, directory=None,
        deadline_s: float | None = None, progress: ProgressFn | None = None,
        only: Sequence[int] | None = None, results_for: ResultsFn | None = None) -> FuzzReport:
    """Fuzz ``budget`` graphs (or until ``deadline_s`` seconds have passed) on ``backends``
    (default: every registered backend with ``device`` here). ``only`` runs just those
    graph indices of the stream (to reproduce a finding). ``results_for(seed, chunks,
    targets)`` runs every chunk's cases elsewhere (on workers:
    :func:`..controller.fuzz_results`) and returns their results by (case id, backend);
    the findings are then made here as in a serial run. Regressions are saved in
    ``directory``, or by default where :func:`..regressions.place.save_directory` puts each
    backend's (beside a plugin; never into an installed package)."""
    start = time.perf_counter()
    report = FuzzReport(seed, budget)
    targets = [t for t in resolve_targets(backends, [device]) if t.available]
    claims = {t.backend: t.instance.claims() for t in targets}
    folders = {t.backend: save_directory(t.instance, directory) for t in targets}
    known = {k: v for folder in dict.fromkeys(folders.values()) for k, v in known_graphs(folder).items()}
    seen: set[tuple] = set()  # signatures found in this run
    for t in targets:
        report.backends[t.backend] = Counter({k: 0 for k in ("pass", "fail", "error", "deviation", "unsupported",
                                                             "crashed", "timed out")})
    stream = list(only) if only is not None else range(budget)
    elsewhere = None
    if results_for is not None:
        chunks = [[fuzz_case(generate(seed, i)) for i in stream[k:k + bundle]] for k in range(0, len(stream), bundle)]
        elsewhere = results_for(seed, chunks, [(t.backend, t.device) for t in targets])
    index = 0
    while index < len(stream) and (deadline_s is None or time.perf_counter() - start < deadline_s):
        chunk = [generate(seed, i) for i in stream[index:index + bundle]]
        index += len(chunk)
        for fg in chunk:
            report.ops.update(fg.graph.op_counts())
        prepared = [Prepared(fuzz_case(fg), fg.arrays, fg.graph, oracle=[]) for fg in chunk]
        for t in targets:
            if elsewhere is None:
                results = run_bundle(t.instance, device, prepared, claims[t.backend])
            else:
                results = [elsewhere[(p.case.id, t.backend)] for p in prepared]
            for fg, r in zip(chunk, results):
                status = r.status
                if status == "fail" and _all_declared(t.instance, device, r.worst.get("nodes", [])):
                    status = "deviation"
                report.backends[t.backend][status] += 1
                report.outside[t.backend] += len(r.worst.get("outside", []))
                if status in (CRASHED, TIMED_OUT):  # crashed / timed out: shrinking it here would crash this process
                    report.crashes.append({"case": r.case, "backend": r.backend, "device": r.device,
                                           "status": status, "message": r.message})
                if status in ("fail", "error"):
                    report.findings.append(_finding(t.instance, device, fg, r, known, seen, do_shrink, save,
                                                    folders[t.backend]))
        report.graphs = index
        if progress:
            progress(index, len(stream), f"{len(report.findings)} mismatches")
    report.elapsed_s = time.perf_counter() - start
    return report


def known_graphs(directory=regressions.DIRECTORY) -> dict[tuple, tuple[str, tuple]]:
    """The regressions saved in ``directory`` by the graph they were found in: (backend,
    seed, index) → (name, signature). Only that graph failing that way again is known."""
    out = {}
    for r in regressions.load_all(directory):
        found = r.meta.get("found") or {}
        if "seed" in found and "index" in found:
            sig = _signature(r.meta["backend"], r.meta.get("status", "fail"), r.meta["op"], r.meta["dtype"],
                             r.meta.get("error_type", ""))
            out[(r.meta["backend"], found["seed"], found["index"])] = (r.name, sig)
    return out


def error_kind(message: str) -> str:
    """What kind of error a message is: its first 100 characters with numbers as N (so one
    bug raising at different sizes is one kind, and two bugs raising one type are two)."""
    return re.sub(r"\d+", "N", message)[:100]


def _all_declared(backend: Backend, device: str, nodes: list[dict]) -> bool:
    """Is every failing node covered by a declared deviation (within the ULPs it records), or
    explained by flush-to-zero in a dtype the backend declares flushing? A malformed node
    (outputs of the wrong shape or dtype) never is."""
    for n in nodes:
        if n.get("malformed"):
            return False
        if n.get("flush_to_zero") and declares_flush_to_zero(backend, device, n["dtype"]):
            continue
        if not any(_covers(d, n["op"], n["dtype"], device) and not _flushes(d) and _within(d, n["max_ulp"])
                   for d in backend.deviations):
            return False
    return bool(nodes)


def _covers(d, op: str, dtype: str, device: str) -> bool:
    return d.op in (op, "*") and (d.dtype is None or d.dtype.short == dtype) and d.device in (None, device)


def _flushes(d) -> bool:
    return bool(getattr(d, "flush_to_zero", False))


def _within(d, max_ulp) -> bool:
    """Is ``max_ulp`` within the ULPs the deviation records ("5 ulp (measured 4.2)")? A
    deviation that records no number covers nothing, and an error without a ULP figure
    is within no deviation."""
    m = re.match(r"^\s*([0-9]+(?:\.[0-9]*)?(?:e[-+]?[0-9]+)?)\s*ulp", d.max_error, re.IGNORECASE)
    return m is not None and max_ulp is not None and max_ulp <= float(m.group(1))


def declares_flush_to_zero(backend: Backend, device: str, dtype: str) -> bool:
    """Does ``backend`` declare, as data (``flush_to_zero=True`` with that dtype), that it
    flushes subnormals of ``dtype`` (short name) on ``device``? Composites then inherit it
    from the primitives they decompose into."""
    return any(_flushes(d) and d.dtype is not None and d.dtype.short == dtype and d.device in (None, device)
               for d in backend.deviations)


def _signature(backend: str, status: str, op: str, dtype: str, error_type: str) -> tuple:
    return (backend, "error", error_type) if status == "error" else (backend, "fail", op, dtype)


def _undeclared(backend: Backend, device: str, nodes: list[dict]) -> dict:
    for n in nodes:
        if not _all_declared(backend, device, [n]):
            return n
    return nodes[0]


def _finding(backend: Backend, device: str, fg: FuzzGraph, r, known: dict, seen: set, do_shrink: bool,
             save: bool, directory) -> Finding:
    if r.status == "fail":
        node = _undeclared(backend, device, r.worst.get("nodes", []) or [{"op": "?", "dtype": "?"}])
        op, dtype, error_type = node["op"], node["dtype"], ""
    else:
        error_type = error_kind(r.message)
        op, dtype = fg.graph.nodes[-1].op, _node_dtype(fg.graph.nodes[-1])
    f = Finding(backend.name, device, fg.name, r.status, op, dtype, r.message, r.max_ulp, r.max_ratio, r.worst,
                nodes=len(fg.graph.nodes))
    sig = _signature(backend.name, r.status, op, dtype, error_type)
    name, saved_sig = known.get((backend.name, fg.seed, fg.index), ("", None))
    if saved_sig == sig:  # the very graph a saved regression was found in, failing the same way
        f.duplicate, f.known = True, name
        return f
    if sig in seen:
        f.duplicate = True
        return f
    seen.add(sig)
    graph, arrays = fg.graph, fg.arrays
    if do_shrink:
        graph, arrays = shrink(graph, arrays, _still_fails(backend, device, r.status, op, dtype, error_type),
                              max_tries=40)
    f.shrunk_nodes = len(graph.nodes)
    f.text = graph.to_text(locations=False)
    if r.status == "error":
        f.op = op = graph.nodes[-1].op
        f.dtype = dtype = _node_dtype(graph.nodes[-1])
    final = run_case(backend, device, fuzz_case(FuzzGraph(fg.seed, fg.index, graph, arrays), op))
    f.message, f.max_ulp, f.max_ratio, f.worst = final.message, final.max_ulp, final.max_ratio, final.worst
    if save:
        digest = hashlib.sha256(f.text.encode()).hexdigest()[:8]
        f.regression = f"{backend.name}-{op}-{dtype}-{digest}"
        meta = {"op": op, "dtype": dtype, "backend": backend.name, "device": device, "status": r.status,
                "error_type": error_type, "found": {"seed": fg.seed, "index": fg.index, "nodes": f.nodes},
                "error": {"max_ulp": final.max_ulp, "max_ratio": final.max_ratio, "message": final.message[:500],
                          "worst": final.worst}, "note": "found by parity fuzz; open until the backend is fixed"}
        f.saved_in = str(directory)
        regressions.save(f.regression, graph, arrays, _json_safe(meta), directory)
    return f


def _node_dtype(node) -> str:
    from ..local import node_dtype

    return node_dtype(node).short


def _still_fails(backend: Backend, device: str, status: str, op: str, dtype: str, error_type: str):
    """The shrinking predicate: the same kind of failure on the same backend."""
    def fails(graph, arrays) -> bool:
        r = run_case(backend, device, fuzz_case(FuzzGraph(0, 0, graph, list(arrays))))
        if status == "error":
            return r.status == "error" and error_kind(r.message) == error_type
        return r.status == "fail" and any(n["op"] == op and n["dtype"] == dtype and not _all_declared(
            backend, device, [n]) for n in r.worst.get("nodes", []))

    return fails


def _json_safe(value):
    from ..reports import _clean

    return _clean(value)
