"""A plugin's compiled artifacts in parity's disk cache (backends/disk_cache.py).

A backend that declares ``artifact_version`` (a non-empty string, bumped whenever its bytes
change meaning) hands its executable to parity as bytes, ``save_artifact(executable)``, and
gets it back in a later process, ``load_artifact(graph, device, payload, **keywords)``, with
the keywords ``compile`` took. parity keeps the bytes as it keeps its own backends': a file
in a directory only this user can write, named by the hash of a key (graph, device, input
types, tier, options, parameters, the versions of parity, torch and the plugin's
distribution, ``artifact_version``, and the host when ``artifact_native_code``), checked
against its header and checksum before the bytes reach ``load_artifact``. parity never
unpickles them; the plugin should not either (docs/plugins.md).

Example::

    >>> from parity.backends.registry import get_backend
    >>> plugin_persister(get_backend("reference")) is None   # it declares no artifact_version
    True
"""

from __future__ import annotations

from .base import compile_at, precision_keywords
from .runtime import RuntimeRequest, compile_keywords


class PluginPersister:
    """The disk cache's :class:`~parity.backends.disk_cache.Persister` for a plugin."""

    def __init__(self, backend):
        self.native_code = bool(getattr(backend, "artifact_native_code", False))

    def build(self, backend, graph, device: str, precision, request: RuntimeRequest | None = None):
        executable = compile_at(backend, graph, device, precision, request)
        payload = backend.save_artifact(executable)
        if payload is not None and not isinstance(payload, bytes):
            raise TypeError(f"the {backend.name} backend's save_artifact returned {type(payload).__name__}, "
                            f"not bytes or None")
        return executable, payload

    def load(self, backend, graph, device: str, payload: bytes, precision, request: RuntimeRequest | None = None):
        return backend.load_artifact(graph, device, payload, **precision_keywords(backend, precision),
                                     **compile_keywords(backend, request))


def plugin_persister(backend) -> PluginPersister | None:
    """A :class:`PluginPersister` if ``backend`` declares ``artifact_version``, else None. None too
    for a backend that claims subgraphs: what it compiles may be several executables run in turn
    (backends/subgraph_claims.py), which one artifact does not hold; it compiles in each process."""
    if getattr(backend, "claim_subgraphs", None) is not None:
        return None
    return PluginPersister(backend) if getattr(backend, "artifact_version", None) else None
