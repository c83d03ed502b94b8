"""scripts/venv.sh installs the extras each command asks for, once: the main job only the runtimes
it runs (xla, onnx, triton), the test command every extra and the test tools. Its stamp (pyproject's
hash, then the extras installed) decides; pip is replaced by a script that logs its arguments."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
MAIN_EXTRAS = "xla,onnx,triton"


@pytest.fixture
def checkout(tmp_path):
    """A copy of scripts/ and pyproject.toml with a .venv whose python only logs pip's arguments."""
    shutil.copytree(ROOT / "scripts", tmp_path / "scripts")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    python = bin_dir / "python"
    python.write_text('#!/usr/bin/env bash\necho "$*" >> "$(dirname "$0")/../pip.log"\n')
    python.chmod(0o755)
    (bin_dir / "activate").write_text("true\n")
    return tmp_path


def _setup(checkout: pathlib.Path, extras: str | None) -> list[str]:
    """Source venv.sh as a command does; the parity installs pip was asked for by this run."""
    log = checkout / ".venv" / "pip.log"
    before = log.read_text().splitlines() if log.exists() else []
    env = {k: v for k, v in os.environ.items() if k != "PARITY_VENV_EXTRAS"}
    if extras is not None:
        env["PARITY_VENV_EXTRAS"] = extras
    subprocess.run(["bash", "-c", "source scripts/venv.sh"], cwd=checkout, env=env, check=True)
    after = log.read_text().splitlines() if log.exists() else []
    return [line.split("-e ", 1)[1] for line in after[len(before):] if "-e " in line]


def test_the_main_job_installs_its_runtimes_once_and_the_test_command_adds_the_rest(checkout):
    assert _setup(checkout, MAIN_EXTRAS) == [".[onnx,triton,xla]"]
    assert _setup(checkout, MAIN_EXTRAS) == []  # installed: nothing to do
    assert _setup(checkout, None) == [".[all,onnx,test,triton,xla]"]  # the test command's default
    assert _setup(checkout, None) == []
    assert _setup(checkout, MAIN_EXTRAS) == []  # "all" holds the main job's extras


def test_all_does_not_hold_the_test_tools_and_a_changed_pyproject_installs_again(checkout):
    assert _setup(checkout, "all") == [".[all]"]
    assert _setup(checkout, "xla") == []
    assert _setup(checkout, "all,test") == [".[all,test]"]
    with open(checkout / "pyproject.toml", "a") as f:
        f.write("\n# a changed dependency\n")
    assert _setup(checkout, MAIN_EXTRAS) == [".[onnx,triton,xla]"]


def test_each_command_asks_for_its_extras():
    main = (ROOT / "scripts" / "main.sh").read_text()
    test = (ROOT / "scripts" / "test.sh").read_text()
    assert f"PARITY_VENV_EXTRAS=${{PARITY_VENV_EXTRAS:-{MAIN_EXTRAS}}}" in main
    assert "PARITY_VENV_EXTRAS" not in test  # the default: every extra and the test tools
    assert "extras=${PARITY_VENV_EXTRAS:-all,test}" in (ROOT / "scripts" / "venv.sh").read_text()
