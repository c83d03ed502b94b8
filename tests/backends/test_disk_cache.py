"""The disk cache: entries survive processes, other versions and damaged files are misses,
concurrent writers leave a whole entry, and a second process runs without compiling."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from parity.backends import disk_cache
from parity.backends.disk_cache import DiskCache, cache_key, compile_cached, entry_key, resolve_cache_dir
from parity.ir import GraphBuilder, f32
from parity.ir.precision import Precision


def _graph():
    b = GraphBuilder("g")
    x = b.input(f32[4])
    def full(v):
        return b.constant(np.full(4, v, np.float32))

    return b.build([b.max(b.add(b.mul(x, full(2)), full(1)), full(0))])


def _key(**versions):
    return cache_key("h" * 16, "xla", "cpu", ["f32[4]"], versions or {"jax": "1.0"})


def test_store_then_load(tmp_path):
    cache = DiskCache(tmp_path)
    assert cache.load(_key()) is None
    cache.store(_key(), b"payload")
    assert cache.load(_key()) == b"payload"
    assert list(tmp_path.rglob("*.tmp")) == []  # the temporary file was moved into place


def test_other_versions_are_a_miss(tmp_path):
    cache = DiskCache(tmp_path)
    cache.store(_key(jax="1.0"), b"old")
    assert cache.load(_key(jax="2.0")) is None
    # a file at the right name whose header names other versions is refused too
    cache.path(_key(jax="2.0")).write_bytes(cache.path(_key(jax="1.0")).read_bytes())
    assert cache.load(_key(jax="2.0")) is None


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty"])
def test_damaged_file_is_a_miss(tmp_path, damage):
    cache = DiskCache(tmp_path)
    cache.store(_key(), b"payload" * 100)
    path = cache.path(_key())
    data = path.read_bytes()
    broken = {"truncate": data[:-10], "flip": data[:-1] + bytes([data[-1] ^ 1]), "garbage": b"\x00" * 50,
              "empty": b""}[damage]
    path.write_bytes(broken)
    assert cache.load(_key()) is None


_WRITER = textwrap.dedent("""
    import sys
    from parity.backends.disk_cache import DiskCache, cache_key
    root, tag = sys.argv[1], sys.argv[2].encode()
    key = cache_key("h" * 16, "xla", "cpu", ["f32[4]"], {"jax": "1.0"})
    for _ in range(30):
        DiskCache(root).store(key, tag * 50_000)
