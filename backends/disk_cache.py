"""Compiled executables on disk, so a new process starts warm.

An entry is keyed by the IR graph's content hash, the backend, the device, the input
types and the versions of parity, Python, torch and the backend's own stack (jax/jaxlib,
onnx/onnxruntime, triton), and, where the payload is native code (XLA's executables), by
the host it was compiled for: its CPU model and CPU count. The key's fields are hashed into the file name
(content-addressed), and written again into the file's header, which :meth:`DiskCache.load`
checks field by field, with a checksum of the payload: an entry written by other versions,
or a truncated or corrupted file, is a miss (the caller compiles again and overwrites it),
never an error. Writers write a temporary file in the same directory and ``os.replace`` it
into place, so concurrent writers of one key each publish a whole file and a reader never
sees half of one.

The cache is on by default, in a per-user directory (:func:`default_cache_dir`, created
``0700``). Since a payload may be unpickled, an entry is only read from a directory that
nobody else can write: :meth:`DiskCache.load` opens the cache directory, the backend's
subdirectory and the entry one after the other, each relative to the one before and the
last two with ``O_NOFOLLOW``, and checks each *open* descriptor with ``fstat`` (so nothing
can be swapped between the check and the read): owned by this user, not writable by group
or others, the entry a regular file. Anything else is refused with one
:class:`UnsafeCacheWarning` per directory, and the caller compiles as if the cache were off.

What an entry holds is the backend's business: a :class:`Persister` per backend (the
explicit :data:`PERSISTERS` table, imported lazily) turns a compiled executable into
bytes and back. A backend without one compiles as before.

Example::

    >>> import tempfile
    >>> cache = DiskCache(tempfile.mkdtemp())
    >>> key = cache_key("abc123", "xla", "cpu", ["f32[4]"])
    >>> cache.load(key) is None
    True
    >>> cache.store(key, b"bytes"); cache.load(key)
    b'bytes'
"""

from __future__ import annotations

import collections
import functools
import hashlib
import importlib
import json
import os
import stat
import sys
import tempfile
import warnings
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Protocol

from ..ir.precision import Precision
from .base import compile_at, precision_for
from .host import host
from .plugin_persist import plugin_persister
from .runtime import RuntimeRequest

#: What the disk cache did in this process: "loads" (entries used), "stores" (entries
#: written), "misses" (no usable entry: absent, other versions, or damaged) and "rejected"
#: (an entry was there but failed its header or checksum check, or the backend could not load it),
#: "refused" (an unsafe directory or entry, never read).
STATS: collections.Counter = collections.Counter()

MAGIC = b"PARITY-EXECUTABLE 1\n"

# The distributions whose versions an entry of each backend depends on.
STACKS: dict[str, tuple[str, ...]] = {
    "xla": ("jax", "jaxlib"),
    "onnx": ("onnx", "onnxruntime"),
    "triton": ("triton",),
}

# backend name -> "module:Class" of its Persister (imported only when that backend persists).
PERSISTERS: dict[str, str] = {
    "xla": "parity.backends.xla.persist:XlaPersister",
    "onnx": "parity.backends.onnx.persist:OnnxPersister",
}

ENV_VAR = "PARITY_CACHE_DIR"


class Persister(Protocol):
    """A backend's half of the disk cache."""

    def build(self, backend, graph, device: str, precision: Precision) -> tuple[Any, bytes | None]:
        """Compile ``graph`` at ``precision``; return the executable and its bytes (None: not persistable)."""

    def load(self, backend, graph, device: str, payload: bytes, precision: Precision) -> Any:
        """The executable ``payload`` holds, without compiling; raises if it cannot."""

    #: Whether a payload is native code for this host (its CPU model and CPU count join the key).
    native_code: bool


class UnsafeCacheWarning(UserWarning):
    """A cache directory or entry that another user owns or can write: it is not read."""


# Directories already warned about in this process (one warning each).
_WARNED: set[str] = set()


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/parity`` (``~/.cache/parity``): the cache's default directory."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "parity"


def resolve_cache_dir(cache_dir: str | os.PathLike | bool | None) -> str | None:
    """The directory the options layer passes down, read from the environment once, here.

    ``None`` or ``True``: ``$PARITY_CACHE_DIR`` if set (empty means off), else
    :func:`default_cache_dir`. ``False``: off. A path: that path.
    """
    if cache_dir is False:
        return None
    if cache_dir is None or cache_dir is True:
        env = os.environ.get(ENV_VAR)
        if env is not None:
            return env or None
        return str(default_cache_dir())
    return os.fspath(cache_dir)


