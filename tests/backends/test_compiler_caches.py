"""The compilers' own caches (Inductor's, the Triton backend's generated modules) sit under
parity's per-user cache root, created 0700, and a directory another user owns or can write
is refused with one warning: the compiler then works in a private temporary directory."""

import os
import stat
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest

from parity.backends import disk_cache
from parity.backends.compiler_caches import INDUCTOR_ENV, compiler_cache_dir, use_private_inductor_cache


@pytest.fixture
def root(tmp_path, monkeypatch):
    """A fresh parity cache root; each test resolves the compiler directories afresh."""
    path = tmp_path / "parity-cache"
    path.mkdir(mode=0o700)
    monkeypatch.setenv("PARITY_CACHE_DIR", str(path))
    monkeypatch.delenv(INDUCTOR_ENV, raising=False)  # restored after the test, whatever sets it
    monkeypatch.setattr(disk_cache, "_WARNED", set())
    compiler_cache_dir.cache_clear()
    yield path
    compiler_cache_dir.cache_clear()


def _resolve_twice(name: str):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = compiler_cache_dir(name)
        compiler_cache_dir.cache_clear()  # a second resolution in this process warns no more
        second = compiler_cache_dir(name)
    return first, second, [w for w in caught if issubclass(w.category, disk_cache.UnsafeCacheWarning)]


def _private_temporary(path: Path) -> bool:
    return path.parent == Path(tempfile.gettempdir()) and stat.S_IMODE(path.stat().st_mode) == 0o700


def test_a_compiler_cache_is_created_private_under_the_root(root):
    first, second, warned = _resolve_twice("triton")
    assert first == second == root / "triton" and warned == []
    assert stat.S_IMODE((root / "triton").stat().st_mode) == 0o700


@pytest.mark.parametrize("where", ["world-writable root", "world-writable directory", "other owner's directory",
                                   "symlinked directory"])
def test_an_unsafe_compiler_cache_is_refused_once(root, tmp_path, where):
    target = root / "inductor"
    target.mkdir(mode=0o700)
    if where == "world-writable root":
        os.chmod(root, 0o777)
    elif where == "world-writable directory":
        os.chmod(target, 0o777)
    elif where == "other owner's directory":
        os.chown(target, 65534, 65534)
    else:
        target.rmdir()
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        target.symlink_to(tmp_path / "elsewhere")
    before = disk_cache.STATS["refused"]
    first, second, warned = _resolve_twice("inductor")
    assert _private_temporary(first) and _private_temporary(second) and first != second
    assert disk_cache.STATS["refused"] - before == 2
    assert len(warned) == 1
    message = str(warned[0].message)
    assert message.startswith(f"the inductor compiler cache under parity's cache root at {root} is not read: ")
    assert "fix: " in message and "PARITY_CACHE_DIR" in message


def test_with_the_cache_off_a_compiler_works_in_a_private_temporary_directory(root, monkeypatch):
    monkeypatch.setenv("PARITY_CACHE_DIR", "")
    assert _private_temporary(compiler_cache_dir("triton"))


def test_inductor_uses_parity_s_directory_unless_the_user_chose_one(root, tmp_path, monkeypatch):
    from torch._inductor.runtime.cache_dir_utils import cache_dir, default_cache_dir

    assert use_private_inductor_cache() == str(root / "inductor")
    assert cache_dir() == str(root / "inductor")  # where torch's Inductor now puts its cache
    monkeypatch.setenv(INDUCTOR_ENV, default_cache_dir())  # what torch writes back once it has used its default
    assert use_private_inductor_cache() == str(root / "inductor")
    chosen = tmp_path / "mine"
    monkeypatch.setenv(INDUCTOR_ENV, str(chosen))
    assert use_private_inductor_cache() == str(chosen) and os.environ[INDUCTOR_ENV] == str(chosen)


def test_inductor_never_uses_a_world_writable_root(root):
    os.chmod(root, 0o777)
    with pytest.warns(disk_cache.UnsafeCacheWarning):
        used = Path(use_private_inductor_cache())
    assert _private_temporary(used)


def test_triton_never_imports_its_modules_from_a_world_writable_root(root, monkeypatch):
    """A crafted module in a world-writable triton/ directory is never imported; the generated
    kernels are written and imported from a private temporary directory."""
    from parity.backends.triton import TritonBackend, TritonOptions
    from parity.ir import GraphBuilder, f32

    planted = root / "triton"
    planted.mkdir()
    os.chmod(planted, 0o777)
    crafted = planted / "parity_triton_crafted.py"
    marker = root / "imported"
    crafted.write_text(f"open({str(marker)!r}, 'w').close()\n")
    b = GraphBuilder("g")
    x = b.input(f32[4])
    graph = b.build([b.neg(x)])
    backend = TritonBackend(TritonOptions(interpret=True))
    with pytest.warns(disk_cache.UnsafeCacheWarning, match="the triton compiler cache"):
        (out,) = backend.compile(graph, "cpu")(np.arange(4, dtype=np.float32))
    assert np.asarray(out).tolist() == [-0.0, -1.0, -2.0, -3.0]
    assert sorted(p.name for p in planted.iterdir()) == [crafted.name] and not marker.exists()
    assert list(compiler_cache_dir("triton").glob("parity_triton_*.py"))  # where they were written instead


@pytest.mark.parametrize("where", ["private", "world-writable", "other owner's", "absent"])
def test_inductor_precompiled_headers_are_used_only_from_a_private_directory(tmp_path, monkeypatch, where):
    """Inductor keeps its precompiled headers in /tmp/torchinductor_$USER whatever
    TORCHINDUCTOR_CACHE_DIR says, and every C++ kernel includes them: parity's compiles use
    them only from a directory this user owns that nobody else can write (created 0700 when
    absent); otherwise they compile without them, with one warning."""
    from torch._inductor import codecache

    from parity.backends.compiler_caches import inductor_header_settings

    shared = tmp_path / "torchinductor_user"
    if where != "absent":
        (shared / "precompiled_headers").mkdir(parents=True, mode=0o700)
        os.chmod(shared, 0o700)
    if where == "world-writable":
        os.chmod(shared, 0o777)
    elif where == "other owner's":
        os.chown(shared / "precompiled_headers", 65534, 65534)
    monkeypatch.setattr(codecache, "_HEADER_DIR", str(shared / "precompiled_headers"))
    monkeypatch.setattr(disk_cache, "_WARNED", set())
    inductor_header_settings.cache_clear()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            settings = inductor_header_settings()
    finally:
        inductor_header_settings.cache_clear()
    warned = [str(w.message) for w in caught if issubclass(w.category, disk_cache.UnsafeCacheWarning)]
    if where in ("private", "absent"):
        assert settings == {} and warned == []
        assert stat.S_IMODE((shared / "precompiled_headers").stat().st_mode) & 0o022 == 0
    else:
        assert settings == {"cpp_cache_precompile_headers": False}
        assert len(warned) == 1 and "precompiled-header directory" in warned[0] and "or remove it" in warned[0]
