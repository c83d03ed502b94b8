"""The controller: a run's cases scheduled on N workers, results collected, crashes contained.

The unit of work is what the serial runner does in one step: one op × dtype's cases,
bundled into one compilation (or a batch of such bundles, for a target that compiles
several as one graph: :func:`.runner.batches`), on each (backend, device) target in turn
(:class:`.worker.Task`). A worker answers per target, so when it dies the controller
knows which target it was on. That target's cases become cells with status *crashed*
(the worker died: a signal, ``os._exit``, a MemoryError under ``--worker-memory``) or
*timed out* (no answer within its time limit: ``case_timeout`` seconds, or by default a
limit sized from the bundle's cases, :mod:`.isolation`; the worker is killed), naming
the case, the signal or limit, and the worker's last stderr lines. A crashed batch runs
again bundle by bundle, each as an unbatched run runs it; each case of a crashed bundle
is retried once, alone, on a fresh worker; a timed-out bundle is bisected instead
(each half under its own cases' limit, a half that hangs halved again), so finding the
hanging case waits out the halves on its path, not every case's limit. A case that
crashes or hangs again alone is *reproducible*; a bundle whose cases all pass alone (or
in halves) crashed *flakily* and stays crashed (a crash is never a pass). A fresh worker
replaces every dead one, and the run completes.

Results come back as the same :class:`~.results.CaseResult` objects the serial runner
makes and are put back in the serial order, so the cells are the same cell for cell.
With a journal (:mod:`.journal`) every final result is written as it arrives, and a
resumed run skips the cases the journal holds.

Example::

    >>> from parity.conformance.runner import run
    >>> serial = run(["reference"], ops="^neg$")
    >>> parallel = run(["reference"], ops="^neg$", workers=WorkerOptions(workers=2))
    >>> [c.status for c in parallel.cells] == [c.status for c in serial.cells]
    True
"""

from __future__ import annotations

import pathlib
import queue
import sys
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from .engine import get_engine
from .isolation import CASE_SECONDS, LOAD_SECONDS, MODEL_SECONDS, time_limit
from .journal import Journal, read_journal
from .results import CRASHED, TIMED_OUT, CaseResult, ProgressFn
from .scheduling import MODEL_KINDS, MODEL_NODES
from .worker import Task, WorkerSpec

Key = tuple[str, str, str]  # (case id, backend, device)


class WorkerRunError(RuntimeError):
    """A run on workers that cannot go on: a worker that dies before it is ready (a plugin
    that does not import there, a memory cap too small to start in)."""


@dataclass(frozen=True)
class WorkerOptions:
    """How a run uses workers (``parity conform --workers N ...``)."""

    workers: int = 1
    engine: str = "local"
    # seconds for one op × dtype bundle on one target; None: sized from its cases (.isolation); 0: no limit
    case_timeout: float | None = None
    memory_mb: int | None = None  # each worker's address-space cap
    plugins: tuple[str, ...] = ()
    journal: str | None = None
    resume: bool = False
    # (host, backends it offers): each host gets ``workers`` workers, and a target runs only
    # on the workers of the first host that offers its backend (empty: one host, every backend)
    hosts: tuple[tuple[str, tuple[str, ...]], ...] = ()
    monarch_job: str | None = None  # a Monarch job file (job.dump): its host meshes are the hosts
    timeout_scale: float = 1.0  # multiplies the sized default limits (tests make them short)


@dataclass
class _Retry:
    """A bundle that killed its worker on one target, its cases retried one by one."""

    case_ids: tuple
    target: tuple[str, str]
    status: str
    what: str  # how the worker ended
    stderr: list[str]
    waiting: set = field(default_factory=set)
    results: dict = field(default_factory=dict)  # case id → CaseResult of the retry
    tails: dict = field(default_factory=dict)  # case id → the last stderr lines of its second crash
    bisected: bool = False  # a timed-out bundle, searched in halves (not each case alone)


