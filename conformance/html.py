"""The self-contained HTML report: a heatmap of ops × (backend/device, dtype).

One file, no external assets: inline CSS and JS, and the JSON report embedded as
``<script type="application/json" id="conformance-data">``. Each heatmap cell is a
``<td class="c STATUS" data-cell="i">`` (``i`` indexes ``cells`` in the JSON); passing
cells are shaded by how much of their bound they use, failures by their error. Hover
shows a summary (``title``); a click shows the cell's details in the side panel, and so
does a link to ``report.html#cell=i``.
"""

from __future__ import annotations

import html
import json
import math

from ..ir.dtypes import DType
from .jax_frontend.spec import FRONTEND_FAMILY
from .machine import differing_cpus
from .opdb import FAMILIES
from .reports import matrix, to_json
from .results import ConformanceRun

_STATUS_CLASS = {"crashed": "crash", "timed out": "crash", "pass": "pass", "deviation": "dev", "fail": "fail",
                 "unsupported": "unsup", "not run": "notrun"}

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:16px;color:#222}
h1{font-size:20px;margin:0 0 4px}
.meta{color:#555;margin:0 0 12px}
table{border-collapse:collapse}
table.summary td,table.summary th{border:1px solid #ccc;padding:2px 8px;text-align:right}
table.summary th:first-child,table.summary td:first-child{text-align:left}
table.devs td,table.devs th{text-align:left}
.legend span{display:inline-block;padding:2px 8px;margin-right:6px;border:1px solid #999;font-size:12px}
#wrap{display:flex;gap:16px;align-items:flex-start;margin-top:8px}
table.heat th{font-weight:normal;font-size:11px;padding:1px 3px;white-space:nowrap}
table.heat thead th{position:sticky;top:0;background:#fff}
table.heat tbody th{text-align:left;font-family:monospace;font-size:12px}
table.heat th.target{border-left:2px solid #444}
td.c{width:13px;height:13px;border:1px solid #fff;padding:0;cursor:pointer}
td.c.first{border-left:2px solid #444}
td.c.none{background:#f4f4f4;cursor:default}
td.c.pass{background:hsl(130,55%,calc(88% - var(--v,0)*40%))}
td.c.dev{background:#f2b233}
td.c.crash{background:#7b1fa2}
td.c.fail{background:hsl(0,75%,calc(62% - var(--v,0)*30%))}
td.c.unsup{background:#bdbdbd}
td.c.notrun{background:repeating-linear-gradient(45deg,#fff 0 3px,#ddd 3px 5px)}
td.c.sel{outline:2px solid #000}
tr.fam th{padding-top:8px;font-weight:bold;font-size:12px}
#details{position:sticky;top:8px;min-width:320px;max-width:460px;border:1px solid #ccc;padding:8px;font-size:12px}
#details pre{white-space:pre-wrap;word-break:break-all;margin:4px 0}
#filter{margin:8px 0;padding:3px 6px;width:260px}
"""

_JS = r"""
const data = JSON.parse(document.getElementById('conformance-data').textContent);
const panel = document.getElementById('details');
let selected = null;
function show(td){
  const c = data.cells[+td.dataset.cell];
  if (selected) selected.classList.remove('sel');
  selected = td; td.classList.add('sel');
  const rows = [['op', c.op + ' (' + c.kind + ', ' + c.family + ')'], ['dtype', c.dtype],
    ['target', c.backend + '/' + c.device], ['status', c.status], ['path', c.path || '-'],
    ['cases', c.passed + ' passed / ' + c.cases + (c.unsupported ? ' (' + c.unsupported + ' unsupported)' : '')
      + (c.declined ? ' (' + c.declined + ' declined by the claim\'s predicate)' : '')],
    ['max ULP', c.max_ulp === null ? '-' : c.max_ulp], ['error / bound', c.max_ratio]];
  if (c.flush_to_zero) rows.splice(6, 0, ['flush-to-zero', (c.flushed_ulp === null ? '-' : c.flushed_ulp) + ' ULP after flushing (max ULP is the raw figure)']);
  if (c.worst_case) rows.push(['worst case', c.worst_case]);
  let h = '<table>' + rows.map(r => '<tr><th>' + r[0] + '</th><td>' + esc(String(r[1])) + '</td></tr>').join('') + '</table>';
  if (c.worst && Object.keys(c.worst).length) h += '<b>worst element</b><pre>' + esc(JSON.stringify(c.worst, null, 1)) + '</pre>';
  if (c.deviation) h += '<b>declared deviation</b><pre>' + esc(JSON.stringify(c.deviation, null, 1)) + '</pre>';
  if (c.message) h += '<b>message</b><pre>' + esc(c.message) + '</pre>';
  panel.innerHTML = h;
}
function esc(s){return s.replace(/[&<>]/g, ch => ({'&':'&amp;','<':'&lt;','>':'&gt;'}[ch]));}
document.querySelectorAll('td.c[data-cell]').forEach(td => td.addEventListener('click', () => show(td)));
const linked = location.hash.match(/^#cell=(\d+)$/);  // a link to one cell: report.html#cell=12
if (linked) { const td = document.querySelector('td.c[data-cell="' + linked[1] + '"]'); if (td) show(td); }
document.getElementById('filter').addEventListener('input', e => {
  let re; try { re = new RegExp(e.target.value); } catch (err) { return; }
  document.querySelectorAll('tr[data-op]').forEach(tr => { tr.style.display = re.test(tr.dataset.op) ? '' : 'none'; });
});
"""


def _shade(cell: dict) -> float:
    """0..1: how much of its bound a passing cell uses; how large a failure's error is."""
    if cell["status"] == "pass":
        ratio = cell["max_ratio"]
        return 0.0 if not isinstance(ratio, (int, float)) else max(0.0, min(1.0, ratio))
    ulps = cell["flushed_ulp"] if cell.get("flush_to_zero") else cell["max_ulp"]
    if not isinstance(ulps, (int, float)) or ulps <= 0:
        return 0.0 if cell.get("flush_to_zero") else 1.0
    return max(0.0, min(1.0, math.log10(1 + ulps) / 8))


def _title(c: dict) -> str:
    text = f"{c['op']} {c['dtype']} on {c['backend']}/{c['device']}: {c['status']}"
    if c.get("flush_to_zero"):
        left = c.get("flushed_ulp")
        text += " (flush-to-zero" + (f", {left:.3g} ulp after flushing" if isinstance(left, (int, float)) else "") + ")"
    if c["max_ulp"] is not None:
        text += f", max {c['max_ulp']:.3g} ulp" if isinstance(c["max_ulp"], float) else f", max {c['max_ulp']} ulp"
    if c["cases"]:
        text += f", {c['passed']}/{c['cases']} cases"
    return text


def to_html(result: ConformanceRun) -> str:
    """The report page (see the module docstring)."""
    doc = to_json(result)
    targets = [f"{t['backend']}/{t['device']}" for t in doc["targets"]]
    used = {c["dtype"] for c in doc["cells"]}
    dtypes = [d.short for d in DType if d.short in used]  # complex columns too
    index = {(c["op"], c["dtype"], f"{c['backend']}/{c['device']}"): i for i, c in enumerate(doc["cells"])}
    family_of = {c["op"]: c["family"] for c in doc["cells"]}
    out = ["<!doctype html><html lang='en'><head><meta charset='utf-8'><title>parity conformance</title>",
           f"<style>{_CSS}</style></head><body>", "<h1>parity conformance</h1>",
           f"<p class='meta'>{doc['cases']} cases · {len(family_of)} ops · {doc['elapsed_s']} s · "
           f"exit code {doc['exit_code']} · {html.escape(doc['created'])} · parity {doc['parity_version']}</p>",
           _summary_table(doc), _legend(),
           "<input id='filter' placeholder='filter ops (regular expression)'>", "<div id='wrap'>",
           "<table class='heat'><thead><tr><th rowspan='2'>op</th>"]
    out += [f"<th class='target' colspan='{len(dtypes)}'>{html.escape(t)}</th>" for t in targets]
    out.append("</tr><tr>")
    for _ in targets:
        out += [f"<th{' class=target' if k == 0 else ''}>{d}</th>" for k, d in enumerate(dtypes)]
    out.append("</tr></thead><tbody>")
    family = None
    order = list(FAMILIES) + ["graphs", "models", "random draws", FRONTEND_FAMILY]
    for op, _row in sorted(matrix(result), key=lambda row: order.index(family_of[row[0]])):  # stable: table order
        if family_of[op] != family:
            family = family_of[op]
            out.append(f"<tr class='fam'><th colspan='{1 + len(targets) * len(dtypes)}'>{family}</th></tr>")
        out.append(f"<tr data-op='{html.escape(op)}'><th>{html.escape(op)}</th>")
        for t in targets:
            for k, d in enumerate(dtypes):
                first = " first" if k == 0 else ""
                i = index.get((op, d, t))
                if i is None:
                    out.append(f"<td class='c none{first}'></td>")
                    continue
                c = doc["cells"][i]
                out.append(f"<td class='c {_STATUS_CLASS[c['status']]}{first}' data-cell='{i}' "
                           f"style='--v:{_shade(c):.2f}' title='{html.escape(_title(c), quote=True)}'></td>")
        out.append("</tr>")
    out += ["</tbody></table>", "<aside id='details'>Click a cell for its details.</aside></div>",
            _deviation_list(doc), _agreement_table(doc), _device_agreement_table(doc),
            "<script type='application/json' id='conformance-data'>"
            + json.dumps(doc).replace("</", "<\\/") + "</script>",
            f"<script>{_JS}</script></body></html>"]
    return "\n".join(out)


def _summary_table(doc: dict) -> str:
    head = ["backend/device", "pass", "deviation", "fail", "crashed / timed out", "unsupported", "not run",
            "cases passed"]
    rows = ["<table class='summary'><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>"]
    for name, s in doc["summary"].items():
        vals = [name, s["pass"], s["deviation"], s["fail"], s.get("crashed", 0) + s.get("timed out", 0),
                s["unsupported"], s["not run"],
                f"{s['cases_passed']}/{s['cases']}"]
        rows.append("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in vals) + "</tr>")
    return "".join(rows) + "</table>"


def _legend() -> str:
    items = [("pass", "pass (darker: closer to the bound)"), ("dev", "recorded deviation"),
             ("fail", "fail (darker: larger error)"), ("crash", "crashed its worker / timed out"),
             ("unsup", "unsupported"), ("notrun", "not run (device absent)")]
    spans = "".join(f"<span style='background:{_LEGEND_COLOR[cls]}'>{text}</span>" for cls, text in items)
    return f"<p class='legend'>{spans}</p>"


_LEGEND_COLOR = {"pass": "hsl(130,55%,70%)", "dev": "#f2b233", "fail": "hsl(0,75%,55%)", "crash": "#7b1fa2",
                 "unsup": "#bdbdbd",
                 "notrun": "repeating-linear-gradient(45deg,#fff 0 3px,#ddd 3px 5px)"}


def _agreement_table(doc: dict) -> str:
    """--models: the largest difference between each pair of backends on each zoo model."""
    rows = (doc.get("models") or {}).get("agreement") or []
    if not rows:
        return ""
    cols = ("output", "loss", "gradients", "buffers")
    body = "".join(f"<tr><td>{html.escape(r['model'])}</td><td>{r['mode']}</td><td>{html.escape(r['a'])} · "
                   f"{html.escape(r['b'])}</td>" + "".join(f"<td>{_num(r[c])}</td>" for c in cols) + "</tr>"
                   for r in rows)
    return ("<h2 id='agreement'>Model zoo: pairwise agreement (max |a − b|)</h2><table class='summary'><tr>"
            "<th>model</th><th>mode</th><th>backends</th>" + "".join(f"<th>{c}</th>" for c in cols)
            + f"</tr>{body}</table>")


_VERDICT_CLASS = {"bit-identical": "pass", "agree within contract": "dev", "disagree": "fail"}


def _device_agreement_table(doc: dict) -> str:
    """A merged run: each (backend, op, dtype) run on several devices or machines, and how their outputs compare."""
    rows = doc.get("device_agreement") or []
    if not rows:
        return ""
    counts = {v: sum(r["verdict"] == v for r in rows) for v in _VERDICT_CLASS}
    body = "".join(
        f"<tr class='agree'><td>{html.escape(r['backend'])}</td><td>{html.escape(r['op'])}</td><td>{r['dtype']}</td>"
        f"<td>{html.escape(' · '.join(r['places']))}</td><td class='c {_VERDICT_CLASS[r['verdict']]}'>{r['verdict']}"
        f"</td><td>{r['cases']}</td><td>{html.escape(', '.join(r['differing_cases'][:4]))}</td></tr>" for r in rows)
    cpus = differing_cpus((doc.get("options") or {}).get("cpus"))
    note = f"<p class='cpus'>{html.escape(cpus[0].upper() + cpus[1:])}.</p>" if cpus else ""
    return ("<h2 id='device-agreement'>Device agreement (" + ", ".join(f"{n} {v}" for v, n in counts.items())
            + f")</h2>{note}<table class='summary'><tr><th>backend</th><th>op</th><th>dtype</th><th>where</th>"
            f"<th>outputs</th><th>cases</th><th>cases that differ</th></tr>{body}</table>")


def _num(v) -> str:
    return html.escape(v) if isinstance(v, str) else f"{v:.3g}"


def _deviation_list(doc: dict) -> str:
    devs = [d for d in doc["deviations"] if d["state"] != "not checked"]
    if not devs:
        return ""
    rows = "".join(f"<tr><td>{html.escape(d['backend'])}</td><td>{html.escape(d['op'])}</td>"
                   f"<td>{d['dtype'] or 'all'}</td><td>{d['device'] or 'all'}</td><td>{d['state']}</td>"
                   f"<td>{html.escape(d['max_error'])}</td><td>{html.escape(d['reason'])}</td></tr>" for d in devs)
    return ("<h2>Declared deviations</h2><table class='summary devs'><tr><th>backend</th><th>op</th><th>dtype</th>"
            f"<th>device</th><th>state</th><th>max error</th><th>reason</th></tr>{rows}</table>")
