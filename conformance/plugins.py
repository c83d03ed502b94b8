"""Backends loaded by ``module:attr`` (``parity conform --plugin``), without an entry point.

A plugin author certifies a backend before packaging it: ``attr`` names a
:class:`~parity.backends.base.Backend` subclass, an instance, or a function returning
one. The controller and every worker load the same specs, so a worker process finds
the backend by name as the controller does.

Example::

    >>> load_plugins(["parity.backends.reference:ReferenceBackend"])
    ['reference']
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from ..backends.base import Backend
from ..backends.registry import register_backend


class PluginError(ValueError):
    """A ``--plugin`` spec that does not name a backend."""


def load_plugin(spec: str) -> Backend:
    """Import ``module:attr``, make it a Backend instance and register it by its name."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise PluginError(f"--plugin {spec!r}: expected 'module:attr', e.g. 'my_vendor.parity_backend:VendorBackend'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise PluginError(f"--plugin {spec!r}: cannot import {module_name!r} ({exc}). Is its folder on "
                          "PYTHONPATH, or the package installed in this environment?") from exc
    try:
        target = getattr(module, attr)
    except AttributeError:
        raise PluginError(f"--plugin {spec!r}: module {module_name!r} has no attribute {attr!r}") from None
    backend = target() if callable(target) and not isinstance(target, Backend) else target
    if not isinstance(backend, Backend):
        raise PluginError(f"--plugin {spec!r}: {attr} gave a {type(backend).__name__}, not a parity Backend "
                          "(subclass parity.backends.base.Backend)")
    register_backend(backend)
    return backend


def load_plugins(specs: Sequence[str]) -> list[str]:
    """Load every spec; the names of the backends they registered."""
    return [load_plugin(s).name for s in specs]
