"""parity-numpy-backend: an out-of-tree parity backend (the plugin template).

Installed, it registers the entry point ``numpy`` in the group ``parity.backends``, so
``parity.compile(model, backend="numpy")``, ``parity conform --backend numpy`` and
``pytest --parity-backend numpy`` find it without any change to parity.
"""

from .backend import NumpyBackend

__all__ = ["NumpyBackend"]
