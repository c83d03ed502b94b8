"""The ``monarch`` engine: conformance workers as Monarch actors (``pip install 'parity[distributed]'``).

Workers run on the host meshes of a Monarch *job* (``monarch.job``): with ``--monarch-job
PATH``, the job a scheduler wrote with ``job.dump(PATH)`` (a ``SlurmJob``, a
``KubernetesJob``, ...), whose host meshes are the hosts that ``--hosts`` names; without it,
Monarch's own ``LocalJob`` with one host mesh per ``--hosts`` name, all on this machine
(simulated hosts; one mesh called ``local`` without ``--hosts``). Parity launches nothing
itself: each worker is a one-process mesh from ``HostMesh.spawn_procs`` on its host's mesh,
running a :class:`ConformanceActor` whose ``run`` endpoint answers one target of a task with
the serial runner's case results. A task's targets are called one at a time, so a worker
that dies is known to have died on the target it was running. A process that dies
reaches the controller as Monarch's ``SupervisionError`` (``Killed(sig=11)``); an
exception inside the actor as ``ActorError``, with the remote traceback: both become
the same ``("exit", status)`` events the local engine gives, so the controller's
retries and verdicts are the same code.

Example (Monarch installed)::

    >>> engine = MonarchEngine(hosts=("cpu-box", "gpu-box"))  # doctest: +SKIP
    >>> sorted(engine.host_meshes)  # doctest: +SKIP
    ['cpu-box', 'gpu-box']
"""

from __future__ import annotations

import logging
import queue
import re
import signal
import threading
from collections.abc import Sequence

from .worker import EXIT_OUT_OF_MEMORY, Task, WorkerSpec, describe_exit

try:
    from monarch.actor import Actor, endpoint, this_host
except ImportError:  # the class below needs a base either way; the engine refuses to start
    Actor, endpoint, this_host = object, (lambda f: f), None


class ConformanceActor(Actor):
    """A worker's session inside a Monarch process."""

    @endpoint
    def setup(self, spec: WorkerSpec) -> int:
        import os

        from .worker import start_session

        self.session = start_session(spec)
        return os.getpid()

    @endpoint
    def load(self, name: str, kind: str) -> None:
        self.session.load(name, kind)

    @endpoint
    def run(self, task: Task) -> list:
        return next(iter(self.session.run(task)))


def _ignore_unhandled(failure) -> None:
    """Failures reach the controller through the failed call; an unhandled supervision event
    must not interrupt it as well."""


class MonarchWorker:
    """One Monarch process mesh with one actor; a thread makes its calls and reports them."""

    def __init__(self, spec: WorkerSpec, events: queue.Queue, host_mesh):
        self.spec, self._events, self._tasks = spec, events, queue.Queue()
        self._last_words: list[str] = []
        self._procs = host_mesh.spawn_procs(per_host={"procs": 1})
        self._actor = self._procs.spawn("conformance", ConformanceActor)
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        try:
            self._events.put((self, ("ready", self._actor.setup.call_one(self.spec).get())))
            while (task := self._tasks.get()) is not None:
                for i, target in enumerate(task.targets):
                    one = Task(task.id, task.case_ids, (target,), task.kind, task.seed)
                    self._actor.load.call_one(target[0], task.kind).get()
                    self._events.put((self, ("loaded", task.id, i)))
                    self._events.put((self, ("result", task.id, i, self._actor.run.call_one(one).get())))
                self._events.put((self, ("done", task.id)))
        except Exception as exc:  # SupervisionError (the process died) or ActorError (it raised)
            text = str(exc)
            self._last_words = [line for line in text.splitlines() if line.strip()][-16:]
            self._events.put((self, ("exit", _status_of(text))))
            self.kill()

    def send(self, task: Task) -> None:
        self._tasks.put(task)

    def kill(self) -> None:
        try:
            self._procs.stop().get(timeout=30)
        except Exception:  # noqa: BLE001 - already gone
            pass

    def stderr_tail(self) -> list[str]:
        return self._last_words

    def describe_exit(self, status: int) -> str:
        return describe_exit(status, self.spec.memory_mb)

    def ended_by_itself(self, status: int) -> bool:
        """Did the process end on its own (a signal or exit status Monarch reported), not by
        :meth:`kill`'s stop (reported as stopped, status 1)? Monarch reports a death some
        seconds late, so a crash can arrive after the controller's timeout has stopped it."""
        return status not in (1, -signal.SIGKILL, -signal.SIGTERM)


def _status_of(message: str) -> int:
    """The exit status a Monarch failure message gives: -signal, a MemoryError's, or 1."""
    if "MemoryError" in message:
        return EXIT_OUT_OF_MEMORY
    m = re.search(r"sig(?:nal)?=(\d+)", message)
    if m:
        return -int(m.group(1))
    m = re.search(r"exit(?:ed)?\b[^\n]*?(?:status|code)[=: (]+(\d+)", message, re.IGNORECASE)
    return int(m.group(1)) if m else 1


#: The host mesh's name when the run names no hosts.
LOCAL_MESH = "local"


class MonarchEngine:
    """Workers as Monarch actors, one process mesh each, on the host meshes of a Monarch job:
    the one dumped at ``job_path``, else a ``LocalJob`` with a mesh per name of ``hosts``."""

    name = "monarch"

    def __init__(self, hosts: Sequence[str] = (), job_path: str | None = None):
        if this_host is None:
            from ..backends.registry import pip_install_line

            raise ValueError("--engine monarch needs torchmonarch, which is not installed. "
                             f"Run: {pip_install_line('distributed')} (or use --engine local)")
        import monarch.actor
        from monarch.job import LocalJob, job_load

        monarch.actor.unhandled_fault_hook = _ignore_unhandled
        names = tuple(hosts) or (LOCAL_MESH,)
        # a LocalJob's host meshes are all this machine; a loaded job's are its own machines
        self.shares_one_machine = job_path is None
        job = job_load(job_path) if job_path else LocalJob(hosts=names)
        job_log = logging.getLogger(type(job).state.__module__)  # it narrates each step on stderr at INFO
        level = job_log.level
        job_log.setLevel(logging.WARNING)
        try:
            state = job.state(cached_path=None)  # no .monarch/ cache in the user's directory
        finally:
            job_log.setLevel(level)
        self.host_meshes = {}
        for name in names:
            try:
                self.host_meshes[name] = getattr(state, name)
            except AttributeError as exc:  # the job has no mesh of that name: say which it has
                raise ValueError(f"--hosts names {name!r}, but the Monarch job {job_path} has no host mesh of that "
                                 f"name ({exc}). Name the job's host meshes in --hosts.") from None

    def spawn(self, spec: WorkerSpec, events: queue.Queue) -> MonarchWorker:
        return MonarchWorker(spec, events, self.host_meshes[spec.host or LOCAL_MESH])
