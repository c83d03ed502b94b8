"""The examples run as a user would run them (subprocesses) and say what they claim."""

import pathlib
import re
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def _run(script: str, *args: str) -> str:
    result = subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_quickstart_compiles_prints_ir_and_matches_eager():
    out = _run("quickstart.py")
    errors = [float(e) for e in re.findall(r"max \|parity - eager\| = (\S+)", out)]
    assert len(errors) == 3 and all(e <= 1e-5 for e in errors), out
    quickstart = str(EXAMPLES / "quickstart.py")
    # the IR of gated() with the lines of its body
    assert "graph @gated(%0: f32[2,4], %1: f32[4,3]) -> (f32[2,3]) {" in out
    assert f'= logistic(%2) loc("{quickstart}", ' in out and ', "gated")' in out
    assert "graph @TinyNet(%0: f32[8,4], %1: f32[8], %2: f32[3,8], %3: f32[3], %4: f32[2,4])" in out
    assert "aten.gelu.default x1     reference: decomposed  xla: decomposed" in out


@pytest.mark.parametrize("backend", ["reference", pytest.param("xla", marks=pytest.mark.slow)])
def test_train_gpt_losses_follow_eager_and_fall(backend):
    out = _run("train_gpt.py", "--backend", backend, "--steps", "4")
    assert f"backend {backend!r}" in out
    rows = [line.split() for line in out.splitlines() if re.match(r"\s+\d+\s", line)]
    assert [int(r[0]) for r in rows] == [1, 2, 3, 4]
    ours, eager = [float(r[1]) for r in rows], [float(r[2]) for r in rows]
    for a, b in zip(ours, eager):
        assert a == pytest.approx(b, rel=1e-4, abs=1e-5)
    assert eager[-1] < eager[0] - 0.3  # it learns
    worst = float(re.search(r"max \|loss difference\| = (\S+)", out).group(1))
    assert worst == pytest.approx(max(abs(a - b) for a, b in zip(ours, eager)), abs=1e-6) and worst <= 1e-4
