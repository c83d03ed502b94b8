"""Mutation testing (conformance/mutants): each fault class does what it says, applies where its
rule says, and the suite kills every planted fault on the reference and on a real backend (the
CI subset). A weak verdict (a generous deviation) shows as a survivor."""

import numpy as np
import pytest

from parity.backends.base import Deviation
from parity.backends.registry import backend_names
from parity.cli import main
from parity.conformance.mutants import FAULTS, Facts, Planted, run_mutants, step_ulps
from parity.conformance.mutants.faults import FLUSHED_BINADES, Site
from parity.conformance.mutants.run import KILLED, SURVIVED, to_text
from parity.ir.dtypes import DType

from .perturbed import Perturbed

F16, BF16, F32, F64, I32 = DType.float16, DType.bfloat16, DType.float32, DType.float64, DType.int32


def _plant(name, a, dtype):
    return FAULTS[name].plant(np.asarray(a, dtype.numpy), Site(dtype, None, None, ()))


def test_at_least_twelve_fault_classes_with_what_each_does():
    assert len(FAULTS) >= 12 and all(f.what for f in FAULTS.values())


@pytest.mark.parametrize("dtype", [F16, BF16, F32, F64])
def test_ulp_steps_move_every_finite_element_away_from_zero(dtype):
    x = np.array([1.0, -2.5, 0.0, np.inf, np.nan], dtype.numpy)
    y = step_ulps(x, dtype, 8).astype(np.float64)
    eps = float(dtype.finfo.eps)
    assert y[0] == 1.0 + 8 * eps and y[1] == -2.5 - 8 * 2 * eps
    assert 0 < y[2] == 8 * float(dtype.finfo.smallest_subnormal)
    assert y[3] == np.inf and np.isnan(y[4])
    top = step_ulps(np.array([dtype.finfo.max], dtype.numpy), dtype, 1)  # never overflows to inf
    assert np.isfinite(top.astype(np.float64)).all() and top[0] < dtype.finfo.max
    assert step_ulps(np.array([1, -1], np.int32), I32, 1).tolist() == [2, 0]


def test_value_faults():
    tiny = float(np.finfo(np.float32).tiny)
    x = np.array([np.nan, -0.0, tiny * 3, tiny / 4, 1.0], np.float32)
    nan0 = _plant("nan_to_zero", x, F32)
    assert nan0[0] == 0 and np.isnan(x[0])
    assert not np.signbit(_plant("lost_negative_zero", x, F32)[1])
    flushed = _plant("flushed_normals", x, F32)
    assert flushed[2] == 0 and flushed[3] == x[3] and flushed[4] == 1  # normals flushed, subnormals left
    assert _plant("flushed_normals", np.array([tiny * 2.0 ** FLUSHED_BINADES], np.float32), F32)[0] != 0
    assert _plant("relative_2^-10", np.array([1.0], np.float32), F32)[0] == 1 + 2 ** -10
    m = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert _plant("reversed_axis", m, F32).tolist() == [[2, 1, 0], [5, 4, 3]]
    assert _plant("off_by_one", m, F32).tolist() == [[1, 2, 2], [4, 5, 5]]
    assert _plant("wrong_dtype", m, F32).dtype == np.float64 and _plant("wrong_shape", m, F32).shape == (2, 3, 1)
    assert _plant("reversed_axis", np.ones((1, 1), np.float32), F32) is None  # nothing to reverse


def test_where_each_class_applies_is_data():
    rule = lambda name, op, d: FAULTS[name].rule.why_not(Facts.of(op, d))  # noqa: E731
    assert rule("relative_2^-10", "exp", F32) is None and "f16" in rule("relative_2^-10", "exp", F16)
    assert rule("transcendental+8ulp", "exp", F32) is None and rule("transcendental+8ulp", "add", F32)
    assert rule("exact+1ulp", "transpose", F32) is None and rule("exact+1ulp", "exp", F32)
    assert rule("lost_negative_zero", "neg", F32) is None
    assert "sign of this op's zeros" in rule("lost_negative_zero", "exp", F32)  # ±0 within an ULP bound
    assert rule("dropped_term", "reduce_sum", F32) is None and rule("dropped_term", "exp", F32)
    assert rule("low_precision_sum", "reduce_sum", F16) is None and rule("low_precision_sum", "reduce_sum", F32)
    assert rule("off_by_one", "gather", F32) is None and rule("off_by_one", "exp", F32)


