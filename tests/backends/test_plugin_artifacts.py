"""A plugin's compiled artifacts in parity's disk cache (backends/plugin_persist.py): stored by
one process, loaded by the next without compiling, under the cache's safety rules."""

import json
import os
import stat
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

from parity.backends import disk_cache
from parity.backends.disk_cache import UnsafeCacheWarning, compile_cached
from parity.backends.runtime import RuntimeRequest
from parity.ir import GraphBuilder, f32

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from runtime_plugins import DeviceLike, artifact_round  # noqa: E402

# One process: parity.compile of a module on the plugin, with a disk cache; prints what happened.
PROGRAM = textwrap.dedent("""
    import json, sys, torch
    sys.path.insert(0, {here!r})
    import parity
    from parity.backends import disk_cache
    from parity.backends.registry import register_backend
    from runtime_plugins import DeviceLike
    backend = DeviceLike()
    register_backend(backend)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Tanh()).eval()
    compiled = parity.compile(model, backend="device_like", backend_options={{"threads": 3}}, cache_dir={cache!r})
    with torch.no_grad():
        out = compiled(torch.arange(6.0).reshape(2, 3))
    print(json.dumps({{"compiles": len(backend.compiles), "loads": backend.loads and
                      [{{"threads": l["backend_options"]["threads"], "parameters": sorted(l["parameters"])}}
                       for l in backend.loads],
                      "stores": disk_cache.STATS["stores"], "out": out.tolist(), "binds": backend.binds}}))
""")


# The same without torch (import parity stays light), for CI's tier: the next process's half.
LIGHT = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, {here!r})
    from runtime_plugins import artifact_round
    print(json.dumps(artifact_round({cache!r})))
""")


def _run(cache: Path, program: str = PROGRAM) -> dict:
    done = subprocess.run([sys.executable, "-c", program.format(here=str(HERE), cache=str(cache))],
                          capture_output=True, text=True, env={**os.environ, "PYTHONWARNINGS": "error::UserWarning"})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_an_artifact_stored_by_one_process_is_loaded_by_the_next(tmp_path):
    cache = tmp_path / "cache"
    first = artifact_round(str(cache))  # this process compiles and stores
    assert first["compiles"] == 1 and first["stores"] == 1 and not first["loaded"] and not first["loads"]
    second = _run(cache, LIGHT)
    assert second["compiles"] == 0 and second["loaded"], "the second process compiled instead of loading"
    assert second["loads"] == [{"threads": 3, "parameters": [0]}]  # with the keywords compile took
    assert second["out"] == first["out"] == np.tanh(np.arange(3, dtype=np.float32) * 2).tolist()
    assert all(stat.S_IMODE(p.stat().st_mode) & 0o077 == 0 for p in cache.rglob("*"))


@pytest.mark.matrix  # a second proof through parity.compile (two processes importing torch: ~40 s)
def test_a_compiled_modules_artifact_is_loaded_by_the_next_process(tmp_path):
    cache = tmp_path / "cache"
    first = _run(cache)
    assert first["compiles"] == 1 and first["stores"] >= 1 and not first["loads"]
    second = _run(cache)
    assert second["compiles"] == 0, "the second process compiled instead of loading the plugin's artifact"
    # loaded with the options and parameters compile took (the Linear's weight and bias are inputs 0, 1)
    assert second["loads"] == [{"threads": 3, "parameters": [0, 1]}]
    assert second["out"] == first["out"] and second["binds"] == 1
    assert all(stat.S_IMODE(p.stat().st_mode) & 0o077 == 0 for p in cache.rglob("*"))


def _graph():
    b = GraphBuilder()
    x = b.input(f32[3])
    return b.build([b.exp(x)])


def test_other_options_are_another_entry(tmp_path):
    backend = DeviceLike()
    for threads in (1, 2, 1):
        compile_cached(_graph(), backend, "cpu", str(tmp_path), request=RuntimeRequest({"threads": threads}))
    assert len(backend.compiles) == 2 and len(backend.loads) == 1


def test_an_entry_others_can_write_never_reaches_the_plugin(tmp_path):
    backend = DeviceLike()
    compile_cached(_graph(), backend, "cpu", str(tmp_path))
    entry, = (tmp_path / backend.name).glob("*.bin")
    entry.chmod(0o666)
    disk_cache._WARNED.discard(str(tmp_path))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run, loaded = compile_cached(_graph(), backend, "cpu", str(tmp_path))
    assert not loaded and not backend.loads and len(backend.compiles) == 2
    assert any(issubclass(w.category, UnsafeCacheWarning) and "writable by others" in str(w.message) for w in caught)
    np.testing.assert_allclose(run(np.zeros(3, np.float32))[0], np.ones(3))
