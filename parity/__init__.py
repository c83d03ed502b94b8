"""parity: one graph IR, many backends, and a conformance suite that proves they agree.

``import parity`` stays light (no torch): :func:`compile` imports the PyTorch frontend
on first use.
"""

from . import ir

__version__ = "0.1.0"
__all__ = ["compile", "ir", "__version__"]


def compile(fn_or_module=None, *, backend="reference", device="cpu", strict=True, dynamic=None):
    """Compile a torch function or ``nn.Module`` with a parity backend.

    Usable as ``@parity.compile``, ``@parity.compile(backend="xla")`` or
    ``parity.compile(module, backend="onnx", strict=False)``; see
    :func:`parity.frontend.api.compile` for the details.
    """
    from .frontend.api import compile as compile_

    return compile_(fn_or_module, backend=backend, device=device, strict=strict, dynamic=dynamic)
