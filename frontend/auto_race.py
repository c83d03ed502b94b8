"""The race behind ``backend="auto"``, for both frontends (no torch, no JAX): which backends
race (:func:`candidate_names`, :func:`conformance_blockers`), which are compiled within the
budget (:func:`compile_within_budget`, cheapest expected first), how they are timed
(:func:`warm_up`, :func:`time_rounds`: interleaved rounds, the slow pruned), the record of it
(:class:`AutoChoice`) and the pick's cache in this process and on disk (:func:`choice_key`,
:func:`known_choice`, :func:`remember`).

What differs per frontend stays with it: what a candidate's outputs are checked against
(eager torch: frontend/auto.py and auto_arbiter.py; ``jax.jit``: frontend/jax/auto.py), the
random state a timed run must not move (torch's generator), and what happens when no
candidate matches (the torch frontend runs eager torch; a JAX program has no eager fallback).

Example::

    >>> runs = {"fast": lambda: None, "slow": lambda: sum(range(20000))}
    >>> times = time_rounds(runs, budget_s=0.05)
    >>> len(times["fast"]) >= len(times["slow"]) >= 1
    True
"""

from __future__ import annotations

import functools
import hashlib
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..backends.base import ANY_OP, compile_prior
from ..backends.disk_cache import DiskCache, cache_key, stack_versions
from ..ir.graph import SourceLoc
from ..ir.ops import node_dtype
from .auto_compile_times import compile_floor, record_compile
from .auto_options import AutoOptions
from .executables import STATS
from .session import AUTO

MAX_ROUNDS = 20
WARMUP_RUNS = 2  # untimed runs of each candidate after the check run, before timing
PRUNE = 3.0  # after a round, candidates slower than this × the fastest stop being timed
# In every disk key of a pick: a pick stored under older rules is a miss. 2: the only candidate
# compiled within the budget is checked against the reference too (before, it was kept unchecked).
PICK_RULES = 2

# Choices made in this process: choice key -> backend name; also a graph family's first pick
# (frontend/auto_carry.py: family key -> backend name).
_CHOICES: dict[str, str] = {}


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


# -- which backends race ----------------------------------------------------------------


def candidate_names(device: str, auto: AutoOptions | None, registered: list[str], never: dict) -> list[str]:
    """The backends to race on ``device``: ``auto.candidates`` if given, else the ``registered``
    ones but those ``never`` (NEVER_AUTO, passed in so that each frontend's module holds it) lists."""
    auto = auto or AutoOptions()
    if auto.candidates is not None:
        return list(auto.candidates)
    return [n for n in registered if device not in never.get(n, ((), ""))[0]]


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


def admitted(record: AutoChoice, name: str, backend, graph, device: str, matrix_path: str | None) -> bool:
    """Whether ``backend`` (which claims ``graph``) races: conformant for the graph's ops and dtypes
    (:func:`conformance_blockers`); recorded in ``record`` either way, with its flush-to-zero notes."""
    blockers = conformance_blockers(graph, backend, device, matrix_path)
    if blockers:
        record.candidates.append(Candidate(name, "dropped", "not conformant: " + "; ".join(blockers[:3])))
        return False
    record.notes += flush_notes(backend, device, graph)
    record.candidates.append(Candidate(name, "timed"))
    return True


def flush_notes(backend, device: str, graph) -> list[str]:
    dtypes = {v.type.dtype for v in graph.inputs} | {node_dtype(n) for n in graph.nodes}
    return [f"{backend.name} flushes subnormals to zero in {d.dtype.short} on {device} (recorded; excused by "
            f"conformance)" for d in backend.deviations
            if d.flush_to_zero and d.dtype in dtypes and d.device in (None, device)]


def expected_compile_s(name: str, backend, options, nodes: int) -> tuple[float | None, str]:
    """What compiling a graph of ``nodes`` IR nodes on ``name`` is expected to cost, and how it is
    known: ``"measured"`` (the longest compile measured on a graph no larger), ``"prior"`` (the
    backend's declared :class:`~parity.backends.base.CompilePrior`), or ``""`` (None: unknown)."""
    floor = compile_floor(name, options, nodes)
    if floor is not None:
        return floor, "measured"
    prior = compile_prior(backend, options.device)
    return (prior.seconds(nodes), "prior") if prior is not None else (None, "")


