"""The frontend rows of ``parity conform``: ``jax:PRIMITIVE`` in the column ``jax/cpu``.

Every selected case (:func:`.registry.select`: ``--ops`` matches the row names, ``--dtype``
their dtypes, ``--quick`` keeps one edge case per primitive) runs through :func:`.check.run_cases`;
the cells are made and judged as a backend's are, against the deviations the column
declares (:mod:`.deviations`). Without JAX installed every row is *not run*, never a pass;
registry names this JAX never emits (``registry.NOT_EMITTED``) are *not run* with the reason.

Example::

    >>> results, keys, target = frontend_rows(ops="^jax:neg$", quick=True)
    >>> [(r.op, r.status) for r in results], target.backend
    ([('jax:neg', 'pass')], 'jax')
"""

from __future__ import annotations

from collections.abc import Iterable

from ...ir.dtypes import DType
from ..declared import Declared
from ..results import CaseResult, Target
from .bridge import jax_available
from .check import COLUMN, DEVICE, run_cases
from .spec import row_of


def frontend_target() -> Target:
    """The ``jax/cpu`` column: available when JAX is importable."""
    if not jax_available():
        return Target(COLUMN, DEVICE, False, None, "jax is not installed (pip install 'parity[jax]'): the JAX "
                                                   "frontend's rows are not run")
    from .deviations import jax_column

    return Target(COLUMN, DEVICE, True, jax_column())


def frontend_rows(*, ops: str | None = None, dtypes: Iterable[DType] = (), quick: bool = False,
                  progress=None, ran: list[CaseResult] | None = None) -> tuple[list[CaseResult],
                                                                             list[tuple[str, str]], Target]:
    """(case results, the (row, dtype) keys of the matrix, the column) of the selected cases;
    ``ran``: their results from workers (:func:`planned_groups`' cases), else they run here."""
    from . import registry

    target = frontend_target()
    chosen = registry.select(ops=ops, dtypes=dtypes, quick=quick)
    keys = list(dict.fromkeys((c.op, c.dtype.short) for c in chosen))
    keys += [(row_of(name), "-") for name in not_emitted(ops)]
    if not target.available:
        return [], keys, target
    if ran is not None:
        results = list(ran)
    else:
        if progress:
            progress(f"JAX frontend: {len(chosen)} cases")
        results = run_cases(chosen, Declared.of(target.instance, DEVICE))
    for name, entry in registry.NOT_EMITTED.items():
        if (row_of(name), "-") in keys:
            results.append(CaseResult(case=f"{row_of(name)}[-]:not_emitted", op=row_of(name), dtype="-",
                                      backend=COLUMN, device=DEVICE, status="unsupported",
                                      message=f"not run: {entry.why}"
                                      + (f"; its rule is {entry.same_rule_as}'s, tested there" if entry.same_rule_as
                                         else "")))
    return results, keys, target


def planned_groups(*, ops: str | None = None, dtypes: Iterable[DType] = (), quick: bool = False) -> list[tuple]:
    """The selected cases' ids, one tuple per primitive (a convention's staleness is judged over a
    row's cases together): what a run on workers hands them as tasks. Empty without JAX."""
    from . import registry

    if not jax_available():
        return []
    by_row: dict[str, list[str]] = {}
    for case in registry.select(ops=ops, dtypes=dtypes, quick=quick):
        by_row.setdefault(case.op, []).append(case.id)
    return [tuple(ids) for ids in by_row.values()]


def not_emitted(ops: str | None) -> list[str]:
    import re

    from .registry import NOT_EMITTED

    return [n for n in NOT_EMITTED if ops is None or re.search(ops, row_of(n))]
