"""``parity.explain``: what ``parity.compile`` would capture, and where each op would run.

For one call ``fn(*args)`` it reports the eager islands (every piece that runs in eager
torch, read from the same records as parity's warnings, so each has the warned line and
reason: Dynamo's graph breaks, frames it skipped, ``strict=False`` fallbacks per aten op with
their node count, a recompile limit reached) and, per graph TorchDynamo captures: the aten
ops of the graph after AOTAutograd and the core decompositions (what parity translates), and, per backend,
whether each op runs *native* (the backend claims every IR op it becomes), *decomposed*
(some IR composite runs through its decomposition), or not at all: *unsupported* (the
backend cannot run an IR op it needs) or *untranslatable* (parity has no translation).
Nothing is compiled for a backend; the call itself runs eagerly in torch (so ``fn``'s
side effects happen once). Like ``torch._dynamo.explain``, it first resets Dynamo's
caches (every Dynamo-compiled function, ``parity.compile``'d ones too, re-traces at its
next call; parity's executable cache is kept): otherwise a function explained before
would be served from Dynamo's cache and not captured again.

Only forward graphs are shown: AOTAutograd builds a backward graph when backward runs.

Example::

    >>> import torch, parity
    >>> report = parity.explain(lambda x: torch.tanh(x) + 1, torch.ones(2), backends=["reference"])
    >>> report.graphs[0].ops[0].op, report.graphs[0].ops[0].status["reference"]
    ('aten.tanh.default', 'native')
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from ..ir.graph import SourceLoc
from ..ir.precision import Precision
from .errors import eager_count_text
from .graph_breaks import FALLBACK_ISLAND, ISLAND_KINDS, Island, dynamo_breaks, take_skipped_frames
from .rnn_modules import rnn_islands
from .session import backend_line
from .support import (
    DECOMPOSED,
    NATIVE,
    PREDICATE_DECLINES,
    RUNS,
    UNSUPPORTED,
    UNTRANSLATABLE,
    classify,
    translate_alone,
)
from .user_errors import quiet_tracing_logs


@dataclass
class OpReport:
    """One aten op of a graph: how often it occurs, where first, and its fate per backend.

    ``status[backend]`` is native / decomposed / unsupported / untranslatable;
    ``why[backend]`` explains the last two (and names the composites for decomposed).
    """

    op: str
    count: int
    loc: SourceLoc | None
    status: dict[str, str] = field(default_factory=dict)
    why: dict[str, str] = field(default_factory=dict)
    nodes_on: dict[str, int] = field(default_factory=dict)  # occurrences that run on each backend


@dataclass
class GraphReport:
    """One graph Dynamo captured: its kind (inference/forward) and its aten ops in order."""

    index: int
    kind: str
    ops: list[OpReport]

    def op(self, name: str) -> OpReport:
        """The report of aten op ``name`` (``"aten.add.Tensor"``) in this graph."""
        for report in self.ops:
            if report.op == name:
                return report
        raise KeyError(f"{name} is not in graph {self.index}; it has {', '.join(r.op for r in self.ops)}")

    def share(self, backend: str) -> tuple[int, int]:
        """(aten nodes that run on ``backend``, all aten nodes): with ``strict=False`` the
        rest run in eager torch, each in its own partition (frontend/partition.py)."""
        return sum(r.nodes_on.get(backend, 0) for r in self.ops), sum(r.count for r in self.ops)


@dataclass
class GraphBreak:
    """Where Dynamo split the function, and why (its own words, first line first)."""

    reason: str
    loc: SourceLoc | None


@dataclass
class ExplainReport:
    """The result of :func:`explain`; ``str(report)`` is the readable summary."""

    graphs: list[GraphReport]
    breaks: list[GraphBreak]
    backends: list[str]
    unavailable: dict[str, str] = field(default_factory=dict)
    # for a parity.compile(..., backend="auto") result: what auto chose per graph so far
    # (frontend/auto.py's AutoChoice: candidates, their times, the choice); None otherwise
    auto: list | None = None
    # per backend, the precision tier it compiles at when that is not the one asked for
    # (parity.compile(..., precision="fast") on a backend that declares only "exact")
    precision: dict[str, str] = field(default_factory=dict)
    # for a parity.compile result: which backend runs, and why (frontend/explain.py backend_line)
    backend: str | None = None
    # every piece that runs in eager torch (graph breaks, skipped frames, strict=False fallbacks,
    # a recompile limit reached), each with the line and reason parity's warning gives
    islands: list[Island] = field(default_factory=list)

    def ops_with(self, status: str, backend: str) -> list[str]:
        """Every aten op (over all graphs) whose status on ``backend`` is ``status``."""
        return sorted({r.op for g in self.graphs for r in g.ops if r.status.get(backend) == status})

    def __str__(self) -> str:
        lines = [f"{len(self.graphs)} graph(s), {len(self.breaks)} graph break(s); backends: "
                 f"{', '.join(self.backends) or 'none'}"]
        if self.backend is not None:
            lines.append(f"runs on: {self.backend}")
        for name, why in self.unavailable.items():
            lines.append(f"  backend {name!r} is unavailable: {why}")
        for name, note in self.precision.items():
            lines.append(f"  backend {name!r}: {note}")
        for i, brk in enumerate(self.breaks):
            where = f" at {brk.loc}" if brk.loc else ""
            lines.append(f"break {i + 1}{where}: {brk.reason}")
        lines.extend(islands_text(self.islands))
        width = max((len(f"{r.op} x{r.count}") for g in self.graphs for r in g.ops), default=0)
        for graph in self.graphs:
            lines.append(f"graph {graph.index} ({graph.kind}, {sum(r.count for r in graph.ops)} aten ops):")
            shares = []
            for b in self.backends:
                on, total = graph.share(b)
                eager = {r.op: r.count - r.nodes_on.get(b, 0) for r in graph.ops if r.nodes_on.get(b, 0) < r.count}
                shares.append(f"{b} {on}/{total}" + ("" if on == total else f" ({eager_count_text(eager)} in "
                                                                              f"eager torch with strict=False)"))
            lines.append("  on the backend: " + ", ".join(shares))
            for r in graph.ops:
                cells = "  ".join(f"{b}: {r.status.get(b, '?')}" for b in self.backends)
                lines.append(f"  {f'{r.op} x{r.count}':<{width}}  {cells}")
                for b in self.backends:
                    if r.status.get(b) in (UNSUPPORTED, UNTRANSLATABLE) or PREDICATE_DECLINES in r.why.get(b, ""):
                        where = f" (at {r.loc})" if r.loc else ""
                        lines.append(f"      {b}: {r.why[b]}{where}")
        if self.auto is not None:
            if not self.auto:
                lines.append("backend='auto': nothing chosen yet (a graph's choice is made at its first call)")
            for i, choice in enumerate(self.auto):
                lines.append(f"backend='auto', choice {i + 1}: {choice}")
        return "\n".join(lines)


def explain(fn, *args, backends: Sequence[str] | None = None, **kwargs) -> ExplainReport:
    """Capture ``fn(*args, **kwargs)`` with TorchDynamo + AOTAutograd and report (see module doc).

    ``backends`` defaults to every backend the registry lists; one that cannot be loaded
    is listed under ``unavailable``. ``fn`` may be a function or an ``nn.Module``, or what
    ``parity.compile`` made of one; for ``backend="auto"``, the report also shows what auto
    chose for each graph called so far: the candidates, their times and the pick
    (``report.auto``).
    """
    from torch._dynamo.backends.debugging import ExplainWithBackend

    from ..backends.registry import backend_names, get_backend
    from ..ir.errors import ParityError
    from .capture import unwrap_compiled

    loaded, unavailable = {}, {}
    for name in backend_names() if backends is None else backends:
        try:
            loaded[name] = get_backend(name)
        except ParityError as exc:
            unavailable[name] = str(exc).splitlines()[0]

    captured: list[list] = []  # per Dynamo graph: [(kind, aten GraphModule), ...]
    explainer = ExplainWithBackend(functools.partial(_record_graph, captured))
    torch._dynamo.reset()
    quiet_tracing_logs((explain.__code__,))  # Dynamo's log lines of this call become the report's
    take_skipped_frames()
    reasons = _dynamo_reasons()
    start = len(reasons)
    torch.compile(unwrap_compiled(fn), backend=explainer)(*args, **kwargs)

    graphs = []
    for index, aten_graphs in enumerate(captured):
        for kind, gm in aten_graphs:
            graphs.append(GraphReport(index, kind, _op_reports(gm, loaded)))
    session = getattr(fn, "session", None)
    site = getattr(getattr(session, "options", None), "site", None)
    # the same records, read the same way, as parity.compile's warnings (graph_breaks.BreakWatch)
    islands = dynamo_breaks(reasons[start:], site)
    skipped = take_skipped_frames()
    if not islands:  # a frame Dynamo gave up on (a quantized tensor, a data-dependent gradient): all eager
        islands = [Island("skipped frame", frame.loc, frame.why) for frame in skipped]
    breaks = [GraphBreak(island.why, island.loc) for island in islands]
    islands += _fallback_islands(session, graphs) + _limit_islands(fn) + rnn_islands(unwrap_compiled(fn), site)
    return ExplainReport(graphs, breaks, list(loaded), unavailable, _auto_choices(fn),
                         _precision_notes(fn, loaded), backend_line(session) if session is not None else None,
                         islands)


def islands_text(islands: list[Island]) -> list[str]:
    """The report's lines for its eager islands: a count per kind, then one line each."""
    if not islands:
        return ["eager islands: none (everything captured runs on the backend)"]
    parts = []
    for kind in ISLAND_KINDS:
        mine = [i for i in islands if i.kind == kind]
        if mine and kind == FALLBACK_ISLAND:  # counted as the warning counts them
            parts.append(f"{kind} of {eager_count_text({i.op: i.count for i in mine})}")
        elif mine:
            parts.append(f"{len(mine)} {kind}")
    lines = ["eager islands: " + ", ".join(parts)]
    for island in islands:
        where = f" at {island.loc}" if island.loc else " (no line)"
        what = f" {island.op} ({island.count} aten nodes)" if island.op else ""
        lines.append(f"  {island.kind}{where}:{what} {island.why}")
    return lines


