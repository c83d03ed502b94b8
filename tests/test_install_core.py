"""Install what you use: the core (`pip install parity`) runs the reference backend with
none of the optional stacks, and asking for a missing one names the `pip install` line.

Two tests of the same two things:

* fast, in every run: a subprocess of this environment in which jax, onnx, onnxruntime,
  triton, matplotlib and onnxscript are hidden (a finder that reports them absent, as
  ``importlib.util.find_spec`` would in a core-only install);
* slow, only under ``-m slow``: a fresh virtual environment with the core alone,
  installed from a wheel of this tree (about two and a half minutes on two busy cores,
  most of it torch's wheel, so CI runs the fast test instead).
"""

import pathlib
import subprocess
import sys
import textwrap
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())

# Every module an extra brings; none may be needed by the core.
OPTIONAL_STACKS = ("jax", "jaxlib", "onnx", "onnxruntime", "triton", "matplotlib", "onnxscript")

# Hides OPTIONAL_STACKS from the path finder: `import jax` then fails and find_spec("jax")
# is None, exactly as where jax was never installed (torch probes several with find_spec).
HIDE_OPTIONAL_STACKS = f"""
import importlib.machinery, sys

HIDDEN = {OPTIONAL_STACKS!r}


class HideOptionalStacks:
    def __init__(self, inner):
        self.inner = inner

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in HIDDEN:
            return None
        return self.inner.find_spec(name, path, target)

    def invalidate_caches(self):
        self.inner.invalidate_caches()


sys.meta_path[:] = [HideOptionalStacks(f) if f is importlib.machinery.PathFinder else f for f in sys.meta_path]
"""

# What a core install must do: run a graph and a compiled torch function on the reference
# backend, and answer a request for each other backend (and bench, distributed) with its
# pip line. Prints one line per check; the tests compare them.
CORE_CHECKS = """
import importlib.util, sys

import numpy as np
import torch

import parity
from parity.backends import BackendNotFound, get_backend
from parity.ir import GraphBuilder, f32

assert not [m for m in HIDDEN if importlib.util.find_spec(m) is not None], "an optional stack is installed"
b = GraphBuilder()
x = b.input(f32[3])
(out,) = get_backend("reference").compile(b.build([b.exp(x)]), "cpu")(np.zeros(3, np.float32))
print("graph", out.tolist())
double_tanh = parity.compile(lambda t: torch.tanh(t) * 2, backend="reference")
print("compiled", double_tanh(torch.tensor([0.0])).tolist())
for name in ("xla", "onnx", "triton"):
    try:
        get_backend(name)
        print(name, "loaded")
    except BackendNotFound as exc:
        print(name, str(exc))
try:
    parity.distributed.process_count()
except ImportError as exc:
    print("distributed", str(exc))
from parity.bench import cli
try:
    cli.main(["--quick"])
except SystemExit as exc:
    print("bench", str(exc))
loaded = sorted(m for m in sys.modules if m.partition(".")[0] in HIDDEN)
print("loaded", loaded)
"""


def _check_lines(stdout: str) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in stdout.splitlines() if line.split(" ", 1)[0] in {
        "graph", "compiled", "xla", "onnx", "triton", "distributed", "bench", "loaded"})


def _assert_core_behaviour(result: subprocess.CompletedProcess) -> None:
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    lines = _check_lines(result.stdout)
    assert lines["graph"] == "[1.0, 1.0, 1.0]"
    assert lines["compiled"] == "[0.0]"
    for backend in ("xla", "onnx", "triton"):
        assert f"pip install 'parity[{backend}]'" in lines[backend], lines[backend]
    assert "needs jax" in lines["xla"] and "'reference' needs nothing more" in lines["xla"]
    assert "pip install 'parity[xla]'" in lines["distributed"]
    assert "pip install 'parity[bench]'" in lines["bench"]
    assert lines["loaded"] == "[]"


def test_core_runs_the_reference_backend_and_names_each_missing_extra(tmp_path):
    result = subprocess.run([sys.executable, "-c", HIDE_OPTIONAL_STACKS + CORE_CHECKS],
                            capture_output=True, text=True, cwd=tmp_path)
    _assert_core_behaviour(result)


def test_a_missing_stack_is_named_before_the_backend_is_imported(monkeypatch):
    from parity.backends import registry

    monkeypatch.setitem(registry.BUILTIN_BACKENDS, "planted", registry.BuiltinBackend(
        "parity.backends.no_such_module:Backend", extra="xla", requires=("jax", "no_such_stack_module")))
    with pytest.raises(registry.BackendNotInstalled) as info:
        registry.get_backend("planted")
    assert str(info.value).startswith("backend 'planted' needs no_such_stack_module, not installed here. "
                                      "Run: pip install 'parity[xla]'")
    assert isinstance(info.value, registry.BackendNotFound) and isinstance(info.value, ImportError)


def test_the_extras_install_the_optional_stacks_and_the_core_does_not():
    project = PYPROJECT["project"]
    core = " ".join(project["dependencies"])
    assert not [m for m in OPTIONAL_STACKS if m in core], core
    extras = project["optional-dependencies"]
    assert {"xla", "onnx", "triton", "bench", "all", "hf", "test"} <= set(extras)
    assert any(r.startswith("jax") for r in extras["xla"]) and any(r.startswith("onnxruntime") for r in extras["onnx"])
    assert any(r.startswith("matplotlib") for r in extras["bench"])
    (everything,) = extras["all"]
    assert everything == "parity[" + ",".join(e for e in extras if e not in ("all", "test")) + "]"


def _slow_selected(config) -> bool:
    """Only ``-m slow`` (or an expression asking for slow) runs the fresh install."""
    expr = config.option.markexpr or ""
    return "slow" in expr and "not slow" not in expr


@pytest.mark.slow
def test_core_alone_in_a_fresh_virtual_environment(tmp_path, request):
    if not _slow_selected(request.config):
        pytest.skip("a fresh install takes minutes; run with -m slow (the fast test above checks the same)")
    wheels, venv = tmp_path / "wheels", tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(ROOT)], check=True)
    (wheel,) = wheels.glob("parity-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    # As scripts/venv.sh does: the CPU wheel of torch first, then parity with its core dependencies only.
    subprocess.run([python, "-m", "pip", "install", "-q", "torch==2.13.0"], check=True)
    subprocess.run([python, "-m", "pip", "install", "-q", str(wheel)], check=True)
    checks = textwrap.dedent(f"HIDDEN = {OPTIONAL_STACKS!r}\n") + CORE_CHECKS
    result = subprocess.run([python, "-c", checks], capture_output=True, text=True, cwd=tmp_path)
    _assert_core_behaviour(result)
