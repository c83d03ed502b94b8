"""Run the mutants: each fault class on a sample of the cells it applies to, per target.

The sample is per fault class and target: the applicable cells (op × dtype, ``--quick``
cases, fuzzer regressions left out: they are graphs, not the op) the backend runs, one cell
per op in a seeded order, judged in that order until ``sample`` mutants had an effect (0:
every cell): a cell where the fault changes nothing does not use up the class's sample. A
mutant is

- *killed*: its cell fails (an unexpected failure) and the backend's own run does not;
- *survived*: the fault changed outputs and every case still passes or is a declared deviation;
- *no effect*: the fault changed no output of any case (nothing could kill it);
- *baseline fails*: the backend's own run of the cell fails already (no verdict).

Example::

    >>> result = run_mutants(["reference"], ops="^(neg|exp)$", faults=["zeros", "exception"], sample=1)
    >>> sorted((m.fault, m.status) for m in result.mutants)
    [('exception', 'killed'), ('zeros', 'killed')]
"""

from __future__ import annotations

import time
import zlib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ...backends.base import Backend
from ...ir.dtypes import DType
from .. import regressions, selection
from ..execute import NotClaimed, Prepared, lower_for, run_bundle
from ..results import FAIL
from ..verdicts import cells_for
from .faults import FAULTS, Facts
from .planted import Planted

KILLED, SURVIVED, NO_EFFECT, BASELINE_FAILS = "killed", "survived", "no effect", "baseline fails"
DEFAULT_SAMPLE = 8


@dataclass
class Mutant:
    fault: str
    backend: str
    device: str
    op: str
    dtype: str
    status: str
    cases: list[str] = field(default_factory=list)
    killed_by: str = ""  # the first case that failed
    message: str = ""  # why it was killed, or the worst error of a survivor


@dataclass
class MutantRun:
    mutants: list[Mutant]
    targets: list[str]  # "backend/device"
    sample: int
    seed: int
    elapsed_s: float

    @property
    def survivors(self) -> list[Mutant]:
        return [m for m in self.mutants if m.status == SURVIVED]

    @property
    def exit_code(self) -> int:
        return 1 if self.survivors else 0

    def kill_rates(self) -> dict[str, dict[str, tuple[int, int]]]:
        """fault → target → (killed, killed + survived)."""
        out: dict[str, dict[str, tuple[int, int]]] = {f: {} for f in FAULTS}
        for m in self.mutants:
            if m.status in (KILLED, SURVIVED):
                k, n = out[m.fault].get(f"{m.backend}/{m.device}", (0, 0))
                out[m.fault][f"{m.backend}/{m.device}"] = (k + (m.status == KILLED), n + 1)
        return out

    def to_json(self) -> dict:
        return {"targets": self.targets, "sample": self.sample, "seed": self.seed, "elapsed_s": self.elapsed_s,
                "kill_rates": {f: {t: {"killed": k, "mutants": n} for t, (k, n) in row.items()}
                               for f, row in self.kill_rates().items()},
                "mutants": [vars(m) for m in self.mutants]}


def run_mutants(backends: Sequence[str | Backend], *, devices: Sequence[str] | None = None, ops: str | None = None,
                dtypes: Iterable[DType] | None = None, faults: Sequence[str] | None = None,
                sample: int = DEFAULT_SAMPLE, seed: int = 0, progress=None) -> MutantRun:
    """Plant each fault class of ``faults`` (default: all) in a seeded sample of the cells it
    applies to, on every available target, and judge each mutant (module docstring)."""
    start = time.perf_counter()
    unknown = sorted(set(faults or ()) - set(FAULTS))
    if unknown:
        raise ValueError(f"unknown fault class {', '.join(unknown)}; the classes are {', '.join(FAULTS)}")
    chosen = [FAULTS[f] for f in (faults or FAULTS)]
    cases = [c for c in selection.select_cases(ops=ops, dtypes=dtypes, quick=True)
             if regressions.REGRESSION not in c.tags]
    groups: dict[tuple[str, str], list] = defaultdict(list)
    for c in cases:
        groups[(c.op, c.dtype.short)].append(c)
    prepared: dict[tuple[str, str], list[Prepared]] = {}

    def bundle(key):
        if key not in prepared:
            prepared[key] = [Prepared(c) for c in groups[key]]
        return prepared[key]

    targets = [t for t in selection.resolve_targets(backends, devices) if t.available]
    mutants: list[Mutant] = []
    for t in targets:
        claims = t.instance.claims()
        runs, facts, baseline = _runnable(t, groups, bundle, claims), {}, {}
        plan = []
        for fault in chosen:
            applicable = []
            for key in runs:
                if key not in facts:
                    p = bundle(key)[0]
                    node = next((n for n in p.graph.nodes if n.op == key[0]), None)
                    facts[key] = Facts.of(key[0], p.case.dtype, p.graph.output_types[0].dtype,
                                          node.attrs if node is not None else None)
                if fault.rule.why_not(facts[key]) is None:
                    applicable.append(key)
            plan.append((fault, _sample(applicable, sample, seed, fault.name)))
        done, total = 0, sum(min(len(keys), sample) if sample else len(keys) for _, keys in plan)
        for fault, keys in plan:
            effective = 0
            for key in keys:
                if sample and effective == sample:
                    break
                if progress:
                    progress(done, total, f"{t.backend}/{t.device} {fault.name} {key[0]}[{key[1]}]")
                if key not in baseline:
                    baseline[key] = _cell(t, key, run_bundle(t.instance, t.device, bundle(key), claims))
                mutant = _judge(t, fault, key, bundle(key), claims, baseline[key])
                mutants.append(mutant)
                effective += mutant.status != NO_EFFECT
                done += 1
        if progress:
            progress(total, total, "")
    return MutantRun(mutants, [f"{t.backend}/{t.device}" for t in targets], sample, seed,
                     time.perf_counter() - start)


