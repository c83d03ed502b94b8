"""How a conformance run keeps a plugin's native failures inside cells.

**Which targets run isolated.** A backend that is not built in and that a worker process
can find again — one registered by an entry point (group ``parity.backends``) or loaded
by ``--plugin`` — runs on a worker process even in a serial run (:func:`isolated`), so a
segfault, a hang or a runaway allocation in its runtime becomes a *crashed* or *timed
out* cell naming the case, and the run completes with a report. The built-in backends
keep the serial path in the ``parity conform`` process. A backend only registered in
this process (``register_backend`` in a notebook or a test) cannot be rebuilt in a worker
and runs serially too.

**The default time limit** of one bundle (one op × dtype's cases) on a plugin's target, when
no ``--case-timeout`` is given, is sized from its cases (:func:`bundle_seconds`; a built-in
backend gets none, docs/conformance.md "Workers"):
:data:`COMPILE_SECONDS` for compiling the bundle, plus per case :data:`CASE_SECONDS` and
:data:`SECONDS_PER_MILLION_ELEMENTS` for every million elements of its inputs; a whole-model
row gets :data:`MODEL_SECONDS` per case. The limit starts once the worker has loaded the
target's backend (importing its runtime may take :data:`LOAD_SECONDS`). A bundle that runs
out of time is searched by bisection, each half under its own cases' limit, down to the case
that hangs (:mod:`.controller`).

**The default memory cap** of an isolated worker is half of this machine's physical memory
(:func:`default_memory_mb`, ``setrlimit(RLIMIT_AS)`` in the worker): an allocation past
it is a MemoryError in the worker, which becomes a *crashed* cell.

Example::

    >>> import numpy as np
    >>> from parity.ir import f32
    >>> from parity.conformance.case import Case
    >>> case = Case("neg", f32, lambda rng: (np.zeros(2_000_000, np.float32),))
    >>> case_seconds(case), bundle_seconds([case_seconds(case)] * 3)
    (6.0, 48.0)
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ..backends.registry import BUILTIN_BACKENDS, plugin_names
from .case import Case
from .results import Target

COMPILE_SECONDS = 30.0  # one bundle's compilation on one target
CASE_SECONDS = 2.0  # running and measuring one small case
SECONDS_PER_MILLION_ELEMENTS = 2.0  # of a case's inputs (10**6-term reductions, large convolutions)
MODEL_SECONDS = 600.0  # one case of a whole-model row (compiling a model, a training step)
LOAD_SECONDS = 300.0  # a worker loading a backend (importing its runtime), before its cases' limit starts


def case_seconds(case: Case) -> float:
    """The time one case may take under the default limit (see the module docstring)."""
    elements = sum(a.size for a in case.arrays())
    return CASE_SECONDS + SECONDS_PER_MILLION_ELEMENTS * elements / 1e6


def bundle_seconds(per_case: Sequence[float]) -> float:
    """The default limit of a bundle whose cases may take ``per_case`` seconds each."""
    return COMPILE_SECONDS + sum(per_case)


def time_limit(backend: str, per_case: Sequence[float], case_timeout: float | None = None,
               scale: float = 1.0) -> float | None:
    """The seconds a bundle whose cases may take ``per_case`` may run on ``backend`` once it is
    loaded: ``case_timeout`` if given (0: no limit); else, for a plugin, :func:`bundle_seconds`
    times ``scale``; for a built-in backend none, as its slowest path is not told by input
    sizes (Triton's CPU interpreter takes minutes over dot_general's cases).

    Example::

        >>> time_limit("vendor", [2.0, 2.0]), time_limit("triton", [2.0]), time_limit("triton", [2.0], 5.0)
        (34.0, None, 5.0)
    """
    if case_timeout is not None:
        return case_timeout or None
    if backend.partition("@")[0] in BUILTIN_BACKENDS:
        return None
    return scale * bundle_seconds(per_case)


def default_memory_mb() -> int:
    """Half of this machine's physical memory, in MiB: an isolated worker's address-space cap."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2 // 2**20


def isolated(targets: Sequence[Target], loaded: Sequence[str] = ()) -> list[Target]:
    """The targets a serial run sends to a worker: backends that are not built in and that a
    worker finds by name (an entry point, or one of ``loaded``: the names of the backends the
    run's ``--plugin`` specs made). A fast-tier column ``NAME@fast`` follows its backend."""
    findable = {*plugin_names(), *loaded}
    return [t for t in targets
            if t.backend.partition("@")[0] not in BUILTIN_BACKENDS and t.backend.partition("@")[0] in findable]