@functools.cache  # an installed version does not change under a running process (metadata reads cost ~1 ms)
def _version(dist: str) -> str:
    try:
        return version(dist)
    except PackageNotFoundError:
        return "absent"


def stack_versions(backend: str) -> dict[str, str]:
    """Versions an entry of ``backend`` was built with: parity, Python, torch and its stack."""
    dists = ("parity", "torch", *STACKS.get(backend, ()))
    found = {d: _version(d) for d in dists}
    found["python"] = sys.version.split()[0]
    return found


def cache_key(content_hash: str, backend: str, device: str, input_types, versions: dict | None = None,
              precision: Precision = Precision.EXACT) -> dict:
    """Every field an entry depends on (a dict: it is the file's header too). The precision
    tier is a field only when it is not EXACT, so entries written before tiers stay valid."""
    key = {"graph": content_hash, "backend": backend, "device": device,
           "inputs": [str(t) for t in input_types],
           "versions": versions if versions is not None else stack_versions(backend)}
    if precision is not Precision.EXACT:
        key["precision"] = precision.value
    return key


def _encode(key: dict) -> bytes:
    return json.dumps(key, sort_keys=True, separators=(",", ":")).encode()


@dataclass(frozen=True)
class DiskCache:
    """Entries under ``root``, one file each, named by the hash of their key."""

    root: str | os.PathLike

    def path(self, key: dict) -> Path:
        digest = hashlib.sha256(_encode(key)).hexdigest()
        return Path(self.root) / key["backend"] / f"{digest}.bin"

    def load(self, key: dict) -> bytes | None:
        """The payload stored under ``key``, or None (absent, other versions, damaged, unsafe)."""
        path = self.path(key)
        try:
            data = _read_safely(Path(self.root), path.relative_to(self.root).parts)
        except UnsafeEntry as unsafe:
            STATS["refused"] += 1
            _warn_once(str(self.root), str(unsafe))
            return None
        except OSError:
            STATS["misses"] += 1
            return None
        payload = _unpack(data, _encode(key))
        if payload is None:
            STATS["misses"] += 1
            STATS["rejected"] += 1
        return payload

    def store(self, key: dict, payload: bytes) -> None:
        """Write an entry atomically (temporary file + ``os.replace``); failures are ignored:
        a cache that cannot be written costs a compile next time, nothing else."""
        target = self.path(key)
        header = _encode(key)
        digest = hashlib.sha256(payload).hexdigest().encode()
        try:
            os.makedirs(self.root, mode=0o700, exist_ok=True)  # only you: what is read back may be unpickled
            os.makedirs(target.parent, mode=0o700, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=target.stem, suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(MAGIC + header + b"\n" + digest + b"\n" + payload)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, target)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError:
            return
        STATS["stores"] += 1


class UnsafeEntry(Exception):
    """Why a cache path may not be read (its message names the path)."""


def _check(fd: int, path: Path, kind: str) -> None:
    """Raise :class:`UnsafeEntry` unless the open ``fd`` is a ``kind`` ("directory" or
    "file") this user owns that neither group nor others can write."""
    info = os.fstat(fd)
    is_kind = stat.S_ISDIR(info.st_mode) if kind == "directory" else stat.S_ISREG(info.st_mode)
    if not is_kind:
        raise UnsafeEntry(f"{path} is not a regular {kind}")
    if info.st_uid != os.geteuid():
        raise UnsafeEntry(f"{path} is owned by uid {info.st_uid}, not by you (uid {os.geteuid()})")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UnsafeEntry(f"{path} is writable by {'others' if info.st_mode & stat.S_IWOTH else 'its group'} "
                          f"(mode {stat.S_IMODE(info.st_mode):o})")


def _read_safely(root: Path, parts: tuple[str, ...]) -> bytes:
    """The bytes of ``root/parts...``, each component opened relative to the one before
    (below the root without following symlinks) and checked on its open descriptor."""
    fds = _open_checked(root, parts, "file")
    try:
        with os.fdopen(fds.pop(), "rb") as f:
            return f.read()
    finally:
        for fd in fds:
            os.close(fd)


def check_private_directory(root: Path, parts: tuple[str, ...] = ()) -> None:
    """Raise :class:`UnsafeEntry` unless ``root`` and each directory ``root/parts...`` below it
    (not followed through symlinks) is one this user owns that neither group nor others can write."""
    for fd in _open_checked(root, parts, "directory"):
        os.close(fd)


