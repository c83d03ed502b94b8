"""Engines start conformance workers; the controller (:mod:`.controller`) drives them.

An engine's ``spawn(spec, events)`` returns a worker handle with ``send(task)``,
``kill()``, ``stderr_tail()``, ``describe_exit(status)`` and
``ended_by_itself(status)`` (a death that was not the controller's kill). Everything a
worker says arrives on the shared ``events`` queue as ``(handle, message)``; its end
arrives as ``(handle, ("exit", status))``. So the controller's scheduling, retries and
timeouts are one code path whatever runs the workers.

An engine's ``shares_one_machine`` says whether all its workers run on one machine (whose
CPUs they then split) or each host's on its own.

``local`` (the default) runs each worker as a ``python -m parity.conformance.worker``
subprocess in its own session, stderr to a temporary file; ``monarch``
(:mod:`.monarch_engine`) runs each as a Monarch actor on the host meshes of a Monarch job.

Example::

    >>> sorted(ENGINES)
    ['local', 'monarch']
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence

from .worker import WorkerSpec, describe_exit, read_message, write_message


class LocalWorker:
    """One worker subprocess; a thread forwards its messages to ``events``."""

    def __init__(self, spec: WorkerSpec, events: queue.Queue):
        self.spec = spec
        self._stderr = tempfile.TemporaryFile()
        self._process = subprocess.Popen([sys.executable, "-m", "parity.conformance.worker"], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=self._stderr, start_new_session=True)
        self.pid = self._process.pid
        write_message(self._process.stdin, spec)
        threading.Thread(target=self._forward, args=(events,), daemon=True).start()

    def _forward(self, events: queue.Queue) -> None:
        while (message := read_message(self._process.stdout)) is not None:
            events.put((self, message))
        events.put((self, ("exit", self._process.wait())))

    def send(self, task) -> None:
        try:
            write_message(self._process.stdin, task)
        except (BrokenPipeError, OSError):  # it died; its exit event is on the way
            pass

    def kill(self) -> None:
        try:
            os.killpg(self.pid, signal.SIGKILL)  # its own session: children of the backend's runtime too
        except ProcessLookupError:
            pass

    def stderr_tail(self) -> list[str]:
        self._stderr.flush()
        self._stderr.seek(0)
        return last_words(self._stderr.read().decode("utf-8", "replace"))

    def describe_exit(self, status: int) -> str:
        return describe_exit(status, self.spec.memory_mb)

    def ended_by_itself(self, status: int) -> bool:
        """Did the worker end on its own rather than by :meth:`kill` (SIGKILL)?"""
        return status != -signal.SIGKILL


def last_words(stderr: str, lines: int = 16) -> list[str]:
    """The lines of a dead worker's stderr that say why: from its last fatal-error report
    or traceback if one is near the end, else the last ``lines``; the list of loaded
    extension modules that a fatal-error report ends with is left out."""
    text = [line for line in stderr.splitlines() if line.strip() and not line.startswith("Extension modules:")]
    starts = [i for i, line in enumerate(text) if line.startswith(("Fatal Python error", "Traceback (most recent"))]
    if starts and starts[-1] >= len(text) - 3 * lines:
        return text[starts[-1]:starts[-1] + lines]
    return text[-lines:]


class LocalEngine:
    """Workers as subprocesses of this machine (needs nothing beyond the core install)."""

    name = "local"
    shares_one_machine = True  # its workers split this machine's CPUs

    def spawn(self, spec: WorkerSpec, events: queue.Queue) -> LocalWorker:
        return LocalWorker(spec, events)


def _local_engine(hosts: Sequence[str], job_path: str | None) -> LocalEngine:
    if job_path:
        raise ValueError(f"--monarch-job {job_path}: a Monarch job's host meshes need --engine monarch")
    return LocalEngine()  # simulated hosts are labels here: every worker is a subprocess of this machine


def _monarch_engine(hosts: Sequence[str], job_path: str | None):
    from .monarch_engine import MonarchEngine  # Monarch loads only when asked for

    return MonarchEngine(hosts, job_path)


#: Engines by the name ``--engine`` takes: factories of (host names, Monarch job file).
ENGINES = {"local": _local_engine, "monarch": _monarch_engine}


def get_engine(name: str, hosts: Sequence[str] = (), job_path: str | None = None):
    """The engine called ``name`` for a run on ``hosts`` (names; empty: this machine alone)."""
    try:
        factory = ENGINES[name]
    except KeyError:
        raise ValueError(f"--engine {name!r}: unknown engine; choose one of {', '.join(sorted(ENGINES))}") from None
    return factory(hosts, job_path)