@dataclass
class _Unit:
    case_ids: tuple
    targets: list[tuple[str, str]]
    retry: _Retry | None = None
    kind: str = "cases"
    seed: int = 0
    host: str = ""
    halved: bool = False  # half of a batch cut at the end of the run (never cut again)


@dataclass(frozen=True)
class Group:
    """What the serial runner runs as one step: cases compiled together (one op × dtype of the
    op database, one zoo row, a chunk of fuzzer graphs), on each of ``targets`` in turn.
    ``kind``: "cases" (op database), "zoo" (a model or random row, :func:`.zoo.row_results`),
    "jax" (one primitive's cases of the JAX frontend's rows, on ``jax/cpu``),
    "hf" / "hf-anchor" (a Hugging Face architecture, :mod:`.hf.matrix`) or "fuzz" (graphs
    ``s{seed}-{index}`` of the fuzzer's stream)."""

    case_ids: tuple
    targets: tuple[tuple[str, str], ...]
    kind: str = "cases"
    # per case id, the seconds it may take under the default limit (.isolation.case_seconds);
    # empty: the kind's default (a whole-model case MODEL_SECONDS, any other CASE_SECONDS)
    seconds: tuple[float, ...] = ()
    # the work a compiler has in it, in expanded IR nodes (.scheduling.batch_nodes); 0: none known
    # (a whole-model group then counts MODEL_NODES per case). Workers take the largest first.
    nodes: int = 0

    def work(self) -> int:
        if self.kind in MODEL_KINDS:
            return self.nodes or MODEL_NODES * len(self.case_ids)
        return self.nodes

    def case_seconds(self) -> dict:
        default = MODEL_SECONDS if self.kind in MODEL_KINDS else CASE_SECONDS
        return dict(zip(self.case_ids, self.seconds or [default] * len(self.case_ids)))


def run_groups(groups: Sequence[Group], options: WorkerOptions, spec: WorkerSpec, header: dict,
               progress: ProgressFn | None = None, *, seed: int = 0) -> list[CaseResult]:
    """Every group's cases on its targets, on workers; results in the serial runner's order
    (group by group, target by target). ``seed``: the fuzzer stream of "fuzz" groups."""
    done: dict[Key, CaseResult] = {}
    if options.resume and options.journal:
        if not pathlib.Path(options.journal).exists():
            raise WorkerRunError(f"--resume: there is no journal at {options.journal}; run without --resume to "
                                 "start one")
        done = {(r.case, r.backend, r.device): r for r in read_journal(options.journal, header)}
    units: list[_Unit] = []
    # the largest groups first (.scheduling): a stable sort, so groups of equal work keep their order
    for group in sorted(groups, key=lambda g: -g.work()):
        ids, targets = group.case_ids, list(group.targets)
        missing = [t for t in targets if any((i, *t) not in done for i in ids)]
        full = [t for t in missing if all((i, *t) not in done for i in ids)]
        if full:
            units.append(_Unit(ids, full, kind=group.kind, seed=seed))
        units += [_Unit(tuple(i for i in ids if (i, *t) not in done), [t], kind=group.kind, seed=seed)
                  for t in missing if t not in full]
    units = _routed(units, options.hosts)
    journal = Journal(options.journal, header, append=options.resume) if options.journal else None
    total = sum(len(u.case_ids) * len(u.targets) for u in units)
    seconds = {i: s for group in groups for i, s in group.case_seconds().items()}
    try:
        _Scheduler(options, spec, journal, done, total, progress, seconds).run(units)
    finally:
        if journal is not None:
            journal.close()
    return [done[(i, *t)] for group in groups for t in group.targets for i in group.case_ids]