def _open_checked(root: Path, parts: tuple[str, ...], last_kind: str) -> list[int]:
    """Open descriptors of ``root`` and of each of ``parts`` in turn (the last one a ``last_kind``),
    each checked by :func:`_check`; the caller closes them."""
    fds = [os.open(root, os.O_RDONLY | os.O_DIRECTORY)]  # the root itself may be a symlink; its target is checked
    try:
        _check(fds[0], root, "directory")
        path = root
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            kind = last_kind if last else "directory"
            flags = os.O_RDONLY | os.O_NOFOLLOW | (os.O_DIRECTORY if kind == "directory" else 0)
            try:
                fds.append(os.open(part, flags, dir_fd=fds[-1]))
            except OSError as err:
                if os.path.islink(path / part):
                    raise UnsafeEntry(f"{path / part} is a symbolic link") from err
                raise
            path = path / part
            _check(fds[-1], path, kind)
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return fds


_FIX = ("pass cache_dir= a directory only you can write, or cache_dir=False to turn the cache off")


def _warn_once(root: str, why: str, what: str = "parity's disk cache", fix: str = _FIX) -> None:
    if root in _WARNED:
        return
    _WARNED.add(root)
    warnings.warn(f"{what} at {root} is not read: {why}. Anyone who can write there could run "
                  f"code in this process through a cache entry.\n  fix: let only you write it "
                  f"(chown $USER and chmod 700 the directory), {fix}", UnsafeCacheWarning, stacklevel=2)


def _unpack(data: bytes, header: bytes) -> bytes | None:
    """The payload of a file's bytes if its header is exactly ``header`` and its checksum holds."""
    if not data.startswith(MAGIC):
        return None
    rest = data[len(MAGIC):]
    found, _, rest = rest.partition(b"\n")
    digest, _, payload = rest.partition(b"\n")
    if found != header or hashlib.sha256(payload).hexdigest().encode() != digest:
        return None
    return payload


def persister(backend_name: str) -> Persister | None:
    """The :class:`Persister` of a built-in backend, or None (it compiles every time)."""
    target = PERSISTERS.get(backend_name)
    if target is None:
        return None
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)()


def entry_key(graph, backend_name: str, device: str, precision: Precision, handler: Persister) -> dict:
    """The key of ``graph``'s entry: :func:`cache_key`, plus the host where the payload is
    native code (compiled for this CPU, and sized for its CPU count: backends/host.py)."""
    key = cache_key(graph.content_hash(), backend_name, device, graph.input_types, precision=precision)
    if handler.native_code:
        key["host"] = host()
    return key


def compile_cached(graph, backend, device: str, cache_dir: str | None, precision: Precision = Precision.EXACT,
                   request: RuntimeRequest | None = None):
    """``backend.compile(graph, device)`` at the tier ``precision_for(backend, precision)``
    gives (base.compile_at), with ``request``'s options and parameters where the backend declares
    them (backends/runtime.py), through the disk cache at ``cache_dir`` (None: off). A plugin
    persists through its ``save_artifact``/``load_artifact`` (backends/plugin_persist.py).

    Returns ``(executable, loaded)``: ``loaded`` is True when it came from disk.
    """
    precision = precision_for(backend, precision)
    handler = (persister(backend.name) or plugin_persister(backend)) if cache_dir else None
    if handler is None:
        return compile_at(backend, graph, device, precision, request), False
    cache = DiskCache(cache_dir)
    key = entry_key(graph, backend.name, device, precision, handler)
    runtime = (request.key() if request is not None else "")
    if runtime:  # only a backend that declares options or binds parameters has one (built-in keys unchanged)
        key["runtime"] = runtime
    if getattr(backend, "artifact_version", None):
        key["artifact"] = [backend.artifact_version, _plugin_version(backend)]
    extra = (request,) if runtime else ()
    payload = cache.load(key)
    if payload is not None:
        try:
            executable = handler.load(backend, graph, device, payload, precision, *extra)
        except Exception:  # an entry this runtime cannot read back: compiled again, overwritten
            STATS["rejected"] += 1
        else:
            STATS["loads"] += 1
            return executable, True
    executable, payload = handler.build(backend, graph, device, precision, *extra)
    if payload is not None:
        cache.store(key, payload)
    return executable, False


def _plugin_version(backend) -> str:
    """The version of the distribution that installed ``backend``'s module ("absent": none did)."""
    top = type(backend).__module__.partition(".")[0]
    dists = _distributions().get(top) or ["absent"]
    return _version(dists[0]) if dists[0] != "absent" else "absent"


@functools.cache  # reads every installed distribution's metadata once per process
def _distributions() -> dict:
    from importlib.metadata import packages_distributions

    return packages_distributions()
