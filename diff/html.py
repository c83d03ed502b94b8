"""The HTML view of a :class:`~.report.DiffReport`: each graph drawn, nodes coloured by error.

One self-contained file (inline CSS, SVG, the JSON report embedded as
``<script type="application/json" id="diff-data">``). Each graph is drawn left to right by
depth; every node is a box whose **left half** is coloured by its local error (green
within the contract, shading to amber at the bound, red over it) and whose **right half**
by its carried error (pale to deep purple with ULPs from the end-to-end reference). The
worst path — from the guiltiest node to an output, along the largest carried error — is
drawn in thick black. Hovering a node shows its row; the ranked table follows the graphs.

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, f32
    >>> from parity.debugger import diff_graph
    >>> b = GraphBuilder(); x = b.input(f32[2]); g = b.build([b.exp(x)])
    >>> diff_graph(g, [np.ones(2, np.float32)]).to_html().startswith("<!doctype html>")
    True
"""

from __future__ import annotations

import html
import json
import math

from .report import DiffReport, NodeRow
from .terminal import number

BUG_RED = "#e31a1c"  # local error over the contract (the screenshot test looks for it)
ERROR_RED = "#8b0000"
DEVIATION_AMBER = "#f2b233"  # over the contract within a deviation the backend records
PATH_BLACK = "#111111"
_BOX_W, _BOX_H, _DX, _DY, _PAD = 28, 16, 60, 30, 24
_LABELS_UP_TO = 80  # nodes per graph: op names are drawn above the boxes of smaller graphs

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:16px;color:#222}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:16px 0 4px}
.meta{color:#555;margin:0 0 8px}
.legend span{display:inline-block;padding:2px 8px;margin-right:6px;border:1px solid #999;font-size:12px}
.graph{overflow:auto;border:1px solid #ddd;max-height:640px}
svg text{font:10px monospace}
table.rank{border-collapse:collapse;margin-top:8px;font-size:12px}
table.rank td,table.rank th{border:1px solid #ccc;padding:2px 6px;text-align:left}
table.rank td.n{text-align:right;font-family:monospace}
td.bug,td.error{background:#fbb4b4} td.deviation{background:#f2b233} td.downstream{background:#fff3b0} td.ill-conditioned{background:#e8d5f5}
"""


# Each graph's box scrolls to the start of the worst path (the guiltiest node) when the page loads.
_SCROLL = ("for(const box of document.querySelectorAll('div.graph')){const n=box.querySelector('g.path');"
           "if(n){box.scrollLeft=Math.max(0,+n.dataset.x-box.clientWidth/3);"
           "box.scrollTop=Math.max(0,+n.dataset.y-box.clientHeight/3);}}")


def local_colour(row: NodeRow) -> str:
    """Fill of a node's left half: its local error relative to the contract."""
    if row.verdict == "error":
        return ERROR_RED
    if row.verdict == "deviation":
        return DEVIATION_AMBER
    if row.local_ratio is None:
        return "#bdbdbd"
    if row.local_ratio > 1:
        return BUG_RED
    v = min(max(math.log10(max(row.local_ratio, 1e-6)) + 3, 0.0), 3.0) / 3  # 1e-3 .. 1 of the bound
    return f"hsl({130 - 85 * v:.0f},60%,{80 - 20 * v:.0f}%)"  # green, to amber at the bound


def carried_colour(row: NodeRow) -> str:
    """Fill of a node's right half: its carried error in ULPs (1 ULP pale, 1e6 deep purple)."""
    if row.carried_ulp is None:
        return "#ffffff"
    c = row.carried_ulp
    v = 1.0 if math.isinf(c) or math.isnan(c) else min(max(math.log10(max(c, 1.0)) / 6, 0.0), 1.0)
    return f"hsl(275,60%,{94 - 62 * v:.0f}%)"


def _layout(rows: list[NodeRow]) -> dict[int, tuple[int, int]]:
    """node → (column, line): column = depth from the graph inputs, line = order within it."""
    depth: dict[int, int] = {}
    for r in rows:
        depth[r.node] = 1 + max((depth.get(i, 0) for i in r.inputs if i >= 0), default=0)
    lines: dict[int, int] = {}
    where = {}
    for r in rows:
        d = depth[r.node]
        where[r.node] = (d, lines.get(d, 0))
        lines[d] = lines.get(d, 0) + 1
    return where


def _svg(rows: list[NodeRow], path: set[str]) -> str:
    where = _layout(rows)
    width = _PAD * 2 + _DX * max((c for c, _ in where.values()), default=1)
    height = _PAD * 2 + _DY * (1 + max((line for _, line in where.values()), default=0))
    centre = {n: (_PAD + _DX * (c - 1) + _BOX_W / 2, _PAD + _DY * line + _BOX_H / 2) for n, (c, line) in where.items()}
    on_path = {r.node for r in rows if r.key in path}
    labels = len(rows) <= _LABELS_UP_TO
    edges, boxes = [], []
    for r in rows:
        x2, y2 = centre[r.node]
        for i in r.inputs:
            if i < 0:
                continue
            x1, y1 = centre[i]
            hot = i in on_path and r.node in on_path
            edges.append(f'<line x1="{x1 + _BOX_W / 2:.0f}" y1="{y1:.0f}" x2="{x2 - _BOX_W / 2:.0f}" y2="{y2:.0f}" '
                         f'stroke="{PATH_BLACK if hot else "#c8c8c8"}" stroke-width="{3 if hot else 1}"/>')
        x, y = x2 - _BOX_W / 2, y2 - _BOX_H / 2
        tip = html.escape(f"{r.key} {r.op}[{r.dtype}] {r.loc}\nlocal {number(r.local_ulp)} ULP = "
                          f"{number(r.local_ratio)}× bound ({r.bound})\ncarried {number(r.carried_ulp)} ULP"
                          f"\n{r.verdict}: {r.message}")
        outline = f'stroke="{PATH_BLACK}" stroke-width="2.5"' if r.node in on_path else 'stroke="#777" stroke-width="0.5"'
        where = f' data-x="{x:.0f}" data-y="{y:.0f}"' if r.node in on_path else ""
        boxes.append(f'<g class="node {r.verdict}{" path" if r.node in on_path else ""}" data-key="{r.key}"{where}>'
                     f'<title>{tip}</title>'
                     f'<rect x="{x:.0f}" y="{y:.0f}" width="{_BOX_W // 2}" height="{_BOX_H}" fill="{local_colour(r)}"/>'
                     f'<rect x="{x + _BOX_W // 2:.0f}" y="{y:.0f}" width="{_BOX_W // 2}" height="{_BOX_H}" '
                     f'fill="{carried_colour(r)}"/>'
                     f'<rect x="{x:.0f}" y="{y:.0f}" width="{_BOX_W}" height="{_BOX_H}" fill="none" {outline}/>'
                     + (f'<text x="{x:.0f}" y="{y - 2:.0f}">{html.escape(r.op[:8])}</text>' if labels else "")
                     + "</g>")
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">'
            + "".join(edges) + "".join(boxes) + "</svg>")


def _table(report: DiffReport, top: int) -> str:
    head = "".join(f"<th>{h}</th>" for h in ("#", "node", "graph", "op", "dtype", "source", "local ULP", "bound",
                                              "local/bound", "carried ULP", "verdict"))
    body = []
    for i, r in enumerate(report.ranked()[:top], 1):
        cells = (f'<td class="n">{i}</td><td>{r.key}</td><td>{r.kind}</td><td>{html.escape(r.op)}</td>'
                 f"<td>{r.dtype}</td><td>{html.escape(r.loc)}</td><td class=\"n\">{number(r.local_ulp)}</td>"
                 f"<td>{html.escape(r.bound)}</td><td class=\"n\">{number(r.local_ratio)}</td>"
                 f'<td class="n">{number(r.carried_ulp)}</td><td class="{r.verdict}">{r.verdict}</td>')
        body.append(f"<tr>{cells}</tr>")
    return f'<table class="rank"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def to_html(report: DiffReport, *, top: int = 50) -> str:
    """The whole page (see the module docstring)."""
    from .terminal import summary_lines

    path = {r.key for r in report.worst_path()}
    sections = []
    for g in report.graphs:
        rows = [r for r in report.rows if r.graph == g.index]
        sections.append(f"<h2>graph {g.index}: {g.kind}, {g.nodes} nodes</h2>"
                        f'<div class="graph">{_svg(rows, path)}</div>')
    legend = ('<p class="legend">left half, local error / bound: <span style="background:hsl(130,60%,80%)">≪ 1'
              '</span><span style="background:hsl(45,60%,60%)">≈ 1</span>'
              f'<span style="background:{BUG_RED};color:#fff">over: backend bug</span>'
              ' right half, carried ULPs: <span style="background:hsl(275,60%,94%)">≤ 1</span>'
              '<span style="background:hsl(275,60%,63%)">10³</span><span style="background:hsl(275,60%,32%);'
              'color:#fff">≥ 10⁶</span> <span style="border:2.5px solid #111">worst path</span></p>')
    data = json.dumps(report.to_json()).replace("</", "<\\/")
    summary = "".join(f"<p class=\"meta\">{html.escape(line)}</p>" for line in summary_lines(report))
    return ("<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>parity diff: "
            f"{html.escape(report.backend)}</title><style>{_CSS}</style></head><body>"
            f"<h1>parity diff: {html.escape(report.backend)}/{html.escape(report.device)} against "
            f"{html.escape(report.against)}</h1>{summary}{legend}{''.join(sections)}"
            f"<h2>nodes ranked by local error / contract bound</h2>{_table(report, top)}"
            f'<script type="application/json" id="diff-data">{data}</script><script>{_SCROLL}</script>'
            "</body></html>\n")


__all__ = ["BUG_RED", "PATH_BLACK", "carried_colour", "local_colour", "to_html"]