""")


def test_concurrent_writers_leave_a_whole_entry(tmp_path):
    tags = [b"a", b"b", b"c"]
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path), t.decode()]) for t in tags]
    whole = {t * 50_000 for t in tags}
    while any(p.poll() is None for p in procs):  # read while they write: never half a file
        payload = DiskCache(tmp_path).load(_key())
        assert payload is None or payload in whole
    assert [p.wait() for p in procs] == [0, 0, 0]
    assert DiskCache(tmp_path).load(_key()) in whole
    assert list(tmp_path.rglob("*.tmp")) == []


def test_resolve_cache_dir(monkeypatch, tmp_path):
    monkeypatch.delenv(disk_cache.ENV_VAR, raising=False)
    assert resolve_cache_dir(None) == str(disk_cache.default_cache_dir())  # on by default
    assert resolve_cache_dir(False) is None
    assert resolve_cache_dir(tmp_path) == str(tmp_path)
    assert resolve_cache_dir(True) == str(disk_cache.default_cache_dir())
    monkeypatch.setenv(disk_cache.ENV_VAR, str(tmp_path / "env"))
    assert resolve_cache_dir(None) == str(tmp_path / "env")
    assert resolve_cache_dir(False) is None
    monkeypatch.setenv(disk_cache.ENV_VAR, "")
    assert resolve_cache_dir(True) is None


@pytest.mark.parametrize("backend_name", ["xla", "onnx"])
def test_unreadable_entry_is_rebuilt(tmp_path, backend_name):
    """An entry that passes its checksum but the runtime cannot load: compiled again, overwritten."""
    from parity.backends.registry import get_backend

    backend, graph = get_backend(backend_name), _graph()
    key = entry_key(graph, backend_name, "cpu", Precision.EXACT, disk_cache.persister(backend_name))
    DiskCache(tmp_path).store(key, b"not an executable")
    before = disk_cache.STATS["rejected"]
    run, loaded = compile_cached(graph, backend, "cpu", str(tmp_path))
    assert not loaded and disk_cache.STATS["rejected"] == before + 1
    assert run(np.array([-2, -0.5, 0, 1], np.float32))[0].tolist() == [0, 0, 1, 3]
    assert DiskCache(tmp_path).load(key) != b"not an executable"
    again, loaded = compile_cached(graph, get_backend(backend_name), "cpu", str(tmp_path))
    assert loaded


def test_native_code_is_keyed_by_its_host(tmp_path, monkeypatch):
    """XLA's executables are machine code sized for the CPUs they were compiled under: one stored
    under a 1-CPU mask (a bench run at 1 thread, a pinned worker) is not loaded at 2 CPUs, nor on
    another CPU model; onnx's entries are models, read on any host."""
    from parity.backends.registry import get_backend

    graph = _graph()
    hosts = iter([{"cpu": "A", "cpus": 1}, {"cpu": "A", "cpus": 2}, {"cpu": "B", "cpus": 2}, {"cpu": "B", "cpus": 2}])
    monkeypatch.setattr(disk_cache, "host", lambda: next(hosts))
    loads = [compile_cached(graph, get_backend("xla"), "cpu", str(tmp_path))[1] for _ in range(4)]
    assert loads == [False, False, False, True]
    monkeypatch.setattr(disk_cache, "host", lambda: {"cpu": "C", "cpus": 64})
    assert [compile_cached(graph, get_backend("onnx"), "cpu", str(tmp_path))[1] for _ in range(2)] == [False, True]


def test_an_executable_jax_cannot_serialize_runs_uncached(tmp_path, monkeypatch):
    """Writing the cache is best effort: an executable JAX refuses to serialize still compiles
    and runs, and nothing is stored (a compile must never fail for its cache entry)."""
    from parity.backends.registry import get_backend
    from parity.backends.xla import persist

    def refuse(compiled):
        raise RuntimeError("UNIMPLEMENTED: `LessThan` is not serializable.")

    monkeypatch.setattr(persist, "serialize", refuse)
    stores = disk_cache.STATS["stores"]
    run, loaded = compile_cached(_graph(), get_backend("xla"), "cpu", str(tmp_path))
    assert not loaded and run(np.array([-2, -0.5, 0, 1], np.float32))[0].tolist() == [0, 0, 1, 3]
    assert disk_cache.STATS["stores"] == stores and not list(tmp_path.rglob("*.bin"))


# What both runs execute, the first here and the second in a fresh interpreter (tests/conftest.py: two_processes).
_COMPILE_EACH = textwrap.dedent("""
    import torch, parity
    from parity.frontend import compiled_graph

    def compile_each(cache_dir):
        before = dict(compiled_graph.STATS)
        out = {}
        for name in ("xla", "onnx"):
            f = parity.compile(lambda x: torch.relu(x * 2 + 1), backend=name, cache_dir=cache_dir)
            out[name] = f(torch.tensor([-2.0, -0.5, 0.0, 1.0])).tolist()
        out["stats"] = {k: n - before.get(k, 0) for k, n in compiled_graph.STATS.items() if n != before.get(k, 0)}
        return out
""")

_SECOND_PROCESS = _COMPILE_EACH + textwrap.dedent("""
    import json, sys
    from parity.backends.xla import backend as xla_backend
    from parity.backends.onnx import persist as onnx_persist

    def refuse(*args, **kwargs):  # the second process must not lower or compile anything
        raise AssertionError("compiled although the disk cache holds the executable")

    xla_backend.XlaBackend._build = refuse
    onnx_persist.to_model = refuse
    print(json.dumps(compile_each(sys.argv[1])))
""")


