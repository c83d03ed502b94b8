"""fast_path=True with a cache_dir: a new process's first call of a stored signature skips
Dynamo and AOTAutograd, and only entries that change nothing are stored."""

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


def test_function_key_follows_argument_defaults(tmp_path):
    """One code, two defaults (``lambda x, k=k: ...`` made in a loop): two keys, and each function
    compiled with a disk cache computes with its own default, not the first one's."""
    keys = {function_key(lambda x, k=k: x + k) for k in (1, 2)}
    assert len(keys) == 2 and None not in keys
    assert function_key(lambda x, *, k=object(): x) is None  # not a plain value: no key
    for k in (1.0, 2.0, 3.0):
        got = parity.compile(lambda x, k=k: x * k, backend="reference", cache_dir=str(tmp_path))(torch.ones(2))
        assert got.tolist() == [k, k]


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


# What both runs execute, the first here and the second in a fresh interpreter (tests/conftest.py: two_processes).
_COMPILE_EACH = textwrap.dedent("""
    import torch, parity
    from parity.frontend import compiled_graph

    def f(x, y):
        return torch.relu(x * 2 + y), x - y

    def compile_each(cache_dir):
        before = dict(compiled_graph.STATS)
        out = {}
        for name in ("xla", "onnx"):
            g = parity.compile(f, backend=name, fast_path=True, cache_dir=cache_dir)
            x, y = torch.arange(4.0) - 2, torch.ones(4)
            a, b = g(x, y)
            out[name] = [a.tolist(), b.tolist()]
        out["stats"] = {k: n - before.get(k, 0) for k, n in compiled_graph.STATS.items() if n != before.get(k, 0)}
        return out
""")

_SECOND_PROCESS = _COMPILE_EACH + textwrap.dedent("""
    import json, sys
    from parity.frontend import pipeline

    def refuse(*args, **kwargs):  # the second process must not capture, translate or compile
        raise AssertionError("captured although the disk holds the entry")

    pipeline.compile_fx_graph = refuse
    print(json.dumps(compile_each(sys.argv[1])))
""")


def test_second_process_skips_capture(tmp_path, two_processes):
    first = two_processes.first_run_here(_COMPILE_EACH, tmp_path)
    assert first["stats"].get("translations") == 2 and "fast_path_disk_loads" not in first["stats"]
    second = two_processes.second_process(_SECOND_PROCESS, tmp_path)
    assert second["stats"] == {"disk_loads": 2, "fast_path_disk_loads": 2}
    want = [[0.0, 0.0, 1.0, 3.0], [-3.0, -2.0, -1.0, 0.0]]
    assert first["xla"] == first["onnx"] == second["xla"] == second["onnx"] == want


def test_random_graphs_draw_anew_and_are_not_stored(tmp_path):
    f = parity.compile(lambda x: x + torch.rand_like(x), backend="onnx", fast_path=True, cache_dir=tmp_path)
    a, b = f(torch.zeros(3)), f(torch.zeros(3))
    assert len(f.fast_path.entries) == 1 and not torch.equal(a, b)
    assert _entries(tmp_path) == []
