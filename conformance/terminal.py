"""The terminal view of a conformance run (rich): progress bar, matrix and summary."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from .reports import KIND_MARK, cell_text, family_kind, matrix, target_names
from .results import CRASHED, DEVIATION, FAIL, NOT_RUN, PASS, TIMED_OUT, UNSUPPORTED, ConformanceRun, ProgressFn

_STYLE = {CRASHED: "bold magenta", TIMED_OUT: "bold magenta", PASS: "green", DEVIATION: "yellow", FAIL: "bold red", UNSUPPORTED: "dim", NOT_RUN: "dim italic"}


@contextlib.contextmanager
def progress_bar(console: Console, label: str = "conform") -> Iterator[ProgressFn]:
    """A rich progress bar as a runner (or fuzzer) progress callback."""
    with Progress(TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                  TimeElapsedColumn(), console=console, transient=True) as bar:
        task = bar.add_task("", total=None)

        def update(done: int, total: int, current: str) -> None:
            bar.update(task, completed=done, total=total, description=current)

        yield update


def print_matrix(result: ConformanceRun, console: Console) -> None:
    targets = target_names(result)
    table = Table(title="parity conform: ops × backend/device (worst dtype of each op)")
    for column in ("op", "kind", *targets):
        table.add_column(column)
    for op, row in matrix(result):
        kind = KIND_MARK[family_kind(op)[1]]
        cells = []
        for t in targets:
            agg = row.get(t)
            cells.append("" if agg is None else f"[{_STYLE[agg['status']]}]{cell_text(agg)}[/]")
        table.add_row(op, kind, *cells)
    console.print(table)


def print_summary(result: ConformanceRun, console: Console) -> None:
    table = Table(title=f"{result.cases} cases in {result.elapsed_s:.1f} s (cells are op × dtype)")
    for column in ("backend/device", PASS, DEVIATION, FAIL, "crashed/timed out", UNSUPPORTED, NOT_RUN, "cases passed"):
        table.add_column(column, justify="right")
    for name, s in result.summary().items():
        dead = s[CRASHED] + s[TIMED_OUT]
        table.add_row(name, str(s[PASS]), str(s[DEVIATION]), f"[{_STYLE[FAIL]}]{s[FAIL]}[/]" if s[FAIL] else "0",
                      f"[{_STYLE[CRASHED]}]{dead}[/]" if dead else "0", str(s[UNSUPPORTED]), str(s[NOT_RUN]),
                      f"{s['cases_passed']}/{s['cases']}")
    console.print(table)
    for c in result.crashed[:40]:
        console.print(f"[{_STYLE[CRASHED]}]{c.status}[/] {escape(f'{c.op}[{c.dtype}]')} on {c.backend}/{c.device}: "
                      f"{escape(c.worst_case)} {escape(c.message[:400])}", highlight=False)
    for c in result.unexpected_failures[:40]:
        ulps = f" max {c.max_ulp:.3g} ulp" if c.max_ulp is not None else ""
        console.print(f"[bold red]unexpected failure[/] {escape(f'{c.op}[{c.dtype}]')} on {c.backend}/{c.device}:"
                      f"{ulps} {escape(c.worst_case)} {escape(c.message[:200])}", highlight=False)
    if len(result.unexpected_failures) > 40:
        console.print(f"... and {len(result.unexpected_failures) - 40} more (see the JSON/HTML report)")
    for d in result.stale_deviations:
        console.print(f"[bold red]stale deviation[/] {d.backend}: {d.op} {d.dtype or 'all dtypes'} on "
                      f"{d.device or 'all devices'} no longer happens ({escape(d.reason)}); remove it", highlight=False)
    for d in result.invalid_deviations:
        console.print(f"[bold red]invalid deviation[/] {d.backend}: {d.op} {d.dtype or 'all dtypes'}: "
                      f"{escape(d.problem)}", highlight=False)
    for t in result.type_rule_failures:
        console.print(f"[bold red]type rule[/] {escape(t['case'])}: {escape(t['problem'])}", highlight=False)
    for t in result.targets:
        if t.error:
            console.print(f"[yellow]backend {t.backend} not loaded[/]: {escape(t.error)}", highlight=False)
    verdict = "[green]as expected[/]" if result.exit_code == 0 else "[bold red]unexpected results[/]"
    console.print(f"type rules: {len(result.type_rules) - len(result.type_rule_failures)}/{len(result.type_rules)} "
                  f"bad inputs rejected with their message; conformance {verdict} (exit {result.exit_code})")
