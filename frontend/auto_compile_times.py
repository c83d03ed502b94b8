"""How long each backend took to compile, so ``backend="auto"`` knows what a candidate costs.

Per (backend, device), the IR node count and seconds of its latest real compiles (not
those served from a cache), kept in this process and in the disk cache (so a new process
knows them; a plugin's times under its installed version, frontend/auto_installed.py). :func:`compile_floor` is a lower bound for a new graph: the longest compile
measured on a graph no larger. frontend/auto.py does not race a candidate whose floor
exceeds what is left of its budget.

Example::

    >>> from types import SimpleNamespace
    >>> options = SimpleNamespace(device="cpu", cache_dir=None)
    >>> record_compile("doc-backend", options, 10, 2.5)
    >>> compile_floor("doc-backend", options, 12), compile_floor("doc-backend", options, 8)
    (2.5, None)
"""

from __future__ import annotations

import json

from .auto_installed import backend_version
from .session import AUTO

# (backend, device) -> [(IR nodes, seconds)]
_COMPILE_TIMES: dict[tuple[str, str], list[tuple[int, float]]] = {}


def reset() -> None:
    """Forget the times measured in this process (tests)."""
    _COMPILE_TIMES.clear()


def _compile_times(name: str, options) -> list[tuple[int, float]]:
    found = _COMPILE_TIMES.get((name, options.device))
    if found is None:
        found = []
        if options.cache_dir:
            from ..backends.disk_cache import DiskCache

            payload = DiskCache(options.cache_dir).load(_times_key(name, options))
            try:
                found = [(int(n), float(t)) for n, t in json.loads(payload)] if payload else []
            except (ValueError, TypeError):
                found = []
        _COMPILE_TIMES[(name, options.device)] = found
    return found


def compile_floor(name: str, options, nodes: int) -> float | None:
    """The longest measured compile of ``name`` on a graph of at most ``nodes`` nodes (None: none)."""
    times = [t for n, t in _compile_times(name, options) if n <= nodes]
    return max(times) if times else None


def record_compile(name: str, options, nodes: int, seconds: float) -> None:
    times = _compile_times(name, options)
    times.append((nodes, seconds))
    del times[:-32]  # the latest few are enough for a lower bound
    if options.cache_dir:
        from ..backends.disk_cache import DiskCache

        DiskCache(options.cache_dir).store(_times_key(name, options), json.dumps(times).encode())


def _times_key(name: str, options) -> dict:
    from ..backends.disk_cache import cache_key, stack_versions

    versions = stack_versions(name)
    installed = backend_version(name)
    if installed != "built-in":  # a plugin's stack is its own version: times of another build are not its
        versions = {**versions, "plugin": installed}
    return cache_key("compile-times", f"{AUTO}-compile-times", options.device, [name], versions)
