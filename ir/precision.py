"""The precision tier a graph is compiled at: part of the contract between frontend and backend.

``EXACT`` (the default) is the IR's own semantics, held to the bounds of
docs/conformance.md: every product is rounded before it is added, and transcendental ops
meet their class bound. ``FAST`` lets a backend that declares it (``Backend.precisions``)
contract multiply-adds into fused multiply-adds and call its runtime's native
transcendental kernels, within the fast tier's published per-op bounds
(``conformance.bounds.FAST_BOUNDS``). Neither tier changes what NaN, ±inf or -0.0 give.

Example::

    >>> Precision.parse("fast")
    <Precision.FAST: 'fast'>
    >>> Precision.parse(Precision.EXACT).value
    'exact'
"""

from __future__ import annotations

import enum

from .errors import ParityError


class Precision(enum.Enum):
    EXACT = "exact"
    FAST = "fast"

    @classmethod
    def parse(cls, value: Precision | str) -> Precision:
        """``value`` as a Precision; a name that is none raises, naming the choices."""
        if isinstance(value, cls):
            return value
        for tier in cls:
            if value == tier.value:
                return tier
        raise ParityError(f"precision={value!r} is not a precision tier; choose one of "
                          f"{[t.value for t in cls]} ('exact' is the IR's contract, 'fast' allows FMA "
                          f"contraction and native kernels within the published fast-tier bounds)")
