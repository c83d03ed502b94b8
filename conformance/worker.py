"""A conformance worker: one process that runs the tasks a controller sends it.

The controller (:mod:`.controller`) starts workers through an engine (:mod:`.engine`);
each worker loads the same plugins, builds the same case selection from the run's
options (cases are code, so they are named by id, never sent), and answers each task
with the very :class:`~.results.CaseResult` objects the serial runner makes: one message
per target, so a worker that dies part-way through a task still delivers what it
finished. Messages are pickles with a length prefix on the worker's private copy of
stdout; the backends' own prints go to stderr, whose last lines name a crash.

A worker under a memory cap (``WorkerSpec.memory_mb``, ``setrlimit(RLIMIT_AS)``) that
runs out of memory exits with :data:`EXIT_OUT_OF_MEMORY`, so the controller can say which
limit ended it. Run as ``python -m parity.conformance.worker`` (the local engine does).
"""

from __future__ import annotations

import faulthandler
import os
import pickle
import signal
import struct
import sys
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

#: A worker's exit status when a case ran out of memory under the worker's cap.
EXIT_OUT_OF_MEMORY = 3
_HEADER = struct.Struct("!Q")


@dataclass(frozen=True)
class WorkerSpec:
    """What every worker of a run shares: plugins to load, its memory cap, the
    controller's import path, and the selection that names the run's cases."""

    plugins: tuple[str, ...] = ()
    memory_mb: int | None = None
    sys_path: tuple[str, ...] = ()
    ops: str | None = None
    dtypes: tuple[str, ...] = ()
    quick: bool = False
    host: str = ""  # the (simulated) host this worker runs on, and the backends it offers (empty: all)
    backends: tuple[str, ...] = ()
    # This worker's share of its machine's CPUs: the ``slot``-th of ``slots`` equal slices
    # (0 slots: every CPU). See :func:`cpu_slice`.
    slot: int = 0
    slots: int = 0


@dataclass(frozen=True)
class Task:
    """Run ``case_ids`` (one op × dtype's, or several op × dtype bundles, batched as the serial
    runner batches them) on each of ``targets`` in order. ``kind`` "zoo": the cases of one zoo row (conformance/zoo.py);
    "jax": cases of the JAX frontend's rows (conformance/jax_frontend/, the one target ``jax/cpu``);
    "hf" / "hf-anchor": one Hugging Face architecture's stages on parity backends / its
    anchor case on torch.compile anchors (conformance/hf/matrix.py); "fuzz": graphs of
    fuzzer stream ``seed`` (their ids end in ``s{seed}-{index}``)."""

    id: int
    case_ids: tuple
    targets: tuple[tuple[str, str], ...]
    kind: str = "cases"
    seed: int = 0


