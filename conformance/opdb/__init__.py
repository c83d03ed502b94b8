"""The op database: every op of the op table with sample inputs over every dtype it
accepts, edge cases, and error inputs its type rule must reject.

One module per op family; each names the op-table families it covers
(``IR_FAMILIES``, so its ``OPS`` follow from the table), builds its cases (``cases()``)
and declares its error inputs (``ERRORS``). Nothing registers itself: :data:`FAMILIES`
is the explicit list.

Example::

    >>> from parity.conformance.opdb import all_cases
    >>> cases = all_cases()
    >>> len(cases) >= 2500, len({c.id for c in cases}) == len(cases)
    (True, True)
"""

from __future__ import annotations

import functools
import re
from collections import Counter

from ..case import Case, ErrorCase
from . import complex_numbers, composites, contraction, control, elementwise, fft, reductions, spectral, structural

FAMILIES = {
    "elementwise": elementwise,
    "complex_numbers": complex_numbers,
    "fft": fft,
    "spectral": spectral,
    "structural": structural,
    "reductions": reductions,
    "contraction": contraction,
    "composites": composites,
    "control": control,
}


@functools.cache
def _all_cases() -> tuple[Case, ...]:
    out: list[Case] = []
    for family in FAMILIES.values():
        out += family.cases()
    return tuple(out)


def all_cases() -> list[Case]:
    """Every case, in a fixed order (family, then op, then dtype)."""
    return list(_all_cases())


def error_cases() -> list[ErrorCase]:
    return [e for family in FAMILIES.values() for e in family.ERRORS]


def family_of(op: str) -> str:
    for name, family in FAMILIES.items():
        if op in family.OPS:
            return name
    raise KeyError(f"op {op!r} is in no conformance family; add it to one of {list(FAMILIES)}")


def select(cases, *, ops: str | None = None, dtypes=None, tags_excluded=()) -> list[Case]:
    """Cases whose op matches the regex ``ops`` (search), whose dtype is in ``dtypes``,
    and that carry none of ``tags_excluded``."""
    pattern = re.compile(ops) if ops else None
    return [c for c in cases if (pattern is None or pattern.search(c.op))
            and (not dtypes or c.dtype in dtypes) and not set(c.tags) & set(tags_excluded)]


def counts_by_family() -> dict[str, int]:
    """Number of cases per family (and error inputs under 'errors')."""
    counts = Counter(family_of(c.op) for c in _all_cases())
    return {**{name: counts[name] for name in FAMILIES}, "errors": len(error_cases())}
