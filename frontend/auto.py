"""``backend="auto"``: per captured graph, the fastest backend that can run it and is conformant.

For each FX graph AOTAutograd hands over (each partition, with ``strict=False``):

1. **Candidates**: every installed backend that runs on the device, except those that
   are never fast there (:data:`NEVER_AUTO`), or the ones ``AutoOptions.candidates`` names.
   A candidate that does not claim one of the graph's ops (in its dtype) is dropped.
2. **Conformance**: with ``AutoOptions.matrix`` (the JSON of ``parity conform --json``),
   every (op, dtype) cell of the graph must be ``pass`` for the backend on the device; a
   cell the matrix lacks or that fails drops the candidate. Without a matrix, the
   backend's recorded deviations decide: one recorded for an op and dtype of the graph
   drops it. A flush-to-zero deviation is a property of the whole runtime on every op,
   which conformance excuses when the case passes once subnormals are zero on both sides;
   it does not drop a candidate (``parity.auto_choices`` shows it).
3. **Compile, within the budget**: ``AutoOptions.budget_s`` is what auto may spend on one
   graph: compiling its candidates, checking, warming up and timing them. The candidate
   expected to compile fastest is compiled first, whatever it costs (something must run
   the graph); another is not raced when the budget is already spent, or when its expected
   cost exceeds what is left of it: the longest compile this backend took on a graph no larger
   than this one (a lower bound: compile times are kept per backend and device, in this
   process and in the disk cache) or, before any is measured, the cold-compile prior the
   backend declares (``Backend.compile_priors``). A pick made while the spent budget left a
   candidate out is kept in this process only: the next one, knowing the times, orders the
   candidates better.
4. **Check**: every compiled candidate is run on the first call's inputs; one whose
   outputs differ from eager torch running the same FX graph (frontend/auto_check.py: rtol
   per dtype, :data:`RTOL`; the indices of a sort or top-k may order equal keys either way;
   a float output off eager's passes if it is no farther from a float64 run of the graph
   than twice eager's own distance, 16× where eager has no correct digit; graphs that draw
   random numbers are compared with the first candidate's outputs instead, every candidate
   drawing the same keys) is dropped. No element is held to a difference below the underflow
   floor (auto_arbiter.underflow_floors: the dtype's smallest subnormal, or its smallest normal for a
   candidate that declares flush-to-zero, times auto_check.underflow_scale); the only one
   compiled within the budget too. When every compiled candidate is dropped, the ones the
   budget left out are compiled and checked, cheapest expected first, until one matches; when none
   matches, the graph runs in eager torch with one :class:`~parity.frontend.errors.AutoFallbackWarning`.
5. **Warm-up and timing**: the rest run :data:`WARMUP_RUNS` more times untimed (XLA's first
   runs are slow), then in interleaved rounds until the budget is spent (at least one
   round, at most :data:`MAX_ROUNDS`; a candidate over :data:`PRUNE` × the fastest leaves
   the race); the lowest median wins. The choice is kept per graph (keyed by the
   candidates' IR content hashes, the device, the precision tier, the budget and every backend
   considered with its installed version) in this process and in the disk cache
   (on by default), so a second process compiles only the chosen backend and races nothing.

``$PARITY_BACKEND`` (read once, when ``parity.compile`` builds its options) forces one
backend for ``backend="auto"``.

Example::

    >>> import torch, parity
    >>> options = parity.AutoOptions(budget_s=30, candidates=("onnx", "xla"))
    >>> f = parity.compile(lambda x: torch.relu(x * 2 + 1), backend="auto", auto=options)
    >>> f(torch.tensor([-1.0, 1.0])).tolist()
    [0.0, 3.0]
    >>> parity.auto_choices(f)[0].choice in ("onnx", "xla")
    True
"""

from __future__ import annotations

import functools
import json
import math
import statistics
import time
from dataclasses import dataclass, field, replace

import torch

from ..backends.base import ANY_OP, compile_prior
from ..backends.host import host
from ..backends.registry import backend_names, get_backend
from ..ir.errors import ParityError
from ..ir.graph import SourceLoc
from ..ir.ops import node_dtype
from .auto_arbiter import Arbiter, short
from .auto_carry import carried_pick, family_key, is_symbolic, remember_family
from .auto_check import eager_graph
from .auto_compile_times import compile_floor, record_compile
from .auto_contract import NEVER_AUTO
from .auto_installed import installed_candidates
from .auto_options import AutoOptions, resolve_auto_options  # noqa: F401 - re-exported
from .compiled_graph import STATS, CompiledGraph, compiled_executable
from .errors import AutoFallbackWarning, UnsupportedAtenOp, auto_fallback_text
from .partition import rejected_nodes
from .session import AUTO, Session
from .single_backend import compile_split, translate_for
from .source import graph_user_locs, in_user_code, warn_at

