"""The three report formats (JSON schema, Markdown matrix, self-contained HTML heatmap),
the HTML checked by parsing and, where chromium is installed, in a real headless browser."""

import html.parser
import json
import pathlib
import shutil
import subprocess

import pytest

from parity.backends.registry import register_backend, unregister_backend
from parity.cli import main
from parity.conformance import html as html_report
from parity.conformance import reports, runner

from .test_runner import WrongBackend


@pytest.fixture(scope="module")
def result():
    backend = WrongBackend()
    register_backend(backend)
    try:
        yield runner.run(["reference", "wrong"], ops="^(exp|log|cos|sort|tanh|neg)$", quick=True)
    finally:
        unregister_backend(backend.name)


def test_json_schema(result):
    doc = reports.to_json(result)
    text = json.dumps(doc, allow_nan=False)  # strictly valid JSON: no NaN/Infinity literals
    assert json.loads(text) == doc
    assert (doc["schema"], doc["version"]) == ("parity.conformance", reports.SCHEMA_VERSION)
    assert set(doc) == {"schema", "version", "parity_version", "suite", "created", "elapsed_s", "environment",
                        "options", "cases", "targets", "cells", "deviations", "type_rules", "summary", "exit_code",
                        "models", "device_agreement"}
    assert len(doc["suite"]) == 12 and doc["device_agreement"] == []  # filled by a merge (test_merge.py)
    assert doc["models"] == {} and doc["options"]["models"] is False  # filled by --models (test_zoo.py)
    assert doc["exit_code"] == 1 and doc["cases"] == result.cases
    assert {t["backend"] + "/" + t["device"] for t in doc["targets"]} == {"reference/cpu", "wrong/cpu", "wrong/cuda"}
    cell_keys = {"op", "family", "kind", "dtype", "backend", "device", "status", "cases", "passed", "failed",
                 "unsupported", "declined", "path", "max_ulp", "max_ratio", "worst_case", "worst", "message", "deviation",
                 "explained_by", "flush_to_zero", "flushed_ulp", "hashes"}
    assert all(set(c) == cell_keys for c in doc["cells"])
    cos = next(c for c in doc["cells"] if c["op"] == "cos" and c["dtype"] == "f32" and c["backend"] == "wrong"
               and c["device"] == "cpu")
    assert cos["status"] == "fail" and cos["max_ratio"] == "inf" and "no kernel for cos" in cos["message"]
    assert {d["op"]: d["state"] for d in doc["deviations"]} == {"exp": "recorded", "log": "recorded",
                                                                "tanh": "stale"}
    assert doc["summary"]["wrong/cuda"]["not run"] == len([c for c in doc["cells"] if c["device"] == "cuda"])


def test_markdown_has_summary_matrix_and_failures(result):
    md = reports.to_markdown(result)
    assert "| backend/device | pass | deviation | fail | crashed / timed out | unsupported | not run | cases passed |" in md
    assert "| op | kind | reference/cpu | wrong/cpu | wrong/cuda |" in md
    row = next(line for line in md.splitlines() if line.startswith("| cos |"))
    assert row.split(" | ")[2:] == ["✅ pass", "❌ fail", "· not run |"]
    assert next(line for line in md.splitlines() if line.startswith("| sort |")).split(" | ")[3] == "– unsupported"
    assert "## Unexpected failures" in md and "`log` f32 on wrong/cpu" in md
    assert "| wrong | tanh | f32 | cpu | stale | 3 ulp |" in md


class _Cells(html.parser.HTMLParser):
    """Collects heatmap cells, external references and the embedded JSON."""

    def __init__(self):
        super().__init__()
        self.cells, self.external, self.data, self._in_data = [], [], "", False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "td" and "c" in a.get("class", "").split():
            self.cells.append(a)
        if tag in ("script", "link", "img") and (a.get("src") or a.get("href")):
            self.external.append(a)
        self._in_data = tag == "script" and a.get("id") == "conformance-data"

    def handle_data(self, data):
        if self._in_data:
            self.data += data

    def handle_endtag(self, tag):
        self._in_data = False


