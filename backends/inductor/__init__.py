"""The inductor backend: IR graphs lowered to ATen FX graphs and compiled by TorchInductor.

Example::

    >>> from parity.backends.inductor import InductorBackend
    >>> InductorBackend().claim_status("softmax"), InductorBackend().claim_status("gelu")
    ('native', 'decomposed')
"""

from .backend import InductorBackend, InductorExecutable, PerShapeCompileWarning
from .compiling import INDUCTOR_CONFIG
from .lowering import LOWERINGS, to_fx

__all__ = ["INDUCTOR_CONFIG", "LOWERINGS", "InductorBackend", "InductorExecutable", "PerShapeCompileWarning", "to_fx"]
