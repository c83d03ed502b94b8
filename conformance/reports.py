"""Reports of a conformance run: JSON (stable schema), Markdown, and the matrix rows
the terminal and the HTML page share.

The JSON schema is documented in docs/conformance.md; :data:`SCHEMA_VERSION` changes
whenever a field is renamed or removed (adding a field keeps it).

Example::

    >>> from parity.conformance.runner import run
    >>> doc = to_json(run(["reference"], ops="^neg$"))
    >>> doc["schema"], doc["version"], doc["summary"]["reference/cpu"]["pass"]
    ('parity.conformance', 1, 10)
"""

from __future__ import annotations

import datetime
import math
import platform
import sys
from collections import defaultdict
from dataclasses import asdict

import numpy as np

from ..ir.ops import OP_TABLE
from .jax_frontend.spec import FRONTEND_FAMILY, is_frontend_row
from .machine import this_cpu
from .opdb import family_of
from .results import CRASHED, DEVIATION, FAIL, NOT_RUN, PASS, STATUS_ORDER, TIMED_OUT, UNSUPPORTED, Cell, ConformanceRun
from .selection import suite_digest

SCHEMA = "parity.conformance"
SCHEMA_VERSION = 1


def _clean(value):
    """JSON-safe: non-finite floats become the strings "inf", "-inf", "nan"."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, (float, np.floating)):
        f = float(value)
        return f if math.isfinite(f) else repr(f)
    if isinstance(value, np.integer):
        return int(value)
    return value


def to_json(result: ConformanceRun) -> dict:
    """The run as a JSON-ready dict (schema in docs/conformance.md)."""
    from .. import __version__

    cells = []
    for c in result.cells:
        row = asdict(c)
        row["family"], row["kind"] = family_kind(c.op)
        cells.append(row)
    doc = {
        "schema": SCHEMA,
        "version": SCHEMA_VERSION,
        "parity_version": __version__,
        "suite": suite_digest(),
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "elapsed_s": round(result.elapsed_s, 3),
        "environment": {"python": sys.version.split()[0], "numpy": np.__version__, "platform": platform.platform(),
                        "cpu": this_cpu()},
        "options": result.options,
        "cases": result.cases,
        "targets": [{"backend": t.backend, "device": t.device, "available": t.available, "error": t.error}
                    for t in result.targets],
        "cells": cells,
        "deviations": [asdict(d) for d in result.deviations],
        "type_rules": {"checked": len(result.type_rules), "failures": result.type_rule_failures},
        "summary": result.summary(),
        "exit_code": result.exit_code,
        "models": result.models,
        "device_agreement": result.device_agreement,
    }
    return _clean(doc)


def family_kind(op: str) -> tuple[str, str]:
    """(family, kind) of a row; multi-op cases not named after an op are 'graphs', the
    rows of ``--models`` are 'models' and 'random draws' (conformance/zoo.py), the JAX
    frontend's rows 'frontend jax' (conformance/jax_frontend)."""
    if op.startswith("model:"):
        return "models", "model"
    if op.startswith("random:"):
        return "random draws", "random"
    if is_frontend_row(op):
        return FRONTEND_FAMILY, "frontend"
    if op not in OP_TABLE:
        return "graphs", "graph"
    return family_of(op), OP_TABLE[op].kind.value


# -- the matrix: one row per op, one column per backend/device -----------------------------------


def target_names(result: ConformanceRun) -> list[str]:
    return [f"{t.backend}/{t.device}" for t in result.targets]