MAX_ROUNDS = 20
WARMUP_RUNS = 2  # untimed runs of each candidate after the check run, before timing
PRUNE = 3.0  # after a round, candidates slower than this × the fastest stop being timed
# In every disk key of a pick: a pick stored under older rules is a miss. 2: the only candidate
# compiled within the budget is checked against eager torch too (before, it was kept unchecked).
PICK_RULES = 2

# Choices made in this process: choice key -> backend name; also a graph family's first pick
# (frontend/auto_carry.py: family key -> backend name).
_CHOICES: dict[str, str] = {}


class AutoBackend:
    """What ``parity.compile``'s up-front checks see of ``backend="auto"``: a name, no sharding."""

    name = AUTO
    supports_sharding = False


@dataclass
class Candidate:
    """One backend's fate for one graph: ``status`` is chosen / timed / dropped."""

    name: str
    status: str
    why: str = ""
    times_s: list[float] = field(default_factory=list)

    @property
    def median_s(self) -> float | None:
        return statistics.median(self.times_s) if self.times_s else None


@dataclass
class AutoChoice:
    """What ``backend="auto"`` did for one graph: the candidates, their times and the choice."""

    kind: str
    device: str
    candidates: list[Candidate] = field(default_factory=list)
    choice: str | None = None
    source: str = ""  # measured / only candidate / cached in this process / cached on disk / forced
    notes: list[str] = field(default_factory=list)
    runs_eagerly: bool = False  # no candidate matched eager torch: the graph runs in eager torch
    where: SourceLoc | None = None  # then: the user's first line the graph covers

    def __str__(self) -> str:
        runs = self.choice or ("eager torch" if self.runs_eagerly else "no single backend")
        at = f" at {self.where}" if self.runs_eagerly and self.where is not None else ""
        lines = [f"{self.kind} graph{at} on {self.device}: {runs} ({self.source})"]
        for c in self.candidates:
            t = f"{c.median_s * 1e6:10.1f} µs median of {len(c.times_s)}" if c.times_s else " " * 10 + " -"
            lines.append(f"  {c.name:10} {c.status:8} {t}  {c.why}".rstrip())
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def auto_choices(compiled) -> list[AutoChoice]:
    """The :class:`AutoChoice` of every graph ``compiled`` (what ``parity.compile`` returned
    with ``backend="auto"``) has compiled so far; a choice is final after the graph's first call."""
    return list(compiled.session.auto_choices)


# -- which backends may run a graph -------------------------------------------------------


def candidate_names(options) -> list[str]:
    auto = options.auto or AutoOptions()
    if auto.candidates is not None:
        return list(auto.candidates)
    return [n for n in backend_names() if options.device not in NEVER_AUTO.get(n, ((), ""))[0]]


@functools.lru_cache(maxsize=8)
def load_matrix(path: str) -> dict[tuple[str, str, str, str], str]:
    """(op, dtype, backend, device) -> status, from a ``parity conform --json`` report."""
    with open(path) as f:
        doc = json.load(f)
    return {(c["op"], c["dtype"], c["backend"], c["device"]): c["status"] for c in doc["cells"]}


def conformance_blockers(graph, backend, device: str, matrix_path: str | None) -> list[str]:
    """Why ``backend`` is not conformant for ``graph``'s ops and dtypes on ``device`` (empty: it is)."""
    cells = sorted({(node.op, node_dtype(node)) for node in graph.nodes}, key=lambda c: (c[0], c[1].short))
    found = []
    if matrix_path is not None:
        matrix = load_matrix(matrix_path)
        for op, dtype in cells:
            status = matrix.get((op, dtype.short, backend.name, device))
            if status != "pass":
                found.append(f"{op} {dtype.short}: {status or 'not in the matrix'}")
        return found
    for op, dtype in cells:
        for d in backend.deviations:
            if (d.op == op or (d.op == ANY_OP and not d.flush_to_zero)) and d.dtype in (None, dtype) \
                    and d.device in (None, device) and not d.flush_to_zero:
                found.append(f"{op} {dtype.short}: recorded deviation {d.max_error}")
    return found


