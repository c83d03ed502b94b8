"""The Triton backend: IR graphs become generated, fused Triton kernels (CUDA, or the
Triton interpreter on CPU with ``TRITON_INTERPRET=1``).

Importing this package does not import triton; compiling a graph does.

Example::

    >>> from parity.backends import get_backend
    >>> get_backend("triton").claim_status("sort")
    'extern'
"""

from .backend import DEVIATIONS, TritonBackend, TritonExecutable, TritonModeError, TritonOptions

__all__ = ["DEVIATIONS", "TritonBackend", "TritonExecutable", "TritonModeError", "TritonOptions"]
