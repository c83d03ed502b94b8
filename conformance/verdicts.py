"""Verdicts: case results gathered into cells, and cells held against the backend's
declared deviations.

A failing cell whose every failing case a deviation explains is a *recorded deviation*
(a case is explained when its error is within the ULPs the deviation records, or, for a
``flush_to_zero`` deviation of the case's dtype, when it passes with that dtype's
subnormals read as zero on both sides); any other failing cell is an *unexpected
failure*, and a deviation that explains no failure of the cells it covers is *stale*.
A case that raised or returned outputs of the wrong number, shape or dtype is never
explained, and a deviation that records no number in ULPs (or a flush-to-zero one with
no dtype) explains nothing and is *invalid*.

Example::

    >>> from parity.backends.base import Deviation
    >>> ulp_limit(Deviation("tan", "range reduction", "5 ulp (measured 4.2)"))
    5.0
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Sequence

import numpy as np

from ..backends.base import ANY_OP, Deviation
from .case import Case
from .results import (
    CRASHED,
    DECLINED,
    DEVIATION,
    FAIL,
    NEVER_EXCUSED,
    NOT_RUN,
    PASS,
    RECORDED,
    TIMED_OUT,
    UNSUPPORTED,
    CaseResult,
    Cell,
    DeviationCheck,
    Target,
)


def cells_of_cases(cases: Sequence[Case], targets: Sequence[Target], results: Sequence[CaseResult]) -> list[Cell]:
    """One cell per (op, dtype) of ``cases`` and target, in the cases' order."""
    return cells_for(list(dict.fromkeys((c.op, c.dtype.short) for c in cases)), targets, results)


def cells_for(keys: Sequence[tuple[str, str]], targets: Sequence[Target], results: Sequence[CaseResult],
              cpu_only: Callable[[str], bool] = lambda op: False) -> list[Cell]:
    """One cell per (op, dtype) key and target; rows ``cpu_only`` accepts are not run elsewhere."""
    by_cell: dict[tuple, list[CaseResult]] = defaultdict(list)
    for r in results:
        by_cell[(r.op, r.dtype, r.backend, r.device)].append(r)
    cells = []
    for t in targets:
        deviations = t.instance.deviations if t.instance is not None else ()
        for op, dtype in keys:
            cell = Cell(op, dtype, t.backend, t.device, NOT_RUN)
            if not t.available:
                cell.message = t.error or f"device {t.device} is not available to {t.backend} here"
            elif t.device != "cpu" and cpu_only(op):
                cell.message = "models run on cpu targets"
            else:
                _aggregate(cell, by_cell[(op, dtype, t.backend, t.device)], deviations)
            cells.append(cell)
    return cells


def _aggregate(cell: Cell, results: Sequence[CaseResult], deviations: Sequence[Deviation]) -> None:
    cell.cases = len(results)
    ran = [r for r in results if r.status not in (UNSUPPORTED, DECLINED)]
    declined = [r for r in results if r.status == DECLINED]  # the claim's predicate turned these down
    cell.declined = len(declined)
    cell.unsupported = len(results) - len(ran) - len(declined)
    if not ran:
        cell.status = UNSUPPORTED
        cell.message = results[0].message if results else ""
        return
    cell.path = ran[0].path
    cell.hashes = {r.case: r.output_hash for r in ran if r.output_hash}
    cell.passed = sum(r.status == "pass" for r in ran)
    cell.failed = len(ran) - cell.passed
    ulps = [r.max_ulp for r in ran if r.max_ulp is not None and np.isfinite(r.max_ulp)]
    cell.max_ulp = max(ulps) if ulps else None
    worst = max(ran, key=lambda r: (r.status != "pass", r.max_ratio))
    cell.max_ratio = worst.max_ratio
    covering = [d for d in deviations if _covers(d, cell.op, cell.dtype, cell.device)]
    cell.deviation = _deviation_dict(covering[0]) if covering else None
    if not cell.failed:
        cell.status = PASS
        if declined:  # passed over the cases the claim takes, and only those
            cell.message = f"{len(declined)} of {len(results)} cases {declined[0].message}"
        return
    cell.worst_case, cell.worst, cell.message = worst.case, worst.worst, worst.message
    failing = [r for r in ran if r.status != "pass"]
    dead = next((r for r in failing if r.status in (CRASHED, TIMED_OUT)), None)
    if dead is not None:  # no answer at all: never a pass, never excused by a deviation
        cell.status, cell.worst_case, cell.message = dead.status, dead.case, dead.message
        return
    if all(r.path == RECORDED for r in failing):  # whole-model rows measured within their recorded deviation
        cell.status = DEVIATION
        return
    explained = [_explaining(covering, r) for r in failing]
    if all(explained):
        cell.status = DEVIATION
        cell.explained_by = [_deviation_dict(d) for d in dict.fromkeys(explained)]
        cell.deviation = cell.explained_by[0]
        if any(d.flush_to_zero for d in explained):
            cell.flush_to_zero = True
            # a case measured flushed counts its flushed error (None: an exact op, bit-exact once flushed)
            left = [(r.flushed_ulp if r.flushed_passed is not None else r.max_ulp) or 0.0 for r in ran]
            cell.flushed_ulp = max(u for u in left if np.isfinite(u))
        return
    cell.status = FAIL
    unexplained = next(r for r, d in zip(failing, explained) if d is None)
    if unexplained.status == "error" or unexplained.malformed:
        if covering:
            cell.message = "a deviation never excuses an exception or a malformed output. " + cell.message
        return
    numeric = [d for d in covering if not d.flush_to_zero]
    if numeric and ulp_limit(numeric[0]) is None:
        cell.message = (f"the deviation covering it records no number in ULPs ({numeric[0].max_error!r}), "
                        "so it explains nothing. " + cell.message)
    elif numeric:
        error = unexplained.max_ulp if unexplained.flushed_passed is None else unexplained.flushed_ulp
        if error is None or not np.isfinite(error):  # NaN or inf where the reference is finite
            cell.message = (f"{unexplained.case} has a non-finite error (a NaN or infinity where the reference "
                            f"differs), which no recorded ULP figure ({numeric[0].max_error}) excuses. "
                            + cell.message)
        else:
            cell.message = (f"max error {error:.3g} ULP exceeds the recorded deviation "
                            f"({numeric[0].max_error}). " + cell.message)


