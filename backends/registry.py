"""Finding backends by name: the built-ins listed here, plus entry points.

Built-in backends are named in one explicit table and imported only when asked for
(so ``import parity`` does not import jax or triton). Out-of-tree backends register an
entry point in the group ``parity.backends`` pointing at their Backend class.

Example::

    >>> from parity.backends import registry
    >>> registry.get_backend("reference").name
    'reference'
"""

from __future__ import annotations

import importlib
import threading
from importlib.metadata import entry_points

from ..ir.errors import ParityError
from .base import Backend

ENTRY_POINT_GROUP = "parity.backends"

# name -> "module:Class", imported lazily.
BUILTIN_BACKENDS: dict[str, str] = {
    "reference": "parity.backends.reference:ReferenceBackend",
    "xla": "parity.backends.xla:XlaBackend",
    "triton": "parity.backends.triton:TritonBackend",
    "onnx": "parity.backends.onnx:OnnxBackend",
}

_instances: dict[str, Backend] = {}
_lock = threading.Lock()


class BackendNotFound(ParityError, LookupError):
    pass


def _entry_points() -> dict[str, object]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def backend_names() -> list[str]:
    """Every backend parity can find: built-ins first, then plugins."""
    names = list(BUILTIN_BACKENDS)
    names += sorted(n for n in _entry_points() if n not in BUILTIN_BACKENDS)
    return names


def get_backend(name: str) -> Backend:
    """The backend called ``name`` (one shared instance per process)."""
    with _lock:
        if name in _instances:
            return _instances[name]
        cls = _load_class(name)
        backend = cls()
        _instances[name] = backend
        return backend


def register_backend(backend: Backend) -> None:
    """Register an instance directly (tests, notebooks). Entry points are the normal way."""
    with _lock:
        _instances[backend.name] = backend


def unregister_backend(name: str) -> None:
    with _lock:
        _instances.pop(name, None)


def _load_class(name: str):
    target = BUILTIN_BACKENDS.get(name)
    if target is not None:
        module_name, _, attr = target.partition(":")
        try:
            return getattr(importlib.import_module(module_name), attr)
        except ImportError as exc:
            raise BackendNotFound(
                f"backend {name!r} could not be loaded: {exc}. "
                f"Install its dependencies (pip install parity) or choose another backend."
            ) from exc
    ep = _entry_points().get(name)
    if ep is None:
        known = ", ".join(backend_names())
        raise BackendNotFound(
            f"no backend named {name!r}. Known backends: {known}. "
            f"A plugin backend registers an entry point in the group {ENTRY_POINT_GROUP!r}."
        )
    return ep.load()