def compile_within_budget(ready: list, options, record: AutoChoice, budget_s: float,
                          build: Callable) -> tuple[dict, float, bool]:
    """{name: runnable} of the candidates compiled within ``budget_s``, the seconds spent,
    and whether a candidate was left out because the budget was spent.

    ``ready`` holds ``(name, backend, translation, graph)`` (``translation``: the frontend's
    own, or None); ``build(backend, translation, graph)`` compiles one through the executable
    cache and returns what the frontend calls; ``options`` has ``device`` and ``cache_dir``."""
    expected = {name: expected_compile_s(name, backend, options, len(graph.nodes))
                for name, backend, _, graph in ready}
    compiled, spent, exhausted = {}, 0.0, False
    # cheapest expected first (unknown costs count as 0); stable: registry order on ties
    for name, backend, translation, graph in sorted(ready, key=lambda entry: expected[entry[0]][0] or 0.0):
        seconds, source = expected[name]
        left = max(budget_s - spent, 0.0)
        if compiled and spent >= budget_s:
            drop(record, name, f"not raced: auto's budget (AutoOptions(budget_s={budget_s:g})) was spent compiling "
                                f"{', '.join(compiled)} ({spent:.2f} s)")
            exhausted = True
            continue
        if compiled and seconds is not None and seconds > left:
            known = (f"it took {seconds:.2f} s to compile a graph no larger than this one" if source == "measured"
                     else f"its declared cold-compile prior is {seconds:.2f} s for a graph of {len(graph.nodes)} "
                          f"nodes (no compile of it measured yet)")
            drop(record, name, f"not raced: {known}, more than the {left:.2f} s left of auto's budget "
                                f"(AutoOptions(budget_s={budget_s:g}))")
            continue
        before, t0 = STATS["backend_compiles"], time.perf_counter()
        runnable = build(backend, translation, graph)
        took = time.perf_counter() - t0
        spent += took
        if STATS["backend_compiles"] > before:  # a real compile, not one from a cache
            record_compile(name, options, len(graph.nodes), took)
        compiled[name] = runnable
    return compiled, spent, exhausted


def drop(record: AutoChoice, name: str, why: str) -> None:
    set_status(record, name, "dropped", why)


def set_status(record: AutoChoice, name: str, status: str, why: str) -> None:
    for c in record.candidates:
        if c.name == name:
            c.status, c.why = status, why


def choose(record: AutoChoice, name: str, source: str) -> None:
    record.choice, record.source = name, source
    for c in record.candidates:
        if c.name == name:
            c.status = "chosen"


# -- the choice's cache -------------------------------------------------------------------


def choice_key(ready: list, device: str, precision, budget_s: float, installed: list) -> str:
    """The race's identity: device, precision tier (a pick at one tier is no pick at another),
    each candidate's graph, the budget (a pick that left a candidate out for its cost is
    no pick under a budget that lets it race: AutoOptions(budget_s=60) then races Inductor),
    and every backend considered with its installed version (frontend/auto_installed.py: a
    pick made while a plugin since uninstalled or upgraded was installed is raced again)."""
    text = json.dumps([device, precision.value, sorted((name, graph.content_hash()) for name, _, _, graph in ready),
                       budget_s, installed])
    return hashlib.sha256(text.encode()).hexdigest()


def _disk_key(key: str, options, ready: list, machine: dict) -> dict:
    versions = {}
    for name, *_ in ready:
        versions.update(stack_versions(name))
    disk_key = cache_key(key, AUTO, options.device, [], versions, precision=options.precision)
    disk_key["machine"] = machine  # a pick is a timing: it holds for the machine that timed it
    disk_key["rules"] = PICK_RULES
    return disk_key


def known_choice(key: str, options, ready: list, machine: dict) -> tuple[str | None, str]:
    """The pick made for ``key`` before, in this process or (``options.cache_dir``) on disk by a
    race on ``machine`` (what its timings depend on), and where it was found."""
    if key in _CHOICES:
        return _CHOICES[key], "cached in this process"
    if options.cache_dir:
        payload = DiskCache(options.cache_dir).load(_disk_key(key, options, ready, machine))
        if payload:
            return payload.decode(), "cached on disk"
    return None, ""


def remember(key: str, name: str, options, ready: list, machine: dict, on_disk: bool = True) -> None:
    _CHOICES[key] = name
    if options.cache_dir and on_disk:
        DiskCache(options.cache_dir).store(_disk_key(key, options, ready, machine), name.encode())


# -- warming up and timing -------------------------------------------------------------------


def warm_up(runs: dict[str, Callable[[], object]]) -> None:
    """Untimed runs, so that no candidate is timed on its slow first runs (XLA's are)."""
    if len(runs) < 2:
        return
    for _ in range(WARMUP_RUNS):
        for run in runs.values():
            run()


def time_rounds(runs: dict[str, Callable[[], object]], budget_s: float) -> dict[str, list[float]]:
    """{name: seconds of each timed run}: interleaved rounds (load changes hit every candidate
    alike) until ``budget_s`` is spent (at least one round, at most :data:`MAX_ROUNDS`), a
    candidate whose best run is slower than :data:`PRUNE` × the leader's leaving the race."""
    times: dict[str, list[float]] = {n: [] for n in runs}
    if len(runs) < 2:
        return times
    started, rounds = time.perf_counter(), 0
    racing = list(runs)
    while rounds < MAX_ROUNDS and (rounds == 0 or time.perf_counter() - started < budget_s) and len(racing) > 1:
        for name in racing:
            t0 = time.perf_counter()
            runs[name]()
            times[name].append(time.perf_counter() - t0)
        rounds += 1
        best = min(min(times[n]) for n in racing)
        racing = [n for n in racing if min(times[n]) <= PRUNE * best]
    return times


def fastest(times: dict[str, list[float]]) -> str:
    """The name with the lowest median time (an untimed one, the only candidate, counts as 0)."""
    return min(times, key=lambda n: statistics.median(times[n]) if times[n] else 0.0)
