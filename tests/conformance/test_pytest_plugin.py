"""`pytest --parity-backend NAME` (conformance/pytest_plugin.py), run as a backend author
would: in a separate pytest process, against the installed plugin template and against a
deliberately wrong backend registered by a conftest."""

import os
import pathlib
import re
import subprocess
import sys
from importlib.metadata import entry_points

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "examples" / "plugin_template"
OPENVINO = ROOT / "examples" / "openvino_backend"

WRONG = f"""
import sys
sys.path.insert(0, {str(pathlib.Path(__file__).parent)!r})
from perturbed import Perturbed
from parity.backends.base import Deviation
from parity.backends.registry import register_backend
from parity.ir.dtypes import DType

# exp off by 1 + 2**-10 (declared), log off (undeclared), cos does not compile, sort unclaimed,
# tanh right but declared; cuda listed but absent.
register_backend(Perturbed("wrong", {{"exp": 1 + 2**-10, "log": 1 + 2**-12}}, broken={{"cos"}}, unclaimed={{"sort"}},
                           devices=("cpu", "cuda"),
                           deviations=(Deviation("exp", "scaled on purpose", "1e13 ulp"),
                                       Deviation("tanh", "declared, but tanh is right", "3 ulp", DType.float32))))
"""


def _pytest(args, cwd):
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def test_the_plugin_is_registered_as_a_pytest11_entry_point():
    assert "parity.conformance.pytest_plugin" in {e.value for e in entry_points(group="pytest11")}


def test_outcomes_of_a_wrong_backend(tmp_path):
    (tmp_path / "conftest.py").write_text(WRONG)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    out = _pytest(["-q", "-rA", "--parity-backend", "wrong", "--parity-ops", "^(exp|log|cos|sort|tanh|neg)$",
                   "--parity-dtype", "f32", "--parity-quick"], tmp_path)
    text = out.stdout
    assert out.returncode == 1, text

    def outcome(test):
        found = re.findall(rf"^(PASSED|FAILED|XFAIL|SKIPPED \[1\]|SKIPPED).*?{re.escape(test)}", text, re.M)
        return found[0].split()[0] if found else None

    assert outcome("wrong/cpu::neg[f32]") == "PASSED"
    assert outcome("wrong/cpu::exp[f32]") == "XFAIL"  # a declared deviation
    assert "recorded deviation: scaled on purpose" in text
    assert outcome("wrong/cpu::log[f32]") == "FAILED"  # undeclared
    assert outcome("wrong/cpu::cos[f32]") == "FAILED" and "RuntimeError: no kernel for cos" in text
    assert "reproduce: parity conform --backend wrong --ops '^log$' --dtype f32" in text
    assert re.search(r"SKIPPED \[\d+\] .*unsupported: wrong does not claim sort", text)
    assert re.search(r"SKIPPED \[\d+\] .*not run: device cuda is absent here", text)
    assert outcome("wrong/cpu::tanh[f32]") == "PASSED"
    assert outcome("wrong/cpu::stale deviations") == "FAILED"
    assert "stale deviation: tanh f32 on all devices (declared, but tanh is right) no longer happens" in text
    # The threefry bits are exact integer ops; normal's Box–Muller reaches the wrong log.
    assert outcome("wrong/cpu::random draws") == "FAILED"
    assert "random:normal[f32] on wrong/cpu: 1 of 1 cases fail" in text
    assert "random:uniform" not in text and "random:random_bits" not in text


