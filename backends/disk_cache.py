"""Compiled executables on disk, so a new process starts warm.

An entry is keyed by the IR graph's content hash, the backend, the device, the input
types and the versions of parity, Python, torch and the backend's own stack (jax/jaxlib,
onnx/onnxruntime, triton). The key's fields are hashed into the file name
(content-addressed), and written again into the file's header, which :meth:`DiskCache.load`
checks field by field, with a checksum of the payload: an entry written by other versions,
or a truncated or corrupted file, is a miss (the caller compiles again and overwrites it),
never an error. Writers write a temporary file in the same directory and ``os.replace`` it
into place, so concurrent writers of one key each publish a whole file and a reader never
sees half of one.

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
import hashlib
import importlib
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Protocol

from ..ir.precision import Precision
from .base import compile_at, precision_for

#: What the disk cache did in this process: "loads" (entries used), "stores" (entries
#: written), "misses" (no usable entry: absent, other versions, or damaged) and "rejected"
#: (an entry was there but failed its header or checksum check, or the backend could not load it).
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


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/parity`` (``~/.cache/parity``): where ``cache_dir=True`` puts entries."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "parity"


def resolve_cache_dir(cache_dir: str | os.PathLike | bool | None) -> str | None:
    """The directory the options layer passes down, read from the environment once, here.

    ``None``: ``$PARITY_CACHE_DIR`` if set (empty means off), else off. ``True``: that
    variable or :func:`default_cache_dir`. ``False``: off. A path: that path.
    """
    if cache_dir is False:
        return None
    if cache_dir is None or cache_dir is True:
        env = os.environ.get(ENV_VAR)
        if env is not None:
            return env or None
        return str(default_cache_dir()) if cache_dir is True else None
    return os.fspath(cache_dir)


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
        """The payload stored under ``key``, or None (absent, other versions, damaged)."""
        try:
            data = self.path(key).read_bytes()
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
            target.parent.mkdir(parents=True, exist_ok=True)
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


def compile_cached(graph, backend, device: str, cache_dir: str | None, precision: Precision = Precision.EXACT):
    """``backend.compile(graph, device)`` at the tier ``precision_for(backend, precision)``
    gives (base.compile_at), through the disk cache at ``cache_dir`` (None: off).

    Returns ``(executable, loaded)``: ``loaded`` is True when it came from disk.
    """
    precision = precision_for(backend, precision)
    handler = persister(backend.name) if cache_dir else None
    if handler is None:
        return compile_at(backend, graph, device, precision), False
    cache = DiskCache(cache_dir)
    key = cache_key(graph.content_hash(), backend.name, device, graph.input_types, precision=precision)
    payload = cache.load(key)
    if payload is not None:
        try:
            executable = handler.load(backend, graph, device, payload, precision)
        except Exception:  # an entry this runtime cannot read back: compiled again, overwritten
            STATS["rejected"] += 1
        else:
            STATS["loads"] += 1
            return executable, True
    executable, payload = handler.build(backend, graph, device, precision)
    if payload is not None:
        cache.store(key, payload)
    return executable, False