def test_html_is_self_contained_with_one_cell_per_json_cell(result):
    page = html_report.to_html(result)
    parser = _Cells()
    parser.feed(page)
    assert not parser.external  # no external assets
    doc = json.loads(parser.data)
    assert doc["cells"] == reports.to_json(result)["cells"]
    data_cells = [c for c in parser.cells if "data-cell" in c]
    assert sorted(int(c["data-cell"]) for c in data_cells) == list(range(len(doc["cells"])))
    status_class = {"pass": "pass", "deviation": "dev", "fail": "fail", "unsupported": "unsup", "not run": "notrun"}
    for c in data_cells:
        cell = doc["cells"][int(c["data-cell"])]
        assert status_class[cell["status"]] in c["class"].split()
        assert c["title"].startswith(f"{cell['op']} {cell['dtype']} on {cell['backend']}/{cell['device']}: ")
    # dtypes an op does not accept are empty, not coloured: neg takes no bool or unsigned ints.
    assert any("none" in c["class"].split() for c in parser.cells)


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium); the "
                                             "parse test above still checks the page")
def test_html_in_headless_chromium(result, tmp_path):
    page = tmp_path / "conformance.html"
    page.write_text(html_report.to_html(result), encoding="utf-8")
    doc = reports.to_json(result)
    i = next(k for k, c in enumerate(doc["cells"]) if c["op"] == "cos" and c["backend"] == "wrong"
             and c["device"] == "cpu" and c["dtype"] == "f32")
    url = f"{page.as_uri()}#cell={i}"
    base = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1400,900"]
    dom = subprocess.run(base + ["--dump-dom", url], capture_output=True, text=True, timeout=120).stdout
    # The script ran: the linked cell is selected and its details (message included) are in the panel.
    assert 'class="c fail first sel"' in dom or 'class="c fail sel"' in dom
    panel = dom.split('id="details"', 1)[1].split("</aside>", 1)[0]
    assert "cos (primitive, elementwise)" in panel and "no kernel for cos" in panel
    shot = tmp_path / "shot.png"
    subprocess.run(base + [f"--screenshot={shot}", url], capture_output=True, timeout=120)
    assert shot.stat().st_size > 10_000
    image = pytest.importorskip("PIL.Image", reason="Pillow reads the screenshot's pixels").open(shot).convert("RGB")
    colours = {rgb for _, rgb in image.getcolors(image.width * image.height)}
    # The page was painted: a deviation cell's amber (#f2b233) and some failure red are on screen.
    assert (0xF2, 0xB2, 0x33) in colours
    assert any(r > 150 and g < 90 and b < 90 for r, g, b in colours)


def test_cli_writes_all_three_reports(tmp_path, capsys):
    paths = {kind: tmp_path / f"out.{kind}" for kind in ("json", "md", "html")}
    code = main(["conform", "--backend", "reference", "--ops", "^(neg|sqrt)$", "--dtype", "f32", "--dtype", "i8",
                 "--json", str(paths["json"]), "--markdown", str(paths["md"]), "--html", str(paths["html"])])
    assert code == 0
    out = capsys.readouterr().out
    assert "reference/cpu" in out and "as expected" in out
    doc = json.loads(paths["json"].read_text())
    assert {(c["op"], c["dtype"]) for c in doc["cells"]} == {("neg", "f32"), ("neg", "i8"), ("sqrt", "f32")}
    assert "| neg | P | ✅ pass |" in paths["md"].read_text()
    assert pathlib.Path(paths["html"]).read_text().startswith("<!doctype html>")


def test_cli_exit_codes(capsys):
    assert main(["conform", "--backend", "no_such_backend"]) == 2
    assert main(["conform", "--dtype", "f7", "--backend", "reference"]) == 2
    assert "unknown dtype 'f7'" in capsys.readouterr().err
    backend = WrongBackend()
    register_backend(backend)
    try:
        assert main(["conform", "--backend", "wrong", "--ops", "^log$", "--dtype", "f32", "--summary-only"]) == 1
    finally:
        unregister_backend(backend.name)
    out = capsys.readouterr().out
    assert "unexpected failure" in out and "log[f32]" in out and "exit 1" in out


def test_the_report_names_the_cpu_and_the_vector_extensions_its_kernels_chose_from(result):
    from parity.conformance.machine import cpu_of, this_cpu

    assert reports.to_json(result)["environment"]["cpu"] == this_cpu()
    arm = "processor\t: 0\nFeatures\t: fp asimd evtstrm sve sve2 bf16\nCPU part\t: 0xd4f\n\nprocessor\t: 1\n"
    assert cpu_of(arm)["vector_isa"] == ["asimd", "sve", "sve2", "bf16"]
    x86 = "model name\t: Intel Xeon\nflags\t\t: sse2 avx avx2 fma\n\nmodel name\t: other\nflags\t\t: avx512f\n"
    assert cpu_of(x86) == {"model": "Intel Xeon", "vector_isa": ["avx", "avx2", "fma"]}  # the first processor's