def _flush_notes(backend, device: str, graph) -> list[str]:
    dtypes = {v.type.dtype for v in graph.inputs} | {node_dtype(n) for n in graph.nodes}
    return [f"{backend.name} flushes subnormals to zero in {d.dtype.short} on {device} (recorded; excused by "
            f"conformance)" for d in backend.deviations
            if d.flush_to_zero and d.dtype in dtypes and d.device in (None, device)]


# -- compiling one FX graph ----------------------------------------------------------------


def compile_auto(gm: torch.fx.GraphModule, session: Session, kind: str):
    """AOTAutograd's compiler hook for ``backend="auto"``: a boxed callable on torch tensors."""
    options = session.options
    record = AutoChoice(kind, options.device)
    session.auto_choices.append(record)
    matrix = (options.auto or AutoOptions()).matrix
    ready = []  # (name, backend, translation, graph)
    refusals = []
    for name in candidate_names(options):
        try:
            backend = get_backend(name)
        except (ParityError, ImportError) as exc:
            record.candidates.append(Candidate(name, "dropped", f"not available: {exc}"))
            continue
        if options.device not in backend.available_devices():
            record.candidates.append(Candidate(name, "dropped", f"no {options.device} device here"))
            continue
        sub = Session(replace(options, backend=name), session.warned, session.reports, session.auto_choices)
        try:
            translation, graph = translate_for(gm, sub, backend, kind)
        except UnsupportedAtenOp as err:
            refusals.append((backend, err))
            record.candidates.append(Candidate(name, "dropped", f"does not claim: {err.why}"))
            continue
        blockers = conformance_blockers(graph, backend, options.device, matrix)
        if blockers:
            record.candidates.append(Candidate(name, "dropped", "not conformant: " + "; ".join(blockers[:3])))
            continue
        record.notes += _flush_notes(backend, options.device, graph)
        record.candidates.append(Candidate(name, "timed"))
        ready.append((name, backend, translation, graph))
    if not ready:
        return _nothing_runs_whole(gm, session, kind, record, refusals)
    budget_s = (options.auto or AutoOptions()).budget_s
    installed = installed_candidates(c.name for c in record.candidates)
    family = family_key(gm, kind, options, budget_s, installed, machine())
    if any(is_symbolic(graph) for *_, graph in ready):
        ready = _serving_every_size(ready, record)
    key = _choice_key(ready, options.device, options.precision, budget_s, installed)
    known, source = _known_choice(key, options, ready)
    if known is None:  # the same graph at another shape was raced: no race per new size
        known, source = carried_pick(_CHOICES, family, [r[0] for r in ready])
    if known is not None and any(r[0] == known for r in ready):
        ready = [r for r in ready if r[0] == known]
        record.source = source
    compiled, spent, exhausted = _compile_within_budget(ready, options, record, budget_s)
    # A pick made without a candidate whose cost was unknown stays in this process only: the
    # next process knows every compile time measured here, and may order them better.
    on_disk = not exhausted

    def remember(name: str) -> None:
        _remember(key, name, options, ready, on_disk)
        remember_family(_CHOICES, family, name)

    if len(ready) == 1:  # nothing to race, nothing to fall back on: a cached, carried or sole pick
        (name,) = compiled
        _choose(record, name, record.source or "only candidate")
        remember(name)
        return compiled[name]
    # The one compiled within the budget is checked too: were it rejected unseen, which backends
    # happened to fit the budget (what is installed, what the cache has timed) would decide
    # whether the program gets eager torch's numbers (MobileViT's training: onnx alone, once a
    # plugin was uninstalled).
    return AutoGraph(gm, compiled, record, remember, budget_s - spent,
                     compile_rest=_rest_compiler(ready, compiled, options, record), session=session)


def _serving_every_size(ready: list, record: AutoChoice) -> list:
    """A graph with symbolic dims: the candidates whose one executable serves every size, when
    there is one (a backend that compiles per concrete shape would compile again at each new size,
    every token of a decode loop); else all of them."""
    serving = [r for r in ready if not getattr(r[1], "compiles_per_shape", False)]
    if not serving:
        return ready
    for name, *_ in ready:
        if all(name != r[0] for r in serving):
            _drop(record, name, "not raced: it compiles one executable per concrete shape, and this graph's sizes "
                                "are symbolic (each new size, each token of a decode loop, would compile again)")
    return serving


