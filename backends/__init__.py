"""Backends: the protocol, the registry, and the built-in backends.

Example::

    >>> from parity.backends import get_backend, backend_names
    >>> "reference" in backend_names()
    True
"""

from .base import Backend, ClaimStatus, Deviation, Executable, OpClaim, declining_complex
from .registry import (
    BackendNotFound,
    BackendNotInstalled,
    ExtraNotInstalled,
    backend_names,
    get_backend,
    register_backend,
    unregister_backend,
)

__all__ = [
    "Backend", "BackendNotFound", "BackendNotInstalled", "ClaimStatus", "Deviation", "Executable", "ExtraNotInstalled",
    "OpClaim", "backend_names", "declining_complex", "get_backend", "register_backend", "unregister_backend",
]
