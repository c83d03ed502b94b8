"""Which backends a ``backend="auto"`` decision was made among, each at its installed version.

A pick (frontend/auto.py) holds only among the backends that could race for it, and a compile
time (frontend/auto_compile_times.py) only for the build of the backend that took it. A plugin
installed, uninstalled or upgraded since makes either stale, so both are stored under keys that
hold what this module reports: a cache written while a plugin was installed is not read back
once it is gone (a pick made for it, or among a set it was part of, is raced again).

Example::

    >>> backend_version("onnx"), backend_version("no-such-backend")
    ('built-in', 'absent')
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from importlib.metadata import entry_points

from ..backends.registry import BUILTIN_BACKENDS, ENTRY_POINT_GROUP, get_backend
from ..ir.errors import ParityError


@functools.cache  # what is installed does not change under a running process (reading it costs ~50 ms)
def _plugin_versions() -> dict[str, str]:
    return {ep.name: ep.dist.version if ep.dist is not None else "unknown"
            for ep in entry_points(group=ENTRY_POINT_GROUP)}


def reset() -> None:
    """Read the installed plugins again (tests that install or uninstall one)."""
    _plugin_versions.cache_clear()


def backend_version(name: str) -> str:
    """``"built-in"`` for parity's own backends (their stacks' versions are in every cache key),
    a plugin's distribution version, ``"registered"`` for an instance registered in this process
    (``register_backend``: tests, notebooks), or ``"absent"`` when ``name`` cannot be loaded here."""
    try:
        get_backend(name)
    except (ParityError, ImportError):
        return "absent"
    if name in BUILTIN_BACKENDS:
        return "built-in"
    return _plugin_versions().get(name, "registered")


def installed_candidates(names: Iterable[str]) -> list[tuple[str, str]]:
    """``(name, backend_version(name))`` for each of ``names``, sorted: the candidate set a pick
    was made among."""
    return sorted((name, backend_version(name)) for name in set(names))
