"""Finding backends by name: the built-ins listed here, plus entry points.

Built-in backends are named in one explicit table and imported only when asked for
(so ``import parity`` does not import jax or triton). Each names the pip extra that
installs its stack (``pip install 'parity[xla]'``, following ``jax[cuda]``); asking for a
backend whose stack is missing raises :class:`BackendNotInstalled` with that line.
Out-of-tree backends register an entry point in the group ``parity.backends`` pointing
at their Backend class.

Example::

    >>> from parity.backends import registry
    >>> registry.get_backend("reference").name
    'reference'
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
from dataclasses import dataclass
from importlib.metadata import entry_points

from ..ir.errors import ParityError
from .base import Backend

ENTRY_POINT_GROUP = "parity.backends"


@dataclass(frozen=True)
class BuiltinBackend:
    """Where a built-in backend lives ("module:Class", imported lazily) and what it needs.

    ``requires``: the top-level modules of its stack, checked before the import so a
    missing one is reported with ``extra``'s pip line (not as a traceback from deep inside).
    """

    target: str
    extra: str | None = None
    requires: tuple[str, ...] = ()


BUILTIN_BACKENDS: dict[str, BuiltinBackend] = {
    "reference": BuiltinBackend("parity.backends.reference:ReferenceBackend"),
    "xla": BuiltinBackend("parity.backends.xla:XlaBackend", extra="xla", requires=("jax", "jaxlib")),
    "triton": BuiltinBackend("parity.backends.triton:TritonBackend", extra="triton", requires=("triton",)),
    "onnx": BuiltinBackend("parity.backends.onnx:OnnxBackend", extra="onnx", requires=("onnx", "onnxruntime")),
    "inductor": BuiltinBackend("parity.backends.inductor:InductorBackend"),  # torch only: the core install
}

_instances: dict[str, Backend] = {}
_lock = threading.Lock()


class BackendNotFound(ParityError, LookupError):
    pass


class ExtraNotInstalled(ParityError, ImportError):
    """Something parity can do needs an optional extra that is not installed."""


class BackendNotInstalled(BackendNotFound, ExtraNotInstalled):
    """A built-in backend whose stack (an optional extra) is not installed."""


def pip_install_line(extra: str) -> str:
    """The command that installs an extra: ``pip install 'parity[xla]'``."""
    return f"pip install 'parity[{extra}]'"


def missing_modules(modules: tuple[str, ...]) -> list[str]:
    """Those of ``modules`` (top-level names) that cannot be imported here."""
    return [m for m in modules if importlib.util.find_spec(m) is None]


def import_extra(module: str, extra: str, purpose: str):
    """``import module``, or an :class:`ExtraNotInstalled` naming the pip line of ``extra``.

    ``purpose`` completes "... needs <module>": e.g. "parity.distributed".
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ExtraNotInstalled(
            f"{purpose} needs {module}, which is not installed ({exc}). Run: {pip_install_line(extra)}"
        ) from exc


def _entry_points() -> dict[str, object]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def backend_names() -> list[str]:
    """Every backend parity can find: built-ins first, then plugins."""
    return [*BUILTIN_BACKENDS, *plugin_names()]


def plugin_names() -> list[str]:
    """The backends that entry points register (not built in), sorted."""
    return sorted(n for n in _entry_points() if n not in BUILTIN_BACKENDS)


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
    builtin = BUILTIN_BACKENDS.get(name)
    if builtin is not None:
        missing = missing_modules(builtin.requires)
        if missing:
            raise BackendNotInstalled(
                f"backend {name!r} needs {', '.join(missing)}, not installed here. "
                f"Run: {pip_install_line(builtin.extra)} (or choose another backend; 'reference' needs nothing more)."
            )
        module_name, _, attr = builtin.target.partition(":")
        try:
            return getattr(importlib.import_module(module_name), attr)
        except ImportError as exc:
            fix = pip_install_line(builtin.extra) if builtin.extra else "pip install parity"
            raise BackendNotInstalled(
                f"backend {name!r} could not be loaded: {exc}. "
                f"Install its dependencies ({fix}) or choose another backend."
            ) from exc
    ep = _entry_points().get(name)
    if ep is None:
        known = ", ".join(backend_names())
        raise BackendNotFound(
            f"no backend named {name!r}. Known backends: {known}. "
            f"A plugin backend registers an entry point in the group {ENTRY_POINT_GROUP!r}."
        )
    return ep.load()
