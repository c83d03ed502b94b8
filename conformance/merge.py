"""One matrix from the reports of several machines (``parity conform merge a.json b.json``).

Each machine runs ``parity conform --json`` on the backends and devices it has; the merge
joins their cells into one matrix. A (backend, device) target that one report ran and
another only lists as *not run* takes the cells of the report that ran it. Reports of
different parity versions, or of different suites (the op database and regressions, by
the digest of their case ids), are refused by name: their cells do not measure the
same thing.

Every case result carries a digest of its outputs, so the merge can say, for each
(backend, op, dtype) run on more than one device or machine, whether they gave
*bit-identical* outputs on the same inputs, outputs that only *agree within the
contract* (each passes against the oracle), or outputs that *disagree* (one passes,
one does not).

Example::

    >>> from parity.conformance import reports, runner
    >>> a = reports.to_json(runner.run(["reference"], ops="^neg$"))
    >>> b = reports.to_json(runner.run(["numpy"], ops="^neg$"))
    >>> merged = merge([a, b], ["host-a", "host-b"])
    >>> sorted({c.backend for c in merged.cells}), merged.exit_code
    (['numpy', 'reference'], 0)
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import fields

from .machine import differing_cpus
from .results import DEVIATION, NOT_RUN, PASS, Cell, ConformanceRun, DeviationCheck, Target

BIT_IDENTICAL, WITHIN_CONTRACT, DISAGREE = "bit-identical", "agree within contract", "disagree"
_CELL_FIELDS = {f.name for f in fields(Cell)}


class MergeRefused(ValueError):
    """Reports that cannot share one matrix."""


def merge(docs: Sequence[dict], names: Sequence[str]) -> ConformanceRun:
    """The run the reports ``docs`` (``reports.to_json`` dicts, from the files ``names``) make together."""
    _check_compatible(docs, names)
    targets: dict[tuple[str, str], Target] = {}
    source: dict[tuple[str, str], str] = {}
    for doc, name in zip(docs, names):
        for t in doc["targets"]:
            key = (t["backend"], t["device"])
            if key not in targets or (t["available"] and not targets[key].available):
                targets[key] = Target(t["backend"], t["device"], t["available"], None, t["error"])
                source[key] = name
    cells: dict[tuple, Cell] = {}
    runs: dict[tuple, list[tuple[str, Cell]]] = defaultdict(list)  # (backend, op, dtype) → (where, cell)
    for doc, name in zip(docs, names):
        for row in doc["cells"]:
            cell = Cell(**{k: v for k, v in row.items() if k in _CELL_FIELDS})
            key = (cell.op, cell.dtype, cell.backend, cell.device)
            if cell.status != NOT_RUN:
                runs[(cell.backend, cell.op, cell.dtype)].append((f"{name}:{cell.device}", cell))
            if source[(cell.backend, cell.device)] == name or key not in cells:
                cells[key] = cell
    order = list(targets)
    merged = sorted(cells.values(), key=lambda c: order.index((c.backend, c.device)))
    deviations = {(d["backend"], d["op"], d["dtype"], d["device"], d["state"]): DeviationCheck(**d)
                  for doc in docs for d in doc["deviations"]}
    type_rules = [t for doc in docs for t in doc["type_rules"]["failures"]]
    options = {"merged": list(names), "options": [doc["options"] for doc in docs],
               "cpus": {name: _cpu(doc) for doc, name in zip(docs, names)}}
    return ConformanceRun(list(targets.values()), merged, list(deviations.values()), type_rules,
                          max(doc["cases"] for doc in docs), sum(doc["elapsed_s"] for doc in docs), options,
                          device_agreement=device_agreement(runs))


def device_agreement(runs: dict[tuple, list[tuple[str, Cell]]]) -> list[dict]:
    """Per (backend, op, dtype) that ran in more than one place: how their outputs compare."""
    out = []
    for (backend, op, dtype), places in runs.items():
        places = [(where, c) for where, c in places if c.hashes]
        if len(places) < 2:
            continue
        common = set.intersection(*(set(c.hashes) for _, c in places))
        same = all(len({c.hashes[i] for _, c in places}) == 1 for i in common)
        if common and same:
            verdict = BIT_IDENTICAL
        elif all(c.status in (PASS, DEVIATION) for _, c in places):
            verdict = WITHIN_CONTRACT
        else:
            verdict = DISAGREE
        differing = sorted(i for i in common if len({c.hashes[i] for _, c in places}) > 1)
        out.append({"backend": backend, "op": op, "dtype": dtype, "places": [w for w, _ in places],
                    "verdict": verdict, "cases": len(common), "differing_cases": differing,
                    "statuses": [c.status for _, c in places]})
    return out


def _cpu(doc: dict) -> dict | None:
    """The CPU a report ran on (``environment.cpu``: model and vector extensions); None for a
    report written before reports named it."""
    return doc.get("environment", {}).get("cpu")


def _check_compatible(docs: Sequence[dict], names: Sequence[str]) -> None:
    if len(docs) < 2:
        raise MergeRefused("merge needs two or more reports (parity conform --json from each machine)")
    for field_name, what in (("schema", "report schema"), ("version", "report schema version"),
                             ("parity_version", "parity version"), ("suite", "conformance suite")):
        seen = {str(doc.get(field_name)): name for doc, name in zip(docs, names)}
        if len(seen) > 1:
            listed = ", ".join(f"{name} has {value}" for value, name in seen.items())
            raise MergeRefused(f"cannot merge reports of different {what}s ({listed}). Run the same parity "
                               f"(and suite) on every machine, then merge again.")


def merge_files(words: Sequence[str], *, json_path=None, html_path=None, markdown_path=None, console=None) -> int:
    """``parity conform merge a.json b.json ...``: print the merged summary, write the reports;
    the exit status is the merged run's (2 when the reports cannot be merged)."""
    import json
    import pathlib

    from rich.console import Console

    from . import terminal
    from .writers import write_reports

    console = console or Console()
    if words[0] != "merge":
        console.print(f"[bold red]parity conform:[/] unexpected argument {words[0]!r}; did you mean "
                      f"'parity conform merge {' '.join(words)}'?", highlight=False)
        return 2
    try:
        docs = [json.loads(pathlib.Path(w).read_text(encoding="utf-8")) for w in words[1:]]
        result = merge(docs, [pathlib.Path(w).stem for w in words[1:]])
    except (OSError, ValueError, KeyError) as exc:
        console.print(f"[bold red]parity conform merge:[/] {exc}", highlight=False)
        return 2
    terminal.print_summary(result, console)
    cpus = differing_cpus(result.options.get("cpus"))
    if cpus is not None:
        console.print(f"[bold yellow]note:[/] {cpus}", highlight=False)
    agreement = defaultdict(int)
    for row in result.device_agreement:
        agreement[row["verdict"]] += 1
    console.print("device agreement: " + (", ".join(f"{n} {v}" for v, n in agreement.items()) or "nothing ran twice"),
                  highlight=False)
    write_reports(result, json_path=json_path, markdown_path=markdown_path, html_path=html_path, console=console)
    return result.exit_code
