"""The reference backend: the interpreter behind the Backend protocol."""

from .backend import ReferenceBackend

__all__ = ["ReferenceBackend"]
