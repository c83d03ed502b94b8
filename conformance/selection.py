"""What a run covers: its (backend, device) targets and its cases.

Shared by the serial runner and the workers (:mod:`.worker`), which rebuild the same
selection from the run's options and find each case by id.

Example::

    >>> [c.id for c in select_cases(ops="^neg$", quick=True)][:2]
    ['neg[i8]:random', 'neg[i8]:specials']
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Sequence

from ..backends.base import Backend
from ..backends.registry import BackendNotFound, backend_names, get_backend
from ..ir.dtypes import DType
from . import opdb, regressions
from .case import Case
from .opdb.common import EDGE, LONG
from .results import Target


def resolve_targets(backends: Sequence[str | Backend] | None, devices: Sequence[str] | None) -> list[Target]:
    """(backend, device) pairs: every device a backend lists (filtered by ``devices``)."""
    targets = []
    for b in backends if backends else backend_names():
        if isinstance(b, Backend):
            instance, error = b, ""
        else:
            try:
                instance, error = get_backend(b), ""
            except (BackendNotFound, ImportError) as exc:
                instance, error = None, str(exc)
        if instance is None:
            targets.append(Target(str(b), "cpu", False, None, error))
            continue
        available = set(instance.available_devices())
        for device in instance.devices:
            if devices and device not in devices:
                continue
            targets.append(Target(instance.name, device, device in available, instance))
    return targets


def select_cases(*, ops: str | None = None, dtypes: Iterable[DType] | None = None, quick: bool = False,
                 cases: Sequence[Case] | None = None) -> list[Case]:
    """The cases a run covers: the op database and the fuzzer regressions (or ``cases``).
    ``quick`` keeps, per (op, dtype), the edge cases, the regressions and the first other
    case: layout variants and the 10**6-term reductions are left out."""
    everything = opdb.all_cases() + regressions.cases() if cases is None else cases
    chosen = opdb.select(everything, ops=ops, dtypes=set(dtypes or ()), tags_excluded=(LONG,) if quick else ())
    if not quick:
        return chosen
    kept, seen = [], set()
    for c in chosen:
        key = (c.op, c.dtype)
        if EDGE in c.tags or regressions.REGRESSION in c.tags or key not in seen:
            kept.append(c)
            seen.add(key)
    return kept


@functools.lru_cache(maxsize=1)
def suite_digest() -> str:
    """A short digest of every case id the suite holds (op database and regressions): two
    reports with the same digest measured the same cases (``parity conform merge`` checks it)."""
    ids = sorted(c.id for c in opdb.all_cases() + regressions.cases())
    return hashlib.sha256("\n".join(ids).encode()).hexdigest()[:12]
