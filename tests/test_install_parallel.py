"""scripts/install_parallel.py: the first requirement installs at once while pip resolves them all;
then what pip chose installs pinned, without dependencies, on two disjoint halves beside the
editable project; any failure falls back to one plain pip. pip is replaced by a script that logs
its arguments, writes a canned resolution for ``--report``, and fails on request."""

from __future__ import annotations

import importlib.util
import json
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

FAKE_PIP = r'''
import json, os, sys
args = sys.argv[1:]
with open(os.environ["PIP_LOG"], "a") as f:
    f.write(json.dumps(args) + "\n")
if "--report" in args:
    if os.environ.get("FAIL_ON") == "resolve":
        sys.exit(1)
    with open(args[args.index("--report") + 1], "w") as f:
        f.write(os.environ["REPORT"])
    sys.exit(0)
fail = os.environ.get("FAIL_ON")
sys.exit(1 if fail and fail in " ".join(args) else 0)
'''


def _item(name, version, url, editable=False):
    info = {"url": url, **({"dir_info": {"editable": True}} if editable else {"archive_info": {}})}
    return {"metadata": {"name": name, "version": version}, "download_info": info, "is_direct": editable}


@pytest.fixture
def install(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("install_parallel", ROOT / "scripts" / "install_parallel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fake = tmp_path / "fake_pip.py"
    fake.write_text(FAKE_PIP)
    monkeypatch.setattr(module, "pip", lambda *args: [sys.executable, str(fake), *args])
    big = tmp_path / "big-1.0-py3-none-any.whl"
    big.write_bytes(b"x" * 5000)
    small = tmp_path / "small-1.0-py3-none-any.whl"
    small.write_bytes(b"x" * 10)
    report = {"install": [
        _item("torch", "2.13.0+cpu", "file:///wheels/torch.whl"),
        _item("big", "1.0", big.as_uri()), _item("small", "1.0", small.as_uri()),
        _item("Other_Thing", "2.0", "https://example.invalid/other.whl"),
        _item("parity", "0.1", "file:///src/parity", editable=True)]}
    log = tmp_path / "pip.log"
    monkeypatch.setenv("PIP_LOG", str(log))
    monkeypatch.setenv("REPORT", json.dumps(report))

    def run(fail_on=None):
        if fail_on:
            monkeypatch.setenv("FAIL_ON", fail_on)
        code = module.install("torch==2.13.0", ["-e", ".[xla]"])
        return code, [json.loads(line) for line in log.read_text().splitlines()]
    return run


def test_the_first_installs_while_pip_resolves_and_the_rest_installs_pinned_in_disjoint_parts(install):
    code, calls = install()
    assert code == 0
    first, resolution = sorted(calls[:2], key=lambda c: "--dry-run" in c)  # the two run at once: either logs first
    assert first == ["install", "-q", "--no-deps", "torch==2.13.0"]
    assert resolution[:3] == ["install", "-q", "--dry-run"] and resolution[-3:] == ["torch==2.13.0", "-e", ".[xla]"]
    parts = [c[3:] for c in calls[2:]]
    assert all(c[:3] == ["install", "-q", "--no-deps"] for c in calls[2:])
    assert sorted(map(sorted, parts)) == sorted([["-e", "/src/parity"], ["Other_Thing==2.0"],
                                                 ["big==1.0", "small==1.0"]])  # the remote one counts large
    assert not any("torch" in a for p in parts for a in p)  # installed once, by the first pip


@pytest.mark.parametrize("fail_on", ["resolve", "small==1.0"])
def test_a_failed_resolution_or_part_falls_back_to_one_plain_pip(install, fail_on, capsys):
    code, calls = install(fail_on)
    assert code == 0
    assert calls[-1] == ["install", "-q", "torch==2.13.0", "-e", ".[xla]"]
    assert "installing in one pip" in capsys.readouterr().err
