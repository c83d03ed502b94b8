"""parity conform merge (conformance/merge.py): two simulated hosts, each with its own subset
of backends, written by separate runs, joined into one matrix with a device-agreement view;
reports of another parity version or suite are refused by name."""

import json
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from parity.backends.registry import register_backend, unregister_backend
from parity.cli import main
from parity.conformance import reports, runner
from parity.conformance.merge import BIT_IDENTICAL, DISAGREE, WITHIN_CONTRACT, MergeRefused, merge
from parity.ir.dtypes import DType

from .perturbed import Perturbed

OPS = "^(neg|exp|log)$"


def _host(backends, vendor_factors) -> dict:
    """One machine's report: ``backends`` plus its build of the 'vendor' backend."""
    register_backend(Perturbed("vendor", vendor_factors))
    try:
        return reports.to_json(runner.run([*backends, "vendor"], ops=OPS, dtypes=[DType.float32], quick=True))
    finally:
        unregister_backend("vendor")


@pytest.fixture(scope="module")
def hosts():
    # host a: reference and an exact vendor build; host b: numpy and a vendor build whose exp is off by
    # 2**-23 (about one ULP, within exp's contract) and whose log is off by 2**-10 (a failure).
    a = _host(["reference"], {})
    b = _host(["numpy"], {"exp": 1 + 2**-23, "log": 1 + 2**-10})
    return a, b


def test_the_merged_matrix_has_every_host_backend_and_the_device_agreement(hosts):
    a, b = hosts
    result = merge([a, b], ["host-a", "host-b"])
    assert {(t.backend, t.device) for t in result.targets} == {("reference", "cpu"), ("numpy", "cpu"),
                                                               ("vendor", "cpu")}
    assert {c.status for c in result.cells if c.backend in ("reference", "numpy")} == {"pass"}
    verdicts = {r["op"]: r for r in result.device_agreement}
    assert set(verdicts) == {"neg", "exp", "log"}  # only vendor ran in both places
    assert verdicts["neg"]["verdict"] == BIT_IDENTICAL and verdicts["neg"]["places"] == ["host-a:cpu", "host-b:cpu"]
    assert verdicts["exp"]["verdict"] == WITHIN_CONTRACT and verdicts["exp"]["differing_cases"]
    assert verdicts["log"]["verdict"] == DISAGREE and verdicts["log"]["statuses"] == ["pass", "fail"]
    vendor_log = next(c for c in result.cells if c.backend == "vendor" and c.op == "log")
    assert vendor_log.status == "pass"  # the matrix keeps the first report that ran a target
    doc = reports.to_json(result)
    assert doc["device_agreement"] == result.device_agreement


def test_reports_of_another_parity_or_suite_are_refused_by_name(hosts):
    a, b = hosts
    for field, words in (("parity_version", "parity versions"), ("suite", "conformance suites")):
        other = dict(b, **{field: "0.0.0-elsewhere"})
        with pytest.raises(MergeRefused, match=f"different {words} .*host-b has 0.0.0-elsewhere"):
            merge([a, other], ["host-a", "host-b"])


class _Rows(HTMLParser):
    def __init__(self):
        super().__init__()
        self.agree_cells: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "td" and attrs.get("class", "").startswith("c ") and self.in_agree:
            self.agree_cells.append(attrs["class"])
        if tag == "tr":
            self.in_agree = attrs.get("class") == "agree"

    in_agree = False


def test_cli_merges_two_report_files_into_html(hosts, tmp_path, capsys):
    paths = []
    for name, doc in zip(("host-a", "host-b"), hosts):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(doc), encoding="utf-8")
    page = tmp_path / "merged.html"
    assert main(["conform", "merge", *map(str, paths), "--html", str(page)]) == 0
    out = capsys.readouterr().out
    assert "1 bit-identical" in out and "1 agree within contract" in out and "1 disagree" in out
    rows = _Rows()
    rows.feed(page.read_text(encoding="utf-8"))
    assert sorted(rows.agree_cells) == ["c dev", "c fail", "c pass"]
    paths[1].write_text(json.dumps(dict(hosts[1], parity_version="9.9")), encoding="utf-8")
    assert main(["conform", "merge", *map(str, paths)]) == 2
    assert "host-b has 9.9" in capsys.readouterr().out


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium); the "
                                             "parse test above still checks the page")
def test_merged_html_in_headless_chromium(hosts, tmp_path):
    from parity.conformance import html

    page = tmp_path / "merged.html"
    page.write_text(html.to_html(merge(list(hosts), ["host-a", "host-b"])), encoding="utf-8")
    dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    assert "Device agreement (1 bit-identical, 1 agree within contract, 1 disagree)" in dom


def test_reports_from_cpus_with_different_vector_extensions_are_named(hosts, tmp_path, capsys):
    """Certification is per machine (OpenVINO and Inductor answered differently on AVX2 and
    AVX-512): a merge of reports from such CPUs says so, in the terminal and the page."""
    from parity.conformance import html

    a, b = hosts
    avx512 = {"model": "AMD EPYC", "vector_isa": ["avx", "avx2", "avx512f"]}
    avx2 = {"model": "Intel Xeon", "vector_isa": ["avx", "avx2"]}
    a = dict(a, environment=dict(a["environment"], cpu=avx512))
    b = dict(b, environment=dict(b["environment"], cpu=avx2))
    merged = merge([a, b], ["host-a", "host-b"])
    assert merged.options["cpus"] == {"host-a": avx512, "host-b": avx2}
    page = html.to_html(merged)
    assert "host-a: AMD EPYC (avx, avx2, avx512f); host-b: Intel Xeon (avx, avx2)" in page
    paths = []
    for name, doc in (("host-a", a), ("host-b", b)):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(doc), encoding="utf-8")
    main(["conform", "merge", *map(str, paths)])
    assert "different vector extensions" in " ".join(capsys.readouterr().out.split())
    # the same CPU twice (or a report that names none): no note
    same = merge([a, dict(b, environment=dict(b["environment"], cpu=avx512))], ["host-a", "host-b"])
    assert "different vector extensions" not in html.to_html(same)
