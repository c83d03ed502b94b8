"""--journal and --resume (conformance/journal.py): a controller killed with SIGKILL in the
middle of a run, resumed, gives the report an uninterrupted run gives, without running a
finished case twice."""

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from parity.conformance.journal import Journal, JournalMismatch, read_journal
from parity.conformance.results import CaseResult

HERE = pathlib.Path(__file__).parent
ARGS = ["conform", "--plugin", "faulty_backend:slow", "--backend", "slow", "--ops", "^(neg|abs|exp|log|sin|cos)$",
        "--dtype", "f32", "--quick", "--summary-only", "--workers", "1"]


def _parity(args, **kw):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
    return subprocess.Popen([sys.executable, "-m", "parity.cli", *args], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, **kw)


def _results(journal: pathlib.Path) -> list[dict]:
    return [json.loads(line)["result"] for line in journal.read_text().splitlines()[1:] if line.strip()]


def _report(path: pathlib.Path) -> dict:
    doc = json.loads(path.read_text())
    for volatile in ("created", "elapsed_s"):
        doc.pop(volatile)
    return doc


def _parity_here(args) -> int:
    """``parity`` in this process (a fresh interpreter is the point only for the run that is killed)."""
    from parity.backends.registry import unregister_backend
    from parity.cli import main

    try:
        return main(args)
    finally:
        unregister_backend("slow")


def test_a_killed_controller_resumes_to_the_uninterrupted_report(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(HERE))  # faulty_backend, for this process and its workers
    journal = tmp_path / "run.jsonl"
    first = _parity([*ARGS, "--journal", str(journal)])
    while not journal.exists() or len(_results(journal)) < 5:  # at least one op's cases are in
        assert first.poll() is None, first.stderr.read().decode()
        time.sleep(0.05)
    first.send_signal(signal.SIGKILL)
    first.wait()
    before = _results(journal)
    assert _parity_here([*ARGS, "--journal", str(journal), "--resume", "--json", str(tmp_path / "resumed.json")]) == 0
    assert _parity_here([*ARGS, "--json", str(tmp_path / "whole.json")]) == 0
    after = _results(journal)
    keys = [(r["case"], r["backend"]) for r in after]
    assert len(keys) == len(set(keys)) == _report(tmp_path / "whole.json")["cases"]  # none run twice
    assert 5 <= len(before) < len(after)  # the kill landed mid-run
    assert after[:len(before)] == before
    assert _report(tmp_path / "resumed.json") == _report(tmp_path / "whole.json")


def test_a_journal_of_other_options_is_refused_by_name(tmp_path):
    path = tmp_path / "j.jsonl"
    with Journal(path, {"ops": "^neg$"}) as j:
        j.write([CaseResult("neg[f32]:a", "neg", "f32", "reference", "cpu", "pass")])
    with open(path, "a") as f:
        f.write('{"result": {"case": "torn')  # a line cut by the kill
    assert [r.case for r in read_journal(path, {"ops": "^neg$"})] == ["neg[f32]:a"]
    with pytest.raises(JournalMismatch, match=r"other options .*\^neg\$.*Resume with the same options"):
        read_journal(path, {"ops": "^exp$"})


def test_resume_without_a_journal_says_so(tmp_path, capsys):
    from parity.cli import main

    missing = tmp_path / "none.jsonl"
    assert main(["conform", "--ops", "^neg$", "--journal", str(missing), "--resume", "--summary-only"]) == 2
    err = capsys.readouterr().err
    assert err == f"parity conform: --resume: there is no journal at {missing}; run without --resume to start one\n"