def _dynamo_reasons() -> list:
    from torch._dynamo.utils import graph_break_reasons

    return graph_break_reasons


def _fallback_islands(session, graphs: list[GraphReport]) -> list[Island]:
    """strict=False: one island per aten op the backend cannot run, as the warning names it (once,
    at its first line, frontend/session.py), with its nodes counted: in the graphs captured here,
    and in the graphs the compiled function split so far (backward graphs among them)."""
    options = getattr(session, "options", None)
    if options is None or options.strict or options.backend == "auto":
        return []
    from .source import in_user_code

    found: dict[str, Island] = {}

    def add(op, loc, why, count):
        old = found.get(op)
        found[op] = Island(FALLBACK_ISLAND, old.loc if old else in_user_code(loc, options.site),
                           old.why if old else why, (old.count if old else 0) + count, op)

    for graph in graphs:
        for report in graph.ops:
            eager = report.count - report.nodes_on.get(options.backend, report.count)
            if eager:
                add(report.op, report.loc, report.why.get(options.backend, ""), eager)
    seen = set(found)
    for report in session.reports:  # graphs split at calls so far; ops already counted above are not again
        for fallback in report.fallbacks:
            if fallback.aten_op not in seen:
                add(fallback.aten_op, fallback.loc, fallback.why, 1)
    return list(found.values())


