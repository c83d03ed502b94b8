"""The journal of a run: case results as JSON lines, written as they arrive.

The first line names the run (its selection and targets); each further line is one
:class:`~.results.CaseResult`. Lines are flushed at once and fsync'd in batches
(every :data:`SYNC_EVERY` lines or :data:`SYNC_SECONDS`, and on close), so a controller
killed with SIGKILL — or a machine that loses power — loses at most one batch. A torn
last line is ignored when reading. ``--resume`` reads the journal back and runs only
the cases it does not hold.

Example::

    >>> import tempfile, pathlib
    >>> from parity.conformance.results import CaseResult
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "run.jsonl"
    >>> with Journal(path, {"ops": "^neg$"}) as j:
    ...     j.write([CaseResult("neg[f32]:a", "neg", "f32", "reference", "cpu", "pass")])
    >>> [r.status for r in read_journal(path, {"ops": "^neg$"})]
    ['pass']
"""

from __future__ import annotations

import json
import os
import pathlib
import time
from collections.abc import Sequence
from dataclasses import asdict

import numpy as np

from .results import CaseResult

SYNC_EVERY = 64
SYNC_SECONDS = 2.0
_KIND = "parity conform journal"


class JournalMismatch(ValueError):
    """A journal written by a run with other options than the one resuming it."""


class Journal:
    """Append results to ``path``; a new journal starts with the run's ``header``."""

    def __init__(self, path, header: dict, *, append: bool = False):
        self.path = pathlib.Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fresh = not (append and self.path.exists())
        self._file = open(self.path, "w" if fresh else "a", encoding="utf-8")
        self._unsynced, self._synced_at = 0, time.monotonic()
        if fresh:
            self._line({"journal": _KIND, "run": header})
            self.sync()

    def write(self, results: Sequence[CaseResult]) -> None:
        for r in results:
            self._line({"result": asdict(r)})
        self._unsynced += len(results)
        if self._unsynced >= SYNC_EVERY or time.monotonic() - self._synced_at >= SYNC_SECONDS:
            self.sync()

    def _line(self, obj: dict) -> None:
        self._file.write(json.dumps(obj, default=_plain) + "\n")
        self._file.flush()

    def sync(self) -> None:
        os.fsync(self._file.fileno())
        self._unsynced, self._synced_at = 0, time.monotonic()

    def close(self) -> None:
        if not self._file.closed:
            self.sync()
            self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read_journal(path, header: dict) -> list[CaseResult]:
    """The results ``path`` holds; raises :class:`JournalMismatch` when it was written by a
    run whose header differs from ``header``."""
    results: list[CaseResult] = []
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    first = json.loads(lines[0]) if lines and lines[0] else {}
    if first.get("journal") != _KIND:
        raise JournalMismatch(f"{path} is not a parity conform journal (its first line is {lines[0][:80]!r})")
    if first["run"] != json.loads(json.dumps(header, default=_plain)):
        raise JournalMismatch(f"{path} was written by a run with other options ({first['run']}), not this one "
                              f"({header}). Resume with the same options, or start a new journal.")
    for line in lines[1:]:
        try:
            row = json.loads(line)["result"]
        except (ValueError, KeyError, TypeError):  # a torn last line, or the empty tail
            continue
        results.append(CaseResult(**row))
    return results


def _plain(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot write {type(value).__name__} to a journal")