def expected_compile_s(name: str, backend, options, nodes: int) -> tuple[float | None, str]:
    """What compiling a graph of ``nodes`` IR nodes on ``name`` is expected to cost, and how it is
    known: ``"measured"`` (the longest compile measured on a graph no larger), ``"prior"`` (the
    backend's declared :class:`~parity.backends.base.CompilePrior`), or ``""`` (None: unknown)."""
    floor = compile_floor(name, options, nodes)
    if floor is not None:
        return floor, "measured"
    prior = compile_prior(backend, options.device)
    return (prior.seconds(nodes), "prior") if prior is not None else (None, "")


def _compile_within_budget(ready: list, options, record: AutoChoice, budget_s: float) -> tuple[dict, float, bool]:
    """{name: CompiledGraph} of the candidates compiled within ``budget_s``, the seconds spent,
    and whether a candidate was left out because the budget was spent."""
    expected = {name: expected_compile_s(name, backend, options, len(graph.nodes))
                for name, backend, _, graph in ready}
    compiled, spent, exhausted = {}, 0.0, False
    # cheapest expected first (unknown costs count as 0); stable: registry order on ties
    for name, backend, translation, graph in sorted(ready, key=lambda entry: expected[entry[0]][0] or 0.0):
        seconds, source = expected[name]
        left = max(budget_s - spent, 0.0)
        if compiled and spent >= budget_s:
            _drop(record, name, f"not raced: auto's budget (AutoOptions(budget_s={budget_s:g})) was spent compiling "
                                f"{', '.join(compiled)} ({spent:.2f} s)")
            exhausted = True
            continue
        if compiled and seconds is not None and seconds > left:
            known = (f"it took {seconds:.2f} s to compile a graph no larger than this one" if source == "measured"
                     else f"its declared cold-compile prior is {seconds:.2f} s for a graph of {len(graph.nodes)} "
                          f"nodes (no compile of it measured yet)")
            _drop(record, name, f"not raced: {known}, more than the {left:.2f} s left of auto's budget "
                                f"(AutoOptions(budget_s={budget_s:g}))")
            continue
        before, t0 = STATS["backend_compiles"], time.perf_counter()
        executable = compiled_executable(graph, backend, options.device, options.cache_dir,
                                         precision=options.precision)
        took = time.perf_counter() - t0
        spent += took
        if STATS["backend_compiles"] > before:  # a real compile, not one from a cache
            record_compile(name, options, len(graph.nodes), took)
        compiled[name] = CompiledGraph(translation, graph, executable)
    return compiled, spent, exhausted


def _rest_compiler(ready: list, compiled: dict, options, record: AutoChoice):
    """What :class:`AutoGraph` calls when every candidate compiled within the budget was rejected:
    yields the ones left out (for the spent budget or their expected cost) compiled one at a
    time, budget or not, the cheapest expected first, as ``(name, CompiledGraph)``. Past the
    budget auto looks for a backend that runs the graph right, not the fastest: the caller
    stops at the first that matches, so a minutes-long compile never follows one that did."""
    rest = [entry for entry in ready if entry[0] not in compiled]

    def compile_rest():
        expected = {name: expected_compile_s(name, backend, options, len(graph.nodes))[0] or 0.0
                    for name, backend, _, graph in rest}
        for entry in sorted(rest, key=lambda entry: expected[entry[0]]):
            _set_status(record, entry[0], "timed", "raced after every candidate within the budget was rejected")
            try:
                yield from _compile_within_budget([entry], options, record, math.inf)[0].items()
            except Exception as exc:  # noqa: BLE001 - eager torch runs the graph if none compiles
                _drop(record, entry[0], f"failed to compile: {type(exc).__name__}: {str(exc)[:200]}")

    return compile_rest


def _nothing_runs_whole(gm, session: Session, kind: str, record: AutoChoice, refusals: list):
    """No candidate runs the whole graph: strict raises; strict=False partitions around the
    nodes the backend refusing the fewest cannot run, and picks per partition."""
    if not refusals:
        raise ParityError(f"backend='auto' found no conformant backend for this {kind} graph on "
                          f"{session.options.device}:\n{record}\n  fix: name a backend (backend='xla', ...), "
                          f"or give AutoOptions(matrix=...) a conformance report that covers these ops")
    if session.options.strict:
        raise refusals[0][1]
    backend, err = min(refusals, key=lambda r: len(rejected_nodes(gm, r[0])))
    record.choice, record.source = None, f"partitioned around {backend.name}'s refusals; one choice per partition"
    return compile_split(gm, session, backend, kind, err, compile_part=lambda sub: compile_auto(sub, session, kind))