def _kill_everything(backend, sample, without=frozenset()):
    """Every fault class (but ``without``, which has no cell on ``backend``) killed everywhere."""
    result = run_mutants([backend], sample=sample, seed=0)
    assert result.targets, f"{backend} is not available here"
    print(to_text(result))
    assert not result.survivors, to_text(result)
    for name, row in result.kill_rates().items():
        for target in result.targets if name not in without else ():
            killed, total = row.get(target, (0, 0))
            assert total > 0 and killed == total, (name, target, killed, total)
    return result


def test_every_planted_fault_is_killed_on_the_reference():
    result = _kill_everything("reference", sample=0)  # every applicable cell
    assert sum(m.status == KILLED for m in result.mutants) > 5000


@pytest.mark.skipif("onnx" not in backend_names(), reason="the onnx backend is not installed")
def test_ci_subset_every_planted_fault_is_killed_on_onnx():
    # onnx lowers complex numbers (as float parts): the complex faults have cells there too
    result = _kill_everything("onnx", sample=3)
    assert {m.fault for m in result.mutants if m.status == KILLED} == set(FAULTS)


def test_a_generous_deviation_lets_a_mutant_survive_and_says_where():
    generous = Perturbed("generous", deviations=(Deviation("exp", "declared, huge", "1e300 ulp", F32),))
    result = run_mutants([generous], ops="^exp$", dtypes=[F32], faults=["transcendental+8ulp", "zeros"])
    status = {m.fault: m for m in result.mutants}
    assert status["transcendental+8ulp"].status == SURVIVED
    assert status["zeros"].status == KILLED  # zeros for inf and NaN: no number of ULPs covers that
    assert result.exit_code == 1
    text = to_text(result)
    assert "SURVIVED transcendental+8ulp on generous/cpu: exp[f32] cases exp[f32]:random" in text
    # A survivor is never excused as an exception or malformed output: those are killed.
    result = run_mutants([generous], ops="^exp$", dtypes=[F32], faults=["exception", "wrong_dtype"])
    assert {m.status for m in result.mutants} == {KILLED}


def test_a_fault_planted_where_no_output_changes_is_no_effect_not_a_kill():
    result = run_mutants(["reference"], ops="^iota$", dtypes=[F32], faults=["nan_to_zero"])
    assert [m.status for m in result.mutants] == ["no effect"]


def test_planted_counts_what_it_changed():
    from parity.backends.registry import get_backend
    from parity.conformance import runner

    planted = Planted(get_backend("reference"), FAULTS["zeros"])
    assert runner.run([planted], ops="^neg$", dtypes=[F32], quick=True).exit_code == 1 and planted.changed > 0


def test_cli(capsys):
    assert main(["conform", "--mutants", "--backend", "reference", "--ops", "^(neg|exp|reduce_sum)$",
                 "--mutant-sample", "0"]) == 0
    out = capsys.readouterr().out
    assert "dropped_term" in out and "killed" in out and "SURVIVED" not in out
    assert main(["conform", "--mutants", "--backend", "reference", "--faults", "nope"]) == 2
    assert "unknown fault class nope" in capsys.readouterr().out


def test_a_plugin_author_gets_the_kill_rate_from_pytest(tmp_path):
    import pathlib
    import subprocess
    import sys

    template = pathlib.Path(__file__).resolve().parents[2] / "examples" / "plugin_template" / "src"
    (tmp_path / "conftest.py").write_text(  # registered by hand: the template need not be installed
        f"import sys\nsys.path.insert(0, {str(template)!r})\nfrom parity_numpy_backend import NumpyBackend\n"
        "from parity.backends.registry import register_backend\nregister_backend(NumpyBackend())\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--parity-backend", "numpy",
                          "--mutants", "--parity-ops", "^(neg|reduce_sum)$"], cwd=tmp_path, capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stdout[-3000:]
    assert "parity mutants: kill rate per fault class" in out.stdout
    assert "numpy/cpu  dropped_term           1/1 killed" in out.stdout


@pytest.mark.parametrize("fault", ["scatter_wrong_mode", "scatter_include_self_flipped"])
def test_scatter_semantic_faults_are_killed_in_every_dtype(fault):
    """A scatter lowered in the wrong mode (accumulating instead of replacing, max for min) or
    with include_self dropped is caught in every dtype the op sweeps (opdb: duplicate indices)."""
    result = run_mutants(["reference"], ops="^scatter$", faults=[fault], sample=0)
    statuses = {m.dtype: m.status for m in result.mutants}
    assert len(statuses) == 10 and set(statuses.values()) == {KILLED}, statuses
