"""The terminal view of a :class:`~.report.DiffReport`: a rich table of the ranked nodes.

Columns: rank, node (``g0.n12``: graph 0, node 12), graph kind, op, dtype, the user's
source line, local error in ULPs, the contract bound, local error / bound, carried error
in ULPs (normwise, against the end-to-end reference), and the verdict. A summary under it
names the guiltiest node, what the end-to-end baseline would have blamed, and the time.

Example::

    >>> import io, numpy as np
    >>> from rich.console import Console
    >>> from parity.ir import GraphBuilder, f32
    >>> from parity.debugger import diff_graph
    >>> b = GraphBuilder(); x = b.input(f32[2]); g = b.build([b.exp(x)])
    >>> out = io.StringIO(); diff_graph(g, [np.ones(2, np.float32)]).print(Console(file=out, width=160))
    >>> "no node is over its contract" in out.getvalue()
    True
"""

from __future__ import annotations

import math

from .report import DiffReport

_STYLE = {"error": "bold red", "bug": "bold red", "deviation": "dark_orange", "downstream": "yellow", "ill-conditioned": "magenta",
          "unsupported": "dim", "ok": "green"}


def number(v: float | None, digits: int = 3) -> str:
    """A short figure for a table cell: ``—`` for None, ``inf``, or ``digits`` significant digits."""
    if v is None:
        return "—"
    if math.isinf(v):
        return "inf"
    if math.isnan(v):
        return "nan"
    return f"{v:.{digits}g}"


def short_loc(loc: str, width: int = 48) -> str:
    """The source line, its path shortened from the left to ``width`` characters."""
    return loc if len(loc) <= width else "…" + loc[-(width - 1):]


def print_report(report: DiffReport, console=None, *, top: int = 20) -> None:
    """Print the ``top`` ranked rows and the summary to ``console`` (default: stdout)."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    table = Table(title=f"parity diff: {report.backend}/{report.device} against {report.against} "
                        f"— nodes ranked by local error / contract bound")
    for name, justify in (("#", "right"), ("node", "left"), ("graph", "left"), ("op", "left"), ("dtype", "left"),
                          ("source", "left"), ("local ULP", "right"), ("bound", "left"), ("local/bound", "right"),
                          ("carried ULP", "right"), ("verdict", "left")):
        table.add_column(name, justify=justify, overflow="fold", no_wrap=name not in ("source", "bound"))
    for i, row in enumerate(report.ranked()[:top], 1):
        style = _STYLE.get(row.verdict, "")
        table.add_row(str(i), row.key, row.kind, row.op, row.dtype, short_loc(row.loc), number(row.local_ulp),
                      row.bound, number(row.local_ratio), number(row.carried_ulp),
                      f"[{style}]{row.verdict}[/{style}]" if style else row.verdict)
    console.print(table)
    for line in summary_lines(report):
        console.print(line, highlight=False, markup=False, soft_wrap=True)


def summary_lines(report: DiffReport) -> list[str]:
    """The plain-text summary under the table."""
    counts = report.counts()
    lines = [f"{len(report.rows)} nodes in {len(report.graphs)} graph(s): "
             + ", ".join(f"{n} {v}" for v, n in counts.items() if n)]
    guilty = report.guilty()
    if guilty:
        g = guilty[0]
        lines.append(f"guiltiest: {g.key} {g.op}[{g.dtype}] at {g.loc or '(no source line)'}: "
                     f"{g.message or g.verdict}; local {number(g.local_ratio)}× its bound ({g.bound})")
    else:
        lines.append("no node is over its contract on its own operands"
                     + ("; the carried error is the model's ill-conditioning" if counts["ill-conditioned"] else ""))
    baseline = report.first_over_tolerance()
    if baseline is not None:
        lines.append(f"end-to-end comparison (first tensor over rtol=atol=1e-5) would blame {baseline.key} "
                     f"{baseline.op} at {baseline.loc or '(no source line)'}")
    extra = f", peak {report.peak_bytes / 1e6:.1f} MB traced" if report.peak_bytes is not None else ""
    lines.append(f"{report.seconds:.1f} s, {report.compiles} backend compilations{extra}")
    return lines


__all__ = ["number", "print_report", "short_loc", "summary_lines"]