def matrix(result: ConformanceRun) -> list[tuple[str, dict[str, dict]]]:
    """[(op, {target: aggregate})], ops in op-table order. The aggregate of an op's cells
    on one target: the worst status, its max ULP, and how many dtypes are in each status.
    Where every cell of the worst status is a deviation flush-to-zero explains, the max ULP
    is what remains after flushing (``flush_to_zero`` True); the JSON keeps the raw figure."""
    by_op: dict[str, dict[str, list[Cell]]] = defaultdict(lambda: defaultdict(list))
    for c in result.cells:
        by_op[c.op][f"{c.backend}/{c.device}"].append(c)
    rows = []
    for op in [o for o in OP_TABLE if o in by_op] + [o for o in by_op if o not in OP_TABLE]:
        row = {}
        for target, cells in by_op[op].items():
            worst = min(cells, key=lambda c: STATUS_ORDER.index(c.status))
            same = [c for c in cells if c.status == worst.status]
            flushed = worst.status == DEVIATION and all(c.flush_to_zero for c in same)
            ulps = [shown_ulp(c) for c in same if shown_ulp(c) is not None]
            counts = {s: sum(c.status == s for c in cells) for s in STATUS_ORDER}
            row[target] = {"status": worst.status, "max_ulp": max(ulps) if ulps else None, "counts": counts,
                           "dtypes": {c.dtype: c.status for c in cells}, "flush_to_zero": flushed}
        rows.append((op, row))
    return rows


def shown_ulp(c: Cell) -> float | None:
    """The error a matrix shows for a cell: after flushing, for a deviation flush-to-zero explains."""
    return c.flushed_ulp if c.flush_to_zero else c.max_ulp


def cell_text(agg: dict) -> str:
    """Short text of an aggregate: 'pass', 'fail 5.2 ulp', 'deviation 5 ulp', 'flush-to-zero 0.5 ulp'
    (a deviation flush-to-zero explains, with the error left after flushing), 'unsupported', 'not run'."""
    status, ulps = agg["status"], agg["max_ulp"]
    text = "flush-to-zero" if status == DEVIATION and agg.get("flush_to_zero") else status
    if status in (FAIL, DEVIATION) and ulps is not None:
        text += f" {_fmt_ulp(ulps)}"
    partial = agg["counts"][UNSUPPORTED]
    if status not in (UNSUPPORTED, NOT_RUN) and partial:
        text += f" ({partial} dtype{'s' if partial > 1 else ''} unsupp.)"
    return text


def _fmt_ulp(ulps: float) -> str:
    return f"{ulps:.3g} ulp" if ulps < 1e4 else f"{ulps:.1e} ulp"


KIND_MARK = {"primitive": "P", "composite": "C", "graph": "G", "model": "M", "random": "R", "frontend": "F"}
_MARK = {CRASHED: "💥", TIMED_OUT: "⏱", PASS: "✅", DEVIATION: "⚠️", FAIL: "❌", UNSUPPORTED: "–", NOT_RUN: "·"}