def _runnable(target, groups, bundle, claims) -> list[tuple[str, str]]:
    """The cells the backend runs (every case graph lowers to what it claims)."""
    out = []
    for key in groups:
        try:
            lower_for(target.instance, bundle(key)[0].graph, claims)
        except NotClaimed:
            continue
        out.append(key)
    return out


def _sample(keys: list[tuple[str, str]], sample: int, seed: int, name: str) -> list[tuple[str, str]]:
    """Every key (``sample`` 0), or one cell per op in a seeded order: the run judges them in
    that order until ``sample`` mutants had an effect, so a cell where the fault changes nothing
    (no NaN in its cases for nan_to_zero) does not leave the class untested."""
    if not sample:
        return keys
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    chosen, ops = [], set()
    for i in rng.permutation(len(keys)):
        if keys[i][0] not in ops:
            chosen.append(keys[i])
            ops.add(keys[i][0])
    return chosen


def _cell(target, key, results):
    return cells_for([key], [target], results)[0]


def _judge(target, fault, key, bundle, claims, base) -> Mutant:
    mutant = Mutant(fault.name, target.backend, target.device, *key, status="",
                    cases=[p.case.id for p in bundle])
    if base.status == FAIL:
        mutant.status, mutant.message = BASELINE_FAILS, base.message
        return mutant
    planted = Planted(target.instance, fault)
    results = run_bundle(planted, target.device, bundle, claims)
    cell = _cell(target, key, results)
    if planted.broken:
        raise RuntimeError(f"fault {fault.name} could not be planted on {key[0]}[{key[1]}]: {planted.broken[0]}")
    if not planted.changed:
        mutant.status = NO_EFFECT
    elif cell.status == FAIL:
        failing = next(r for r in results if r.status not in ("pass", "unsupported", "declined"))
        mutant.status, mutant.killed_by = KILLED, failing.case
        mutant.message = failing.message or f"max {failing.max_ulp} ulp ({failing.max_ratio:.3g} × the bound)"
    else:
        mutant.status = SURVIVED
        worst = max(results, key=lambda r: r.max_ratio)
        mutant.message = (f"{cell.status}: worst {worst.case}, max {worst.max_ulp} ulp, "
                          f"{worst.max_ratio:.3g} × the bound")
    return mutant


def table(result: MutantRun) -> list[list[str]]:
    """Rows of the kill-rate table: fault class, then 'killed/mutants' per target."""
    rates = result.kill_rates()
    rows = []
    for name, row in rates.items():
        cells = []
        for t in result.targets:
            k, n = row.get(t, (0, 0))
            cells.append(f"{k}/{n}" if n else "–")
        rows.append([name, *cells])
    return rows


def to_text(result: MutantRun) -> str:
    """The kill-rate table and every survivor, as plain text."""
    width = max(len(f) for f in FAULTS)
    lines = [f"{'fault class':{width}}  " + "  ".join(f"{t:>16}" for t in result.targets)]
    for name, *cells in table(result):
        lines.append(f"{name:{width}}  " + "  ".join(f"{c:>16}" for c in cells))
    killed = sum(m.status == KILLED for m in result.mutants)
    counted = killed + len(result.survivors)
    lines.append(f"killed {killed} of {counted} mutants" + (f" ({100 * killed / counted:.1f}%)" if counted else "")
                 + f"; sample {result.sample or 'all'} per class, seed {result.seed}, {result.elapsed_s:.0f} s")
    for m in result.survivors:
        lines.append(f"SURVIVED {m.fault} on {m.backend}/{m.device}: {m.op}[{m.dtype}] "
                     f"cases {', '.join(m.cases)}: {m.message}")
    other = defaultdict(list)
    for m in result.mutants:
        if m.status in (NO_EFFECT, BASELINE_FAILS):
            other[m.status].append(f"{m.fault}:{m.op}[{m.dtype}]@{m.backend}")
    for status, names in other.items():
        lines.append(f"{status} ({len(names)}): {' '.join(names)}")
    return "\n".join(lines)
