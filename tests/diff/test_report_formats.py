"""JSON schema, the terminal table, and the HTML view (parsed; and in headless chromium,
where installed, with the screenshot's pixels read)."""

import html.parser
import io
import json
import shutil
import subprocess

import pytest
from rich.console import Console

from parity.debugger import diff_graph
from parity.debugger.html import BUG_RED
from parity.debugger.planted import planted_runner
from parity.debugger.report import SCHEMA_VERSION, VERDICTS

from .graphs import mixed

ROW_KEYS = {"key", "graph", "kind", "node", "op", "dtype", "shape", "loc", "local_ratio", "local_ulp", "bound",
            "carried_ulp", "carried_rel", "over_tolerance", "verdict", "message", "mismatches", "compared", "worst",
            "inputs", "is_output"}


@pytest.fixture(scope="module")
def report():
    graph, arrays = mixed()
    node = next(n for n in graph.nodes if n.op == "gather")
    runner, _ = planted_runner("reference", node, "wrong_index")
    return diff_graph(graph, arrays, runner=runner)


def test_json_schema(report):
    doc = json.loads(json.dumps(report.to_json()))  # strict JSON: inf becomes "inf"
    assert doc["schema"] == SCHEMA_VERSION
    assert {"backend", "device", "against", "graphs", "counts", "ranking", "guilty", "first_over_tolerance",
            "worst_path", "rows", "peak_bytes", "activation_bytes", "seconds", "compiles"} <= set(doc)
    assert set(doc["counts"]) == set(VERDICTS)
    assert all(set(r) == ROW_KEYS for r in doc["rows"])
    assert doc["ranking"][0] == doc["guilty"][0] == "g0.n3"
    top = next(r for r in doc["rows"] if r["key"] == "g0.n3")
    assert top["local_ratio"] == "inf" and top["bound"] == "bit-exact" and top["verdict"] == "bug"
    assert doc["worst_path"][0] == "g0.n3" and doc["worst_path"][-1] == "g0.n5"
    assert sorted(doc["ranking"]) == sorted(r["key"] for r in doc["rows"])


def test_terminal_table(report):
    out = io.StringIO()
    report.print(Console(file=out, width=200))
    text = out.getvalue()
    assert "gather" in text and "bit-exact" in text and "bug" in text
    assert "guiltiest: g0.n3 gather[f32]" in text


class _Parser(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.nodes, self.data = [], ""
        self._in_data = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "g" and "node" in attrs.get("class", ""):
            self.nodes.append(attrs)
        self._in_data = tag == "script" and attrs.get("id") == "diff-data"

    def handle_data(self, data):
        if self._in_data:
            self.data += data


def test_html_structure(report):
    page = report.to_html()
    parser = _Parser()
    parser.feed(page)
    assert len(parser.nodes) == len(report.rows)
    classes = {n["data-key"]: n["class"].split() for n in parser.nodes}
    assert classes["g0.n3"] == ["node", "bug", "path"]  # the worst path starts at the guilty node
    assert [k for k, c in classes.items() if "path" in c] == report.to_json()["worst_path"]
    assert json.loads(parser.data)["guilty"] == ["g0.n3"]
    assert BUG_RED in page


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium); "
                                             "test_html_structure still checks the page")
def test_html_in_headless_chromium(report, tmp_path):
    page = tmp_path / "diff.html"
    page.write_text(report.to_html(), encoding="utf-8")
    shot = tmp_path / "shot.png"
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1200,800", f"--screenshot={shot}",
                    page.as_uri()], capture_output=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 10_000
    image = pytest.importorskip("PIL.Image", reason="Pillow reads the screenshot's pixels").open(shot).convert("RGB")
    colours = {rgb for _, rgb in image.getcolors(image.width * image.height)}
    red = tuple(int(BUG_RED[i:i + 2], 16) for i in (1, 3, 5))
    assert red in colours  # the guilty node's left half (and the legend)
    assert any(r > 200 and 150 < g < 235 and b > 220 for r, g, b in colours)  # carried error: pale purple
    assert any(r < 40 and g < 40 and b < 40 for r, g, b in colours)  # the worst path's black