def _covers(d: Deviation, op: str, dtype: str, device: str) -> bool:
    if d.flush_to_zero and d.dtype is None:  # flush-to-zero is measured per dtype: without one it is invalid
        return False
    return d.op in (op, ANY_OP) and (d.dtype is None or d.dtype.short == dtype) and (
        d.device is None or d.device == device)


def _explaining(covering: Sequence[Deviation], r: CaseResult) -> Deviation | None:
    """The deviation that explains one failing case: a flush_to_zero one (of the case's
    dtype) if the case passes with subnormals flushed, else one whose recorded ULPs cover
    the error that remains. Nothing explains an exception, a malformed output, an error
    with no ULP figure, or (from a deviation that records no number) anything."""
    if r.status in NEVER_EXCUSED or r.malformed:
        return None
    if r.flushed_passed:
        return next(d for d in covering if d.flush_to_zero)
    error = r.max_ulp if r.flushed_passed is None else r.flushed_ulp
    if error is None or not np.isfinite(error):
        return None
    for d in covering:
        if d.flush_to_zero:
            continue
        limit = ulp_limit(d)
        if limit is not None and error <= limit:
            return d
    return None


_ULP = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?(?:e[-+]?[0-9]+)?)\s*ulp", re.IGNORECASE)


def ulp_limit(d: Deviation) -> float | None:
    """The ULPs a deviation records ("5 ulp (measured ...)" → 5.0), or None when it says no number."""
    m = _ULP.match(d.max_error)
    return float(m.group(1)) if m else None


def invalid_reason(d: Deviation) -> str:
    """Why a declared deviation cannot explain anything ("" when it is valid)."""
    if d.flush_to_zero:
        return "" if d.dtype is not None else "flush-to-zero is declared per dtype (measured): this one names none"
    if ulp_limit(d) is None:
        return f"max_error must start with the number it allows, e.g. '5 ulp (measured 4.2)'; got {d.max_error!r}"
    return ""


def _deviation_dict(d: Deviation) -> dict:
    return {"op": d.op, "dtype": d.dtype.short if d.dtype else None, "device": d.device, "reason": d.reason,
            "max_error": d.max_error}


def check_deviations(targets: Sequence[Target], cells: Sequence[Cell], whole: bool = True,
                     applies: Callable[[str], bool] = lambda op: True) -> list[DeviationCheck]:
    """Each declared deviation's state, judged over the cells it covers that it could explain
    (rows ``applies`` accepts: not whole-model rows, which meet their own tolerance). One that
    covers every op (ANY_OP) can be called stale only by a run over the whole database (``whole``)."""
    checks = []
    seen = set()
    for t in targets:
        if t.instance is None or t.backend in seen:
            continue
        seen.add(t.backend)
        mine = [c for c in cells if c.backend == t.backend and c.status not in (NOT_RUN, UNSUPPORTED) and applies(c.op)]
        for d in t.instance.deviations:
            covered = [c for c in mine if _covers(d, c.op, c.dtype, c.device)]
            if invalid_reason(d):
                state = "invalid"
            elif not covered:
                state = "not checked"
            elif any(_deviation_dict(d) in c.explained_by for c in covered):
                state = "recorded"
            elif d.op == ANY_OP and not whole:
                state = "not checked"
            elif all(c.status in (PASS, DEVIATION) for c in covered):
                state = "stale"
            else:
                state = "recorded"  # covered cells fail beyond it: those cells are the failures
            cells_of = [c for c in covered if _deviation_dict(d) in c.explained_by] or covered
            checks.append(DeviationCheck(t.backend, d.op, d.dtype.short if d.dtype else None, d.device, d.reason,
                                         d.max_error, state, [f"{c.op}[{c.dtype}]@{c.device}" for c in cells_of],
                                         invalid_reason(d)))
    return checks