def test_without_the_option_the_plugin_adds_nothing(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n")
    out = _pytest(["-q"], tmp_path)
    assert out.returncode == 0 and "1 passed" in out.stdout, out.stdout


def test_the_plugin_template_certifies(tmp_path):
    """The out-of-tree template (installed by scripts/test.sh) passes the quick suite in float32
    and int32 through its own entry point, as its own CI would run it."""
    names = {e.name: e.value for e in entry_points(group="parity.backends")}
    assert names.get("numpy") == "parity_numpy_backend:NumpyBackend", (
        "install the template: pip install --no-deps -e examples/plugin_template (scripts/test.sh does)")
    out = _pytest(["-q", "-rs", "--parity-backend", "numpy", "--parity-quick", "--parity-dtype", "f32",
                   "--parity-dtype", "i32"], TEMPLATE)
    tail = out.stdout.strip().splitlines()[-1]
    assert out.returncode == 0, out.stdout[-3000:]
    passed = int(re.search(r"(\d+) passed", tail).group(1))
    assert passed > 150 and "failed" not in tail, tail
    # the skips: the ops it declines whose operands are f32 (complex[f32], rfft[f32], and stft[f32],
    # which reaches rfft through its decomposition), with the reason
    skips = [line for line in out.stdout.splitlines() if line.startswith("SKIPPED")]
    assert "3 skipped" in tail and len(skips) == 3, out.stdout[-3000:]
    assert any("rfft (reached through a decomposition)" in line for line in skips), skips
    assert all("declined, the numpy template has no complex kernels" in line for line in skips), skips


def _openvino_installed():
    """The OpenVINO plugin's entry point; missing, a skip with the reason (a failure under CI, which installs it)."""
    names = {e.name: e.value for e in entry_points(group="parity.backends")}
    if names.get("openvino") != "parity_openvino_backend:OpenVinoBackend":
        why = "install the OpenVINO plugin: pip install -e examples/openvino_backend (scripts/test.sh does)"
        (pytest.fail if os.environ.get("CI") else pytest.skip)(why)


# The cells where the suite found OpenVINO's behaviours: erf (series below |x| = 1), exp (NaN,
# subnormal results), div (a recorded deviation), constant (-0.0, subnormals), pad (a non-constant
# value), convolution (0 · inf in the padding), broadcast_in_dim (empty: a SIGFPE in the runtime),
# dot_general (a vector dot: a SIGSEGV in compile_model), gt (NaN > x true in the AVX-512 kernels);
# and the composites it claims natively (gelu, layer_norm as MVN).
OPENVINO_SLICE = "^(erf|exp|div|constant|pad|convolution|broadcast_in_dim|dot_general|gt|gelu|layer_norm)$"


def test_the_openvino_plugin_certifies_where_it_found_the_runtime_s_behaviours():
    _openvino_installed()
    out = _pytest(["-q", "-rsx", "--parity-backend", "openvino", "--parity-quick", "--parity-dtype", "f32",
                   "--parity-ops", OPENVINO_SLICE], OPENVINO)
    tail = out.stdout.strip().splitlines()[-1]
    assert out.returncode == 0, out.stdout[-3000:]
    assert not re.search(r"\d+ failed", tail) and re.search(r"\b11 passed", tail) and "1 xfailed" in tail, tail
    assert "recorded deviation: OpenVINO rewrites x / y as x · y⁻¹" in out.stdout, out.stdout[-3000:]


@pytest.mark.matrix  # 40 s each on 2 cores
@pytest.mark.parametrize("isa_cap", [None, "AVX2"])
def test_the_openvino_plugin_certifies_its_whole_quick_column(isa_cap):
    """`parity conform --backend openvino --quick`, serial (the plugin runs on an isolated worker); again
    with oneDNN capped at AVX2 (ONEDNN_MAX_CPU_ISA): on an AVX-512 CPU its kernels differ (gt, gelu)."""
    _openvino_installed()
    env = {k: v for k, v in os.environ.items() if k not in ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA")}
    if isa_cap:
        env["ONEDNN_MAX_CPU_ISA"] = isa_cap
    out = subprocess.run(["parity", "conform", "--backend", "openvino", "--quick", "--no-frontend",
                          "--summary-only"], capture_output=True, text=True, timeout=900, env=env)
    assert out.returncode == 0, out.stdout[-3000:]
    assert "conformance as expected (exit 0)" in " ".join(out.stdout.split()), out.stdout[-3000:]


FLUSHES = f"""
import sys
sys.path.insert(0, {str(pathlib.Path(__file__).parent)!r})
from perturbed import Perturbed
from parity.backends.base import Deviation
from parity.backends.registry import register_backend
from parity.ir.dtypes import DType

# right everywhere, but declares that its runtime flushes float32 subnormals (as a CPU runtime with FTZ does)
register_backend(Perturbed("flushes", {{}}, deviations=(
    Deviation("*", "the runtime runs with FTZ/DAZ", "flushes f32 subnormals", DType.float32, flush_to_zero=True),)))
"""


def test_an_unknown_zoo_model_stops_the_run_before_any_cell_and_names_the_zoo(tmp_path):
    (tmp_path / "conftest.py").write_text(FLUSHES)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    out = _pytest(["-q", "--parity-backend", "flushes", "--parity-models", "--parity-architectures", "mlp,resnet"],
                  tmp_path)
    assert out.returncode == 4, out.stdout[-2000:] + out.stderr[-2000:]  # pytest's usage error
    assert "--parity-architectures: no zoo model named 'resnet'; the zoo has mlp, cnn" in out.stderr, out.stderr


def test_a_run_filtered_to_models_does_not_call_the_flush_to_zero_deviation_stale(tmp_path):
    """Only the op database's cells can show a flush: whole-model rows and random draws never
    judge it, and a run that leaves op cells out (-k, --parity-ops) cannot call a "*" deviation stale."""
    (tmp_path / "conftest.py").write_text(FLUSHES)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    out = _pytest(["-q", "-rA", "--parity-backend", "flushes", "--parity-models", "--parity-architectures", "mlp,cnn",
                   "--parity-quick", "-k", "model or random or stale"], tmp_path)
    assert out.returncode == 0, out.stdout[-3000:]
    assert re.search(r"^PASSED .*flushes/cpu::stale deviations", out.stdout, re.M), out.stdout[-3000:]
    assert re.search(r"^PASSED .*flushes/cpu::model zoo", out.stdout, re.M), out.stdout[-3000:]


def test_a_plugin_that_crashes_natively_gives_a_failed_cell_and_the_session_goes_on(tmp_path):
    """A plugin found by entry point runs its cells on a worker process, as `parity conform`
    runs it: its segfault is a failed cell naming the case, its other cells are judged, and
    pytest reports them all (in-process, the segfault killed pytest with no report)."""
    here = pathlib.Path(__file__).parent
    sys.path.insert(0, str(here))
    try:
        from entry_point_faults import write_dist_info
    finally:
        sys.path.remove(str(here))
    write_dist_info(tmp_path / "site")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(here), str(tmp_path / "site"),
                                                       os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA",
                          "--parity-backend", "ep_segfaults", "--parity-ops", "^(neg|abs)$", "--parity-dtype", "f32",
                          "--parity-quick"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    text = out.stdout
    assert out.returncode == 1, text + out.stderr[-2000:]
    assert re.search(r"^PASSED .*ep_segfaults/cpu::abs\[f32\]", text, re.M), text
    assert re.search(r"^FAILED .*ep_segfaults/cpu::neg\[f32\]", text, re.M), text
    assert "signal 11 (SIGSEGV)" in text and "reproduce: parity conform --backend ep_segfaults" in text, text
    assert re.search(r"1 failed, 3 passed", text), text
