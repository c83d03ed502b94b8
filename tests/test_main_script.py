"""scripts/main.sh runs the quickstarts and the op table beside the conformance run, prints their
output after the run's summary, and exits with the first failure: theirs, else the suite's verdict.
Its python and parity are replaced by scripts that log their arguments and fail on request."""

from __future__ import annotations

import hashlib
import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture
def checkout(tmp_path):
    """scripts/ and pyproject.toml, with a .venv already stamped (nothing to install) whose python
    and parity print what they run and exit with $FAIL_<NAME> when it is set."""
    shutil.copytree(ROOT / "scripts", tmp_path / "scripts")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    digest = hashlib.sha256((tmp_path / "pyproject.toml").read_bytes()).hexdigest()
    (tmp_path / ".venv" / ".parity-installed").write_text(f"{digest}\nall\n")
    for name in ("python", "parity"):
        tool = bin_dir / name
        tool.write_text('#!/usr/bin/env bash\nwhat="$(basename "$0") $*"\necho "ran: $what"\n'
                        'case "$what" in *"$FAIL_ON"*) [ -n "$FAIL_ON" ] && exit 3;; esac\nexit 0\n')
        tool.chmod(0o755)
    (bin_dir / "activate").write_text(f'export PATH="{bin_dir}:$PATH"\n')
    return tmp_path


def _main(checkout: pathlib.Path, fail_on: str = "") -> subprocess.CompletedProcess:
    env = {**os.environ, "FAIL_ON": fail_on}
    return subprocess.run(["bash", "scripts/main.sh"], cwd=checkout, env=env, capture_output=True, text=True)


def test_the_examples_run_beside_the_conformance_run_and_print_after_it(checkout):
    done = _main(checkout)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    conform = next(i for i, line in enumerate(lines) if line.startswith("ran: parity conform --quick"))
    quickstart = lines.index("ran: python examples/quickstart.py")
    assert conform < quickstart and lines.index("ran: parity ops") > quickstart


def test_a_failing_quickstart_fails_the_job_and_shows_its_output(checkout):
    done = _main(checkout, fail_on="examples/quickstart.py")
    assert done.returncode == 3
    assert "ran: python examples/quickstart.py" in done.stdout
    assert "the quickstarts or the op table failed (exit 3)" in done.stderr


def test_the_suites_verdict_is_the_jobs_exit_status(checkout):
    done = _main(checkout, fail_on="conform --quick")
    assert done.returncode == 3
    assert "ran: parity ops" in done.stdout  # the examples still ran and printed
