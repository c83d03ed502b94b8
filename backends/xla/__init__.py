"""The XLA backend: parity IR lowered to ``jax.lax`` and compiled by XLA (CPU, CUDA, TPU).

Example::

    >>> from parity.backends import get_backend
    >>> get_backend("xla").name
    'xla'
"""

from .backend import XlaBackend, XlaDeviceError, XlaExecutable
from .lowering import LOWERINGS
from .sharding import collectives
from .stablehlo_export import export_stablehlo

__all__ = ["LOWERINGS", "XlaBackend", "XlaDeviceError", "XlaExecutable", "collectives", "export_stablehlo"]