def _limit_islands(fn) -> list[Island]:
    """The recompile limit reached by ``fn`` (Dynamo runs it in eager torch since), as warned."""
    from .capture import unwrap_compiled
    from .recompile_limit import LIMIT_HITS
    from .source import definition_loc

    defined = definition_loc(unwrap_compiled(fn))
    if defined is None:
        return []
    hits = [hit for hit in LIMIT_HITS if (hit.loc.file, hit.loc.line) == (defined.file, defined.line)]
    return hits[-1:]


def _precision_notes(fn, backends: dict) -> dict[str, str]:
    """For what ``parity.compile(..., precision=...)`` made: each backend that runs another tier than asked."""
    from ..backends.base import precision_for

    options = getattr(getattr(fn, "session", None), "options", None)
    asked = getattr(options, "precision", Precision.EXACT)
    notes = {}
    for name, backend in backends.items():
        runs = precision_for(backend, asked)
        if runs is not asked:
            notes[name] = (f"precision={asked.value!r} was asked for, and it runs {runs.value!r}: it declares "
                           f"only {[p.value for p in getattr(backend, 'precisions', (Precision.EXACT,))]}")
    return notes


def _auto_choices(fn) -> list | None:
    """What ``backend="auto"`` chose for ``fn``'s graphs, when ``fn`` is such a compiled function."""
    session = getattr(fn, "session", None)
    if session is None or getattr(session.options, "backend", None) != "auto":
        return None
    from .auto import auto_choices

    return auto_choices(fn)


def _record_graph(captured: list, gm, example_inputs):
    """Dynamo backend: AOTAutograd with parity's decompositions, keeping the aten graphs."""
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.aot_autograd import make_boxed_func

    from .aten_decompositions import decomposition_table
    from .pipeline import run_aot

    graphs: list = []
    captured.append(graphs)

    def keep(kind, aten_gm, _inputs):
        graphs.append((kind, aten_gm))
        return make_boxed_func(aten_gm.forward)  # run eagerly: explaining compiles nothing

    aot = aot_autograd(fw_compiler=functools.partial(keep, "forward"),
                       inference_compiler=functools.partial(keep, "inference"),
                       bw_compiler=lambda bw_gm, _inputs: make_boxed_func(bw_gm.forward),
                       decompositions=decomposition_table())
    return run_aot(aot, gm, example_inputs)  # as parity.compile: stft kept whole, a data-dependent size noted


def _op_reports(gm, backends: dict) -> list[OpReport]:
    """One OpReport per distinct aten op of ``gm``, in order of first use."""
    from .claims import ClaimCheck
    from .source import loc_from_stack_trace
    from .translate import aten_name

    checks = {name: ClaimCheck(backend) for name, backend in backends.items()}  # caches composites
    reports: dict[str, OpReport] = {}
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target is operator.getitem:
            continue
        name = aten_name(node.target)
        report = reports.get(name)
        if report is None:
            report = reports[name] = OpReport(name, 0, loc_from_stack_trace(node.meta.get("stack_trace")))
        report.count += 1
        translated = translate_alone(node)
        for backend_name, backend in backends.items():
            status, why = classify(translated, backend, checks[backend_name])
            report.nodes_on[backend_name] = report.nodes_on.get(backend_name, 0) + (status in RUNS)
            # the worst case over the op's occurrences (a later one may need more)
            if _RANK[status] > _RANK.get(report.status.get(backend_name), -1):
                report.status[backend_name] = status
                report.why[backend_name] = why
    return list(reports.values())


_RANK = {NATIVE: 0, DECOMPOSED: 1, UNSUPPORTED: 2, UNTRANSLATABLE: 3}