def _routed(units: list[_Unit], hosts) -> list[_Unit]:
    """Each unit split by the host that runs each of its targets (the first that offers its backend)."""
    if not hosts:
        return units
    out = []
    for u in units:
        by_host: dict[str, list] = {}
        for t in u.targets:
            # torch.compile's anchors come with torch, which every host has, and the JAX frontend's rows
            # are no backend's: the first host runs them
            host = hosts[0][0] if u.kind in ("hf-anchor", "jax") else next(
                (name for name, offered in hosts if t[0] in offered), None)
            if host is None:
                raise ValueError(f"no host offers backend {t[0]!r} (--hosts {_hosts_text(hosts)}): add it to a "
                                 "host, or leave it out with --backend")
            by_host.setdefault(host, []).append(t)
        out += [_Unit(u.case_ids, ts, u.retry, u.kind, u.seed, host) for host, ts in by_host.items()]
    return out


def _hosts_text(hosts) -> str:
    return ";".join(f"{name}={','.join(offered)}" for name, offered in hosts)


def parse_hosts(text: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``"a=reference,numpy;b=onnx"`` → ``(("a", ("reference", "numpy")), ("b", ("onnx",)))``."""
    hosts = []
    for part in filter(None, (p.strip() for p in text.split(";"))):
        name, sep, backends = part.partition("=")
        offered = tuple(b.strip() for b in backends.split(",") if b.strip())
        if not sep or not name.strip() or not offered:
            raise ValueError(f"--hosts {text!r}: expected 'HOST=BACKEND,BACKEND;HOST=BACKEND', e.g. "
                             "'cpu-box=reference,onnx;gpu-box=xla'")
        hosts.append((name.strip(), offered))
    return tuple(hosts)


class _Scheduler:
    def __init__(self, options: WorkerOptions, spec: WorkerSpec, journal: Journal | None, done: dict,
                 total: int, progress: ProgressFn | None, seconds: dict):
        self.options, self.spec, self.journal, self.done = options, spec, journal, done
        self.seconds = seconds  # case id → its share of the default time limit
        self.total, self.finished, self.progress = total, 0, progress
        self.engine = get_engine(options.engine, tuple(name for name, _ in options.hosts), options.monarch_job)
        self.events: queue.Queue = queue.Queue()
        self.pending: deque[_Unit] = deque()
        # worker → [unit, index of the target it is on, deadline, timed out, the limit in seconds,
        #          loading: the worker has not said yet that it loaded the target's backend]
        self.busy: dict = {}
        self.idle: list = []
        self.starting: set = set()
        self.host_of: dict = {}  # worker → the host it runs on ("" without --hosts)
        self.slot_of: dict = {}  # worker → its slice of the CPUs (worker.cpu_slice)
        self.slots = 0
        self.next_id = 0

    def run(self, units: list[_Unit]) -> None:
        self.pending.extend(units)
        hosts = list(dict.fromkeys(u.host for u in units))
        # Workers split the CPUs of the machine they share (worker.pin_to_slice): all of them
        # on this machine (local workers, Monarch's LocalJob), each host's own on a real job.
        together = self.engine.shares_one_machine
        self.slots = self.options.workers * (len(hosts) if together else 1)
        for h, host in enumerate(hosts):
            for k in range(min(self.options.workers, sum(u.host == host for u in units))):
                self._spawn(host, (h * self.options.workers if together else 0) + k)
        try:
            while self.pending or self.busy:
                self._assign()
                try:
                    worker, message = self.events.get(timeout=self._wait())
                except queue.Empty:
                    self._expire()
                    continue
                self._handle(worker, message)
        finally:
            self._end_workers()

    def _end_workers(self) -> None:
        """Every worker killed at once, the idle ones too: the run has every result it needs (a
        worker writes its compilers' caches as it compiles, never at exit), and an idle worker's
        interpreter took 1.6 s to exit with the runtimes loaded, at the end of every run."""
        enders = [threading.Thread(target=w.kill) for w in list(self.idle) + list(self.busy) + list(self.starting)]
        for t in enders:
            t.start()
        for t in enders:
            t.join()

    def _spawn(self, host: str, slot: int) -> None:
        offered = dict(self.options.hosts).get(host, ())
        spec = replace(self.spec, host=host, backends=offered, slot=slot, slots=self.slots)
        worker = self.engine.spawn(spec, self.events)
        self.host_of[worker], self.slot_of[worker] = host, slot
        self.starting.add(worker)

    def _respawn(self, dead) -> None:
        """A fresh worker in the dead one's place: its host and its CPUs."""
        self._spawn(self.host_of[dead], self.slot_of[dead])

    def _assign(self) -> None:
        for worker in list(self.idle):
            unit = next((u for u in self.pending if u.host == self.host_of[worker]), None)
            if unit is None:
                continue
            self.idle.remove(worker)
            self.pending.remove(unit)
            if len(unit.targets) > 1 and self._whole_units_left() < 2 * (len(self.busy) + len(self.idle) + 1):
                # The end of the run: one target at a time, so that no worker sits idle while
                # another works through a whole unit's targets (the run's tail was one unit).
                self.pending.extendleft(_Unit(unit.case_ids, [t], unit.retry, unit.kind, unit.seed, unit.host)
                                        for t in reversed(unit.targets[1:]))
                unit = _Unit(unit.case_ids, unit.targets[:1], unit.retry, unit.kind, unit.seed, unit.host)
            elif self._last_batch(unit):
                # The very end: the last batch on one target is cut in two halves of its bundles
                # (one more compilation), so that a worker that frees up shares it.
                bundles = _bundles(unit.case_ids)
                halves = [tuple(i for b in part for i in b) for part in (bundles[:len(bundles) // 2],
                                                                          bundles[len(bundles) // 2:])]
                self.pending.appendleft(_Unit(halves[1], unit.targets, None, unit.kind, unit.seed, unit.host,
                                              halved=True))
                unit = _Unit(halves[0], unit.targets, None, unit.kind, unit.seed, unit.host, halved=True)
            self.next_id += 1
            worker.send(Task(self.next_id, unit.case_ids, tuple(unit.targets), unit.kind, unit.seed))
            self.busy[worker] = [unit, 0, *self._loading()]

    def _last_batch(self, unit: _Unit) -> bool:
        """``unit`` is a batch of several bundles on one target, not yet halved nor retried, and no
        other batch is pending for the other workers."""
        return (unit.kind == "cases" and len(unit.targets) == 1 and unit.retry is None and not unit.halved
                and len(_bundles(unit.case_ids)) > 1
                and sum(u.kind == "cases" for u in self.pending) < len(self.busy) + len(self.idle) + len(self.starting))

    def _whole_units_left(self) -> int:
        """Pending units on more than one target: the single-target units after them (the JAX
        frontend's rows, a hundred or so of milliseconds each) do not keep the end of the run away."""
        return sum(len(u.targets) > 1 for u in self.pending)

    def _loading(self) -> list:
        """(deadline, timed out, limit, loading) while a worker loads a target's backend."""
        limit = self.options.timeout_scale * LOAD_SECONDS
        return [self._deadline(limit), False, limit, True]

    def _limit(self, unit: _Unit, backend: str) -> float | None:
        """Seconds ``unit`` may take on ``backend`` once it is loaded (.isolation.time_limit)."""
        return time_limit(backend, [self.seconds.get(i, CASE_SECONDS) for i in unit.case_ids],
                          self.options.case_timeout, self.options.timeout_scale)

    @staticmethod
    def _deadline(limit: float | None) -> float | None:
        return None if limit is None else time.monotonic() + limit

    def _wait(self) -> float | None:
        deadlines = [b[2] for b in self.busy.values() if b[2] is not None and not b[3]]
        return None if not deadlines else max(0.0, min(deadlines) - time.monotonic())

    def _expire(self) -> None:
        now = time.monotonic()
        for worker, b in self.busy.items():
            if b[2] is not None and not b[3] and b[2] <= now:
                b[3] = True  # its exit event reports the timeout
                worker.kill()

    def _handle(self, worker, message) -> None:
        kind = message[0]
        if kind == "ready":
            self.starting.discard(worker)
            self.idle.append(worker)
        elif kind == "result":
            b = self.busy[worker]
            unit, index = b[0], message[2]
            self._record(unit, message[3])
            b[1], b[2:] = index + 1, self._loading()  # the next target's backend
        elif kind == "loaded":  # the target's backend is loaded: its cases' limit starts
            b = self.busy[worker]
            b[4], b[5] = self._limit(b[0], b[0].targets[message[2]][0]), False
            b[2] = self._deadline(b[4])
        elif kind == "done":
            del self.busy[worker]
            self.idle.append(worker)
        elif kind == "exit":
            self._ended(worker, message[1])

    def _ended(self, worker, status: int) -> None:
        if worker in self.starting:
            self.starting.discard(worker)
            tail = "\n".join(worker.stderr_tail())
            raise WorkerRunError(f"a conformance worker failed to start: it {worker.describe_exit(status)}. "
                                 f"Its last stderr lines:\n{tail}")
        if worker in self.idle:  # died between tasks: nothing lost, but the run needs its place
            self.idle.remove(worker)
            self._respawn(worker)
            return
        if worker not in self.busy:
            return  # killed at the end
        unit, index, _, timed_out, limit, loading = self.busy.pop(worker)
        timed_out = timed_out and not worker.ended_by_itself(status)  # a crash reported after the timeout's kill
        what = (self._timeout_words(limit, loading) if timed_out else f"{worker.describe_exit(status)}")
        state = TIMED_OUT if timed_out else CRASHED
        self._respawn(worker)  # a fresh worker replaces the dead one
        if index >= len(unit.targets):  # it died after its last answer: nothing lost
            return
        target, rest = unit.targets[index], unit.targets[index + 1:]
        if rest:
            self.pending.appendleft(_Unit(unit.case_ids, rest, unit.retry, unit.kind, unit.seed, unit.host))
        stderr = worker.stderr_tail()
        ids = tuple(i for i in unit.case_ids if (unit.retry is None or i in unit.retry.waiting))  # not yet answered
        if timed_out and loading:  # the backend itself did not load: no case is to blame, none is retried
            dead = [_dead(i, target, state, what) for i in ids]
            if unit.retry is not None:
                self._retried_all(unit.retry, dead)
                return
            for r in dead:
                r.message = f"{r.case} on {target[0]}/{target[1]}: the worker {what}"
            self._final(dead)
            return
        bundles = _bundles(ids) if unit.kind == "cases" else [ids]
        if state == CRASHED and unit.retry is None and len(bundles) > 1:
            # a batch of bundles (.runner.batches) crashed: each bundle runs again on its own, as an
            # unbatched run would run it, so a crash is charged to a bundle, never to its batch
            self.pending.extend(_Unit(b, [target], None, unit.kind, unit.seed, unit.host) for b in bundles)
            return
        retry = unit.retry or _Retry(unit.case_ids, target, state, what, stderr, set(unit.case_ids),
                                     bisected=state == TIMED_OUT)
        if len(ids) == 1 and unit.retry is not None:  # a case alone, on its second try
            retry.tails[ids[0]] = stderr
            self._retried(retry, ids[0], _dead(ids[0], target, state, what))
        elif state == TIMED_OUT and len(ids) > 1:  # halves, each under its own cases' limit
            half = len(ids) // 2
            self.pending.extend(_Unit(part, [target], retry, unit.kind, unit.seed, unit.host)
                                for part in (ids[:half], ids[half:]))
        else:  # each case alone
            self.pending.extend(_Unit((i,), [target], retry, unit.kind, unit.seed, unit.host) for i in ids)

    def _timeout_words(self, limit: float | None, loading: bool) -> str:
        if loading:
            return (f"did not finish loading the backend within {limit:.0f} s (importing its runtime) and was "
                    "killed")
        if self.options.case_timeout:
            return f"ran past --case-timeout {self.options.case_timeout:g} s and was killed"
        return (f"ran past its time limit of {limit:.0f} s and was killed (the default limit, sized from the "
                "bundle's cases: docs/conformance.md, 'Workers'; --case-timeout SECONDS sets another)")

    def _record(self, unit: _Unit, results: list[CaseResult]) -> None:
        if unit.retry is not None:
            self._retried_all(unit.retry, results)
            return
        self._final(results)

    def _retried_all(self, retry: _Retry, results: list[CaseResult]) -> None:
        for r in results:
            self._retried(retry, r.case, r)

    def _retried(self, retry: _Retry, case_id, result: CaseResult) -> None:
        retry.results[case_id] = result
        retry.waiting.discard(case_id)
        if retry.waiting:
            return
        again = [r for r in retry.results.values() if r.status in (CRASHED, TIMED_OUT)]
        out = []
        for i in retry.case_ids:
            r = retry.results[i]
            if r.status in (CRASHED, TIMED_OUT):
                r.message = (f"{i} on {r.backend}/{r.device}: reproducible — the worker {r.message}, and again "
                             f"when the case ran alone on a fresh worker. Last stderr lines:\n"
                             + "\n".join(retry.tails.get(i, ())))
            elif not again:  # nothing crashed alone: the bundle's crash was flaky, and a crash is never a pass
                lines = "\n".join(retry.stderr)
                how = "the bundle's halves then ran" if retry.bisected else "each case alone then ran"
                r = CaseResult(r.case, r.op, r.dtype, r.backend, r.device, retry.status, r.path,
                               message=(f"{i} on {r.backend}/{r.device}: flaky — the worker {retry.what} while "
                                        f"running the bundle {', '.join(map(str, retry.case_ids))}; {how} on "
                                        f"a fresh worker without crashing. Last stderr lines:\n{lines}"))
            out.append(r)
        self._final(out)

    def _final(self, results: list[CaseResult]) -> None:
        for r in results:
            self.done[(r.case, r.backend, r.device)] = r
        if self.journal is not None:
            self.journal.write(results)
        self.finished += len(results)
        if self.progress:
            self.progress(self.finished, self.total, f"{results[0].op}[{results[0].dtype}]" if results else "")


def fuzz_results(options: WorkerOptions):
    """For :func:`parity.conformance.fuzz.run`: its chunks of graphs run on workers."""

    def results_for(seed: int, chunks: list, targets: list) -> dict:
        spec = worker_spec(options.plugins, options.memory_mb, None, (), False)
        header = {"fuzz_seed": seed, "graphs": sum(len(c) for c in chunks), "targets": [list(t) for t in targets]}
        groups = [Group(tuple(c.id for c in chunk), tuple(targets), "fuzz") for chunk in chunks]
        results = run_groups(groups, options, spec, header, seed=seed)
        return {(r.case, r.backend): r for r in results}

    return results_for


def _dead(case_id, target: tuple[str, str], state: str, what: str) -> CaseResult:
    """The result of a case whose worker died (or was killed for time) running it alone."""
    op, dtype = _op_dtype(case_id)
    return CaseResult(str(case_id), op, dtype, target[0], target[1], state, message=what)


def _bundles(case_ids: Sequence) -> list[tuple]:
    """``case_ids`` cut into its op × dtype bundles: runs of consecutive ids of one op and dtype."""
    out: list[list] = []
    for i in case_ids:
        if out and _op_dtype(out[-1][0]) == _op_dtype(i):
            out[-1].append(i)
        else:
            out.append([i])
    return [tuple(b) for b in out]


def _op_dtype(case_id) -> tuple[str, str]:
    """"exp[f32]:zeros" → ("exp", "f32")."""
    text = str(case_id)
    op, _, rest = text.partition("[")
    return op, rest.partition("]")[0]


def worker_spec(plugins: Sequence[str], memory_mb: int | None, ops: str | None, dtypes: Sequence[str],
                quick: bool) -> WorkerSpec:
    """The spec every worker of a run gets: the controller's import path goes with it, so a
    plugin importable here is importable there."""
    return WorkerSpec(tuple(plugins), memory_mb, tuple(p for p in sys.path if p), ops, tuple(dtypes), quick)