def _drop(record: AutoChoice, name: str, why: str) -> None:
    _set_status(record, name, "dropped", why)


def _set_status(record: AutoChoice, name: str, status: str, why: str) -> None:
    for c in record.candidates:
        if c.name == name:
            c.status, c.why = status, why


def _choose(record: AutoChoice, name: str, source: str) -> None:
    record.choice, record.source = name, source
    for c in record.candidates:
        if c.name == name:
            c.status = "chosen"


# -- the choice's cache --------------------------------------------------------------------


def _choice_key(ready: list, device: str, precision, budget_s: float, installed: list) -> str:
    """The race's identity: device, precision tier (a pick at one tier is no pick at another),
    each candidate's graph, the budget (a pick that left a candidate out for its cost is
    no pick under a budget that lets it race: AutoOptions(budget_s=60) then races Inductor),
    and every backend considered with its installed version (frontend/auto_installed.py: a
    pick made while a plugin since uninstalled or upgraded was installed is raced again)."""
    import hashlib

    text = json.dumps([device, precision.value, sorted((name, graph.content_hash()) for name, _, _, graph in ready),
                       budget_s, installed])
    return hashlib.sha256(text.encode()).hexdigest()


def _disk_key(key: str, options, ready: list) -> dict:
    from ..backends.disk_cache import cache_key, stack_versions

    versions = {}
    for name, *_ in ready:
        versions.update(stack_versions(name))
    disk_key = cache_key(key, AUTO, options.device, [], versions, precision=options.precision)
    disk_key["machine"] = machine()  # a pick is a timing: it holds for the machine that timed it
    disk_key["rules"] = PICK_RULES
    return disk_key


def machine() -> dict:
    """What a race's timings depend on besides the graphs: the CPU model, the CPUs this process
    may run on, and torch's thread count (the same host gives other winners at 1 thread and at
    all of them; a cache directory on a disk that moved to other hardware sees another CPU).

    Example::

        >>> sorted(machine())
        ['cpu', 'cpus', 'torch_threads']
    """
    return {**host(), "torch_threads": torch.get_num_threads()}


def _known_choice(key: str, options, ready: list) -> tuple[str | None, str]:
    if key in _CHOICES:
        return _CHOICES[key], "cached in this process"
    if options.cache_dir:
        from ..backends.disk_cache import DiskCache

        payload = DiskCache(options.cache_dir).load(_disk_key(key, options, ready))
        if payload:
            return payload.decode(), "cached on disk"
    return None, ""


def _remember(key: str, name: str, options, ready: list, on_disk: bool = True) -> None:
    _CHOICES[key] = name
    if options.cache_dir and on_disk:
        from ..backends.disk_cache import DiskCache

        DiskCache(options.cache_dir).store(_disk_key(key, options, ready), name.encode())



# -- checking and timing on the first call ---------------------------------------------------


