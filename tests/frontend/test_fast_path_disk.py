"""fast_path=True with a cache_dir: a new process's first call of a stored signature skips
Dynamo and AOTAutograd, and only entries that change nothing are stored."""

import json
import subprocess
import sys
import textwrap

import torch

import parity
from parity.frontend.fast_path_disk import function_key

SCALE = 2.0


def _scaled(x):
    return torch.relu(x * SCALE + 1)


def test_function_key_follows_code_globals_and_closures(monkeypatch):
    before = function_key(_scaled)
    monkeypatch.setattr(sys.modules[__name__], "SCALE", 3.0)
    assert function_key(_scaled) not in (None, before)
    monkeypatch.setattr(sys.modules[__name__], "SCALE", object())  # not a plain value: no key
    assert function_key(_scaled) is None
    k = 1.5
    assert function_key(lambda x: x * k) != function_key(lambda x: x * 2.5)


def test_function_key_follows_the_helpers_it_calls(monkeypatch):
    def helper(x):
        return x + 1

    def f(x):
        return helper(x) * 2

    before = function_key(f)

    def helper(x):  # noqa: F811 - the same name, other code
        return x - 1

    assert function_key(f) not in (None, before)


def _entries(tmp_path):
    return sorted(p.parent.name for p in tmp_path.rglob("*.bin") if p.parent.name.startswith("fast_path"))


def test_only_entries_that_change_nothing_are_stored(tmp_path):
    def bump(x):  # an in-place update AOTAutograd's wrapper applies
        x.add_(1)
        return x * 2

    f = parity.compile(bump, backend="onnx", fast_path=True, cache_dir=tmp_path)
    x = torch.zeros(3)
    f(x)
    assert _entries(tmp_path) == [] and x.tolist() == [1.0, 1.0, 1.0]
    g = parity.compile(lambda x: (x + 1, x * 3), backend="onnx", fast_path=True, cache_dir=tmp_path)
    g(torch.ones(3))
    assert _entries(tmp_path) == ["fast_path-onnx"]


_CHILD = textwrap.dedent("""
    import json, sys
    import torch, parity
    from parity.frontend import compiled_graph, pipeline

    def f(x, y):
        return torch.relu(x * 2 + y), x - y

    if sys.argv[2] == "forbid":  # the second process must not capture, translate or compile
        def refuse(*args, **kwargs):
            raise AssertionError("captured although the disk holds the entry")
        pipeline.compile_fx_graph = refuse
    out = {}
    for name in ("xla", "onnx"):
        g = parity.compile(f, backend=name, fast_path=True, cache_dir=sys.argv[1])
        x, y = torch.arange(4.0) - 2, torch.ones(4)
        a, b = g(x, y)
        out[name] = [a.tolist(), b.tolist()]
    out["stats"] = dict(compiled_graph.STATS)
    print(json.dumps(out))
""")


def _child(cache_dir, mode):
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(cache_dir), mode], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_second_process_skips_capture(tmp_path):
    first = _child(tmp_path, "allow")
    assert first["stats"].get("translations") == 2 and "fast_path_disk_loads" not in first["stats"]
    second = _child(tmp_path, "forbid")
    assert second["stats"] == {"disk_loads": 2, "fast_path_disk_loads": 2}
    want = [[0.0, 0.0, 1.0, 3.0], [-3.0, -2.0, -1.0, 0.0]]
    assert first["xla"] == first["onnx"] == second["xla"] == second["onnx"] == want


def test_random_graphs_draw_anew_and_are_not_stored(tmp_path):
    f = parity.compile(lambda x: x + torch.rand_like(x), backend="onnx", fast_path=True, cache_dir=tmp_path)
    a, b = f(torch.zeros(3)), f(torch.zeros(3))
    assert len(f.fast_path.entries) == 1 and not torch.equal(a, b)
    assert _entries(tmp_path) == []