def to_markdown(result: ConformanceRun) -> str:
    """Summary table, the op × backend/device matrix, and the failures and deviations."""
    targets = target_names(result)
    lines = ["# parity conformance", "",
             f"{result.cases} cases, {len({c.op for c in result.cells})} ops, {result.elapsed_s:.1f} s. "
             f"Exit code {result.exit_code} ({_verdict(result)}).", "",
             "| backend/device | pass | deviation | fail | crashed / timed out | unsupported | not run | cases passed |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, s in result.summary().items():
        lines.append(f"| {name} | {s[PASS]} | {s[DEVIATION]} | {s[FAIL]} | {s[CRASHED] + s[TIMED_OUT]} | "
                     f"{s[UNSUPPORTED]} | {s[NOT_RUN]} | {s['cases_passed']}/{s['cases']} |")
    lines += ["", "Cells are op × dtype; the matrix shows each op's worst dtype "
              "(✅ pass, ⚠️ recorded deviation, ❌ fail with max ULP, 💥 crashed its worker, ⏱ timed out, "
              "– unsupported, · not run).", "",
              "| op | kind | " + " | ".join(targets) + " |", "| --- | --- | " + " | ".join("---" for _ in targets) + " |"]
    for op, row in matrix(result):
        kind = KIND_MARK[family_kind(op)[1]]
        texts = [f"{_MARK[row[t]['status']]} {cell_text(row[t])}" if t in row else "" for t in targets]
        lines.append(f"| {op} | {kind} | " + " | ".join(texts) + " |")
    failures = result.unexpected_failures
    if failures:
        lines += ["", "## Unexpected failures", ""]
        lines += [f"- `{c.op}` {c.dtype} on {c.backend}/{c.device}: {_detail(c)}" for c in failures]
    recorded = [d for d in result.deviations if d.state != "not checked"]
    if recorded:
        lines += ["", "## Declared deviations", "", "| backend | op | dtype | device | state | max error | reason |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        lines += [f"| {d.backend} | {d.op} | {d.dtype or 'all'} | {d.device or 'all'} | {d.state} | {d.max_error} | "
                  f"{d.reason} |" for d in recorded]
    lines += _models_markdown(result.models)
    if result.type_rule_failures:
        lines += ["", "## Type rules that failed to reject bad inputs", ""]
        lines += [f"- `{t['case']}`: {t['problem']}" for t in result.type_rule_failures]
    return "\n".join(lines) + "\n"


def _models_markdown(section: dict) -> list[str]:
    """Pairwise agreement of the backends on the zoo, and bit-identity of the random draws."""
    lines = []
    if section.get("agreement"):
        tol = section["tolerance"]
        lines += ["", "## Model zoo: pairwise agreement", "",
                  f"Largest |a − b| between two backends' results (each is held to eager torch at "
                  f"atol {tol['atol']:g} + rtol {tol['rtol']:g}·|eager| in the matrix).", "",
                  "| model | mode | backends | output | loss | gradients | buffers |", "| --- | --- | --- | --- | --- | --- | --- |"]
        lines += [f"| {r['model']} | {r['mode']} | {r['a']} · {r['b']} | {r['output']:.3g} | {r['loss']:.3g} | "
                  f"{r['gradients']:.3g} | {r['buffers']:.3g} |" for r in section["agreement"]]
    if section.get("random"):
        lines += ["", "## Random draws: bits against the reference backend (fixed key)", "",
                  "| op | dtype | backend/device | bit-identical | elements differing |", "| --- | --- | --- | --- | --- |"]
        lines += [f"| {r['op']} | {r['dtype']} | {r['backend']}/{r['device']} | {'yes' if r['bit_identical'] else 'no'} | "
                  f"{r['elements_differing']} |" for r in section["random"]]
    return lines


def _verdict(result: ConformanceRun) -> str:
    parts = []
    if result.unexpected_failures:
        parts.append(f"{len(result.unexpected_failures)} unexpected failures")
    if result.crashed:
        parts.append(f"{len(result.crashed)} crashed or timed-out cells")
    if result.stale_deviations:
        parts.append(f"{len(result.stale_deviations)} stale deviations")
    if result.invalid_deviations:
        parts.append(f"{len(result.invalid_deviations)} invalid deviations (no number)")
    if result.type_rule_failures:
        parts.append(f"{len(result.type_rule_failures)} type-rule failures")
    return ", ".join(parts) or "as expected"


def _detail(c: Cell) -> str:
    bits = []
    if c.flush_to_zero:
        left = "" if c.flushed_ulp is None else f"{_fmt_ulp(c.flushed_ulp)} after flushing, "
        bits.append(f"flush-to-zero: {left}{_fmt_ulp(c.max_ulp) if c.max_ulp is not None else '-'} raw")
    elif c.max_ulp is not None:
        bits.append(f"max {_fmt_ulp(c.max_ulp)}")
    if c.worst_case:
        bits.append(f"worst case `{c.worst_case}`")
    if c.worst:
        bits.append(f"expected {c.worst.get('expected')} got {c.worst.get('got')} at {c.worst.get('index')}")
    if c.message:
        bits.append(c.message.replace("\n", " ")[:300])
    return "; ".join(bits)