def write_message(stream, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def read_message(stream):
    """The next message, or None at the end of the stream (a short read: the writer died)."""
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(head)
    data = stream.read(size)
    return pickle.loads(data) if len(data) == size else None


def describe_exit(status: int, memory_mb: int | None) -> str:
    """How a worker ended, in words: the signal, the memory cap, or the exit status."""
    cap = f" (worker memory cap {memory_mb} MiB)" if memory_mb else ""
    if status == EXIT_OUT_OF_MEMORY:
        return f"ran out of memory: MemoryError under --worker-memory {memory_mb} MiB"
    if status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = "an unknown signal"
        return f"was killed by signal {-status} ({name}){cap}"
    return f"exited with status {status}{cap}"


def cpu_slice(cpus: Sequence[int], slot: int, slots: int) -> list[int]:
    """The CPUs of worker ``slot`` when ``slots`` workers share ``cpus``: contiguous, nearly
    equal slices, or one CPU each, round robin, when workers outnumber CPUs.

    Example::

        >>> cpu_slice(range(8), 1, 3), cpu_slice(range(2), 3, 4), cpu_slice(range(4), 0, 0)
        ([2, 3, 4], [1], [0, 1, 2, 3])
    """
    cpus = sorted(cpus)
    if slots <= 0:
        return cpus
    if slots >= len(cpus):
        return [cpus[slot % len(cpus)]]
    return cpus[slot * len(cpus) // slots:(slot + 1) * len(cpus) // slots]


def pin_to_slice(slot: int, slots: int) -> None:
    """Run this process (every thread it has now, and so every one they start) on its slice of
    the CPUs it may use. The runtimes size their thread pools by this mask (onnxruntime's
    pool as parity sizes it, XLA's, OpenMP's), so N workers on C CPUs run C threads, not
    N·C threads on the same cores. A runtime whose results depend on its thread count
    (Inductor's and the Triton interpreter's FFTs, Inductor's pow and scatter, XLA's complex
    division on special values) gives the numbers of a serial run on one such slice
    (docs/conformance.md, "Workers")."""
    if slots <= 0 or not hasattr(os, "sched_setaffinity"):
        return
    mine = cpu_slice(os.sched_getaffinity(0), slot, slots)
    for tid in os.listdir("/proc/self/task") if os.path.isdir("/proc/self/task") else ["0"]:
        try:
            os.sched_setaffinity(int(tid), mine)
        except OSError:  # a thread that ended meanwhile
            pass


def cap_memory(megabytes: int | None) -> None:
    """Limit this process's address space, so a runaway allocation ends it, not the machine."""
    if megabytes:
        import resource

        limit = megabytes * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


class Session:
    """The state a worker keeps between tasks: its case index and the backends' claims."""

    def __init__(self, spec: WorkerSpec):
        from ..ir.dtypes import DType
        from .plugins import load_plugins
        from .selection import select_cases

        self.spec = spec
        load_plugins(spec.plugins)
        chosen = select_cases(ops=spec.ops, dtypes=[DType.from_short(d) for d in spec.dtypes], quick=spec.quick)
        self.cases = {c.id: c for c in chosen}
        self.claims: dict[str, dict] = {}

    def load(self, name: str, kind: str = "cases") -> None:
        """Load the backend of column ``name`` and its claims (importing its runtime), once:
        the controller starts a target's time limit after this ("hf-anchor" targets are
        torch.compile anchors: nothing to load)."""
        from .tiers import column_backend

        if kind != "hf-anchor" and name not in self.claims:
            self._check_offered(name)
            self.claims[name] = column_backend(name).claims()

    def run(self, task: Task, loaded=lambda index: None) -> Iterator[list]:
        """Per target of ``task``, its case results (the serial runner's run_bundle);
        ``loaded(i)`` is called once target ``i``'s backend is loaded, before its cases run."""
        from .execute import Prepared, run_bundle, run_bundles, split_bundles
        from .tiers import column_backend
        from .zoo import row_results

        if task.kind == "jax":
            yield from self._jax_frontend(task, loaded)
            return
        if task.kind in ("hf", "hf-anchor"):
            for i, target in enumerate(task.targets):
                self.load(target[0], task.kind)
                loaded(i)
                yield from self._hugging_face(replace(task, targets=(target,)))
            return
        bundle = []
        if task.kind == "fuzz":
            from .fuzz.generate import fuzz_case, generate

            graphs = [generate(task.seed, int(i.rpartition("-")[2])) for i in task.case_ids]  # ids end "s{seed}-{i}"
            bundle = [Prepared(fuzz_case(fg), fg.arrays, fg.graph, oracle=[]) for fg in graphs]
        elif task.kind == "cases":
            bundle = [Prepared(self.cases[i]) for i in task.case_ids]
        for i, (name, device) in enumerate(task.targets):
            self.load(name, task.kind)
            loaded(i)
            backend = column_backend(name)
            if task.kind == "zoo":
                yield row_results(task.case_ids, backend, name, device)
            elif task.kind == "cases":  # one op × dtype's bundle or several (.runner batches them)
                yield run_bundles(backend, device, split_bundles(bundle), self.claims[name])
            else:
                yield run_bundle(backend, device, bundle, self.claims[name])

    def _jax_frontend(self, task: Task, loaded) -> Iterator[list]:
        """Cases of the JAX frontend's rows (one primitive's, so a convention's staleness is
        judged over them together) on the ``jax/cpu`` column, as the serial run runs them."""
        from .declared import Declared
        from .jax_frontend.check import DEVICE, run_cases
        from .jax_frontend.deviations import jax_column
        from .jax_frontend.registry import find

        column = Declared.of(jax_column(), DEVICE)  # imports jax: the target's load
        loaded(0)
        yield run_cases([find(i) for i in task.case_ids], column)

    def _hugging_face(self, task: Task) -> Iterator[list]:
        """One architecture of the Hugging Face zoo ("hf": its stages on each parity backend;
        "hf-anchor": its anchor case through each torch.compile anchor, which every host has)."""
        from .hf.matrix import anchor_result, entry_results

        name = task.case_ids[0].partition(":")[2].partition("[")[0]  # "hf:bert[f32]:forward" → "bert"
        for backend, _device in task.targets:  # cpu only: whole models run on cpu targets
            if task.kind == "hf-anchor":
                yield [anchor_result(name, backend)]
            else:
                self._check_offered(backend)
                yield entry_results(name, backend)

    def _check_offered(self, name: str) -> None:
        if self.spec.backends and name not in self.spec.backends:  # routing is the controller's promise
            raise RuntimeError(f"host {self.spec.host!r} offers {', '.join(self.spec.backends)}, not {name!r}")


def start_session(spec: WorkerSpec) -> Session:
    """This process made a worker: the controller's import path, the memory cap, the plugins."""
    pin_to_slice(spec.slot, spec.slots)  # first: before a runtime sizes a thread pool
    sys.path[:0] = [p for p in spec.sys_path if p not in sys.path]
    cap_memory(spec.memory_mb)
    return Session(spec)


def main() -> int:
    faulthandler.enable()  # a fatal signal prints the Python stack to stderr: the crash's last lines
    channel = os.fdopen(os.dup(1), "wb")  # the protocol's own copy of stdout
    os.dup2(2, 1)  # what backends print goes to stderr, with the crash's last words
    inbox = sys.stdin.buffer
    session = start_session(read_message(inbox))
    write_message(channel, ("ready", os.getpid()))
    while (task := read_message(inbox)) is not None:
        print(f"[worker {os.getpid()}] task {task.id}: {len(task.case_ids)} case(s) of "
              f"{task.case_ids[0]} on {len(task.targets)} target(s)", file=sys.stderr, flush=True)
        try:
            for i, results in enumerate(session.run(task, lambda i: write_message(channel, ("loaded", task.id, i)))):
                write_message(channel, ("result", task.id, i, results))
        except MemoryError:
            traceback.print_exc()
            sys.stderr.flush()
            os._exit(EXIT_OUT_OF_MEMORY)
        write_message(channel, ("done", task.id))
    return 0


if __name__ == "__main__":
    sys.exit(main())
