"""parity: one graph IR, many backends, and a conformance suite that proves they agree."""

from . import ir

__version__ = "0.1.0"
__all__ = ["ir", "__version__"]