class AutoGraph:
    """Boxed callable that, on its first call, checks and times the candidates, then runs the choice."""

    def __init__(self, gm, compiled: dict, record: AutoChoice, remember, budget_s: float, *,
                 compile_rest=None, session: Session | None = None):
        """``budget_s``: what is left of auto's budget for checking, warming up and timing;
        ``compile_rest``: yields the candidates the budget left out, compiled one at a time
        (``(name, CompiledGraph)``), checked when every compiled one is rejected; ``session``: where the user called parity."""
        self._boxed_call = True
        self.gm = gm
        self.compiled = compiled
        self.record = record
        self.remember = remember
        self.budget_s = budget_s
        self.compile_rest = compile_rest
        self.session = session
        self.chosen = None
        self.recorder: list | None = None  # while fast_path records a call: the outputs returned

    def __call__(self, args: list) -> list:
        if self.chosen is not None:
            outputs = self.chosen(args)
        else:
            inputs = list(args)
            args.clear()
            outputs = self._decide(inputs)
        if self.recorder is not None:
            self.recorder.append(outputs)
        return outputs

    @property
    def returns_ir_outputs(self) -> bool:
        """The chosen graph's (fast_path's direct entries call this object, which calls it)."""
        return getattr(self.chosen, "returns_ir_outputs", False)  # None, or eager torch's run: False

    def positional(self, order: list[int]):
        """The chosen graph's positional call (CompiledGraph.positional), or None."""
        return None if self.chosen is None else getattr(self.chosen, "positional", lambda order: None)(order)

    def _decide(self, inputs: list) -> list:
        record = self.record
        started = time.perf_counter()
        start = torch.random.get_rng_state()
        arbiter = Arbiter(self.gm, inputs, start, random=any(c._num_keys for c in self.compiled.values()))
        results = self._checked(self.compiled, inputs, arbiter)
        source = "measured" if len(results) > 1 else "the only one compiled within the budget" \
            if len(self.compiled) == 1 else "the only one that matched"
        if not results and self.compile_rest is not None:  # the ones the budget left out, until one matches
            for name, run in self.compile_rest():
                self.compiled[name] = run
                results = self._checked({name: run}, inputs, arbiter)
                if results:
                    source = "the only one that matched"
                    break
        if not results:
            return self._run_eagerly(inputs, start)
        after = torch.random.get_rng_state()
        self._warm_up(list(results), inputs)
        times = self._time(list(results), inputs, self.budget_s - (time.perf_counter() - started))
        torch.random.set_rng_state(after)  # as if the graph had run once
        name = min(results, key=lambda n: statistics.median(times[n]) if times[n] else 0.0)
        _choose(record, name, source)
        self.remember(name)
        self.chosen = self.compiled[name]
        return list(results[name])

    def _checked(self, compiled: dict, inputs: list, arbiter: Arbiter) -> dict:
        """{name: outputs} of the candidates in ``compiled`` whose outputs on ``inputs`` match
        the arbiter's; the others are dropped, with why."""
        results = {}
        for name, run in compiled.items():
            torch.random.set_rng_state(arbiter.start)  # every candidate draws the same keys
            try:
                results[name] = run(list(inputs))
            except Exception as exc:  # a candidate that fails on real inputs is dropped, not fatal
                self._drop(name, f"failed on the first inputs: {type(exc).__name__}: {str(exc)[:200]}")
        for name, got in list(results.items()):
            why = arbiter.mismatch(got, results, get_backend(name), self.record.device)
            if why is not None:
                self._drop(name, f"differs from {arbiter.name} on the first inputs: {why}")
                del results[name]
        return results

    def _run_eagerly(self, inputs: list, start) -> list:
        """No candidate matched: the graph runs in eager torch from now on, with one warning."""
        record, site = self.record, self.session.options.site if self.session is not None else None
        locs = [in_user_code(loc, site) for loc in graph_user_locs(self.gm)]
        rejected = [(c.name, short(c.why)) for c in record.candidates]
        record.choice, record.runs_eagerly = None, True
        record.source = "no candidate matched eager torch on the first inputs"
        record.where = locs[0] if locs else site
        warn_at(record.where, auto_fallback_text(record.kind, locs, rejected), AutoFallbackWarning)
        self.chosen = eager_graph(self.gm)
        torch.random.set_rng_state(start)
        return self.chosen(list(inputs))

    def _warm_up(self, names: list[str], inputs: list) -> None:
        """Untimed runs, so that no candidate is timed on its slow first runs."""
        if len(names) < 2:
            return
        state = torch.random.get_rng_state()
        for _ in range(WARMUP_RUNS):
            for name in names:
                self.compiled[name](list(inputs))
        torch.random.set_rng_state(state)

    def _time(self, names: list[str], inputs: list, budget_s: float) -> dict[str, list[float]]:
        times = {n: [] for n in names}
        if len(names) < 2:
            return times
        started, rounds = time.perf_counter(), 0
        state = torch.random.get_rng_state()
        racing = list(names)
        while rounds < MAX_ROUNDS and (rounds == 0 or time.perf_counter() - started < budget_s) \
                and len(racing) > 1:
            for name in racing:  # interleaved: load changes hit every candidate alike
                run = self.compiled[name]
                t0 = time.perf_counter()
                run(list(inputs))
                times[name].append(time.perf_counter() - t0)
            rounds += 1
            # A candidate whose best run is slower than PRUNE × the leader's best is out of the race.
            best = min(min(times[n]) for n in racing)
            racing = [n for n in racing if min(times[n]) <= PRUNE * best]
        torch.random.set_rng_state(state)
        for c in self.record.candidates:
            if c.name in times:
                c.times_s = times[c.name]
        return times

    def _drop(self, name: str, why: str) -> None:
        _drop(self.record, name, why)