def test_second_process_loads_without_compiling(tmp_path, two_processes):
    first = two_processes.first_run_here(_COMPILE_EACH, tmp_path)
    assert first["stats"].get("backend_compiles") == 2 and "disk_loads" not in first["stats"]
    second = two_processes.second_process(_SECOND_PROCESS, tmp_path)
    assert second["stats"].get("disk_loads") == 2 and "backend_compiles" not in second["stats"]
    for name in ("xla", "onnx"):
        assert first[name] == second[name] == [0.0, 0.0, 1.0, 3.0]


# -- only a directory and entries that nobody else can write are read ------------------------

_MARKER_PAYLOAD = """
import os, pickle
class Planted:
    def __reduce__(self):
        return (os.mkdir, ({marker!r},))
payload = pickle.dumps(Planted())
"""


def _planted_entry(tmp_path, cache):
    """Store, under the key the onnx fast-path would read, a pickle that makes ``marker`` if loaded."""
    marker = tmp_path / "unpickled"
    scope = {}
    exec(_MARKER_PAYLOAD.format(marker=str(marker)), scope)
    cache.store(_key(), scope["payload"])
    return marker


def _load_twice(cache):
    import pickle
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = [cache.load(_key()) for _ in range(2)]
    for payload in got[:1]:
        if payload is not None:
            pickle.loads(payload)  # what fast_path_disk does with a payload it is given
    return got, [w for w in caught if issubclass(w.category, disk_cache.UnsafeCacheWarning)]


@pytest.fixture
def fresh_warnings(monkeypatch):
    monkeypatch.setattr(disk_cache, "_WARNED", set())


@pytest.mark.parametrize("where", ["world-writable root", "group-writable subdirectory", "other owner's entry",
                                   "other owner's root", "world-writable entry", "symlinked entry"])
def test_unsafe_cache_is_not_read(tmp_path, fresh_warnings, where):
    import os

    root = tmp_path / "cache"
    cache = DiskCache(root)
    marker = _planted_entry(tmp_path, cache)
    entry = cache.path(_key())
    if where == "world-writable root":
        os.chmod(root, 0o777)
    elif where == "group-writable subdirectory":
        os.chmod(entry.parent, 0o770)
    elif where == "other owner's entry":
        os.chown(entry, 65534, 65534)
    elif where == "other owner's root":
        os.chown(root, 65534, 65534)
    elif where == "world-writable entry":
        os.chmod(entry, 0o666)
    else:
        elsewhere = tmp_path / "elsewhere.bin"
        entry.rename(elsewhere)
        entry.symlink_to(elsewhere)
    before = disk_cache.STATS["refused"]
    got, warned = _load_twice(cache)
    assert got == [None, None]
    assert not marker.exists()
    assert disk_cache.STATS["refused"] - before == 2
    assert len(warned) == 1  # once per directory, however many entries are refused
    message = str(warned[0].message)
    assert message.startswith(f"parity's disk cache at {root} is not read: ")
    assert "fix: " in message and "cache_dir=False" in message


def test_safe_cache_is_read(tmp_path, fresh_warnings):
    """The same planted entry in a directory only this user writes is read (the control case)."""
    cache = DiskCache(tmp_path / "cache")
    marker = _planted_entry(tmp_path, cache)
    got, warned = _load_twice(cache)
    assert got[0] is not None and warned == []
    assert marker.exists()


def test_default_directory_is_private(tmp_path, monkeypatch):
    import os
    import stat

    monkeypatch.delenv("PARITY_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    root = resolve_cache_dir(None)
    assert root == str(tmp_path / "xdg" / "parity")
    DiskCache(root).store(_key(), b"payload")
    for path in (root, DiskCache(root).path(_key()).parent):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o700
    assert DiskCache(root).load(_key()) == b"payload"
