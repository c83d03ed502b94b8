"""What a backend declares as data that changes how its results are measured.

Two facts, both per (backend, device) and read from the backend's own declarations:

- **flush-to-zero**: the float dtypes in which it reads subnormal inputs as ±0 and
  flushes subnormal results (``Deviation(..., dtype=D, flush_to_zero=True)``, one per
  dtype, each measured: ``execute.probe_flush_to_zero`` runs the probe). Nothing else counts: text that
  mentions "subnormal" declares nothing.
- **summation**: where the backend adds longer sequential chains of terms than the
  contract's ``CONTRACT_BLOCK`` (``Backend.summation``), so its accumulations are held
  to ``(⌈log₂ n⌉ + block)·ε·Σ|terms|`` with its own block, or ``n·ε·Σ|terms|`` when it
  declares one sequential pass.

Example::

    >>> from parity.backends.registry import get_backend
    >>> from parity.ir.dtypes import DType
    >>> d = Declared.of(get_backend("reference"), "cpu")
    >>> d.flushes, d.block("reduce_sum", DType.float32)
    (frozenset(), 64)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..backends.base import ANY_OP, Summation
from ..ir.dtypes import DType
from ..ir.precision import Precision
from .bounds import CONTRACT_BLOCK


@dataclass(frozen=True)
class Declared:
    flushes: frozenset[DType] = frozenset()
    summation: tuple[Summation, ...] = field(default=())
    precision: Precision = Precision.EXACT  # the tier measured: its bounds (bounds.FAST_BOUNDS)

    @classmethod
    def of(cls, backend, device: str) -> Declared:
        """The declarations of ``backend`` (any object with ``deviations``/``summation``) on ``device``;
        its ``precision`` is the tier it runs at (a :class:`~.tiers.AtPrecision` view), else EXACT."""
        flushes = frozenset(d.dtype for d in getattr(backend, "deviations", ())
                            if getattr(d, "flush_to_zero", False) and d.dtype is not None
                            and d.device in (None, device))
        summation = tuple(s for s in getattr(backend, "summation", ()) if s.device in (None, device))
        return cls(flushes, summation, getattr(backend, "precision", Precision.EXACT))

    def block(self, op: str, dtype: DType) -> int | None:
        """The longest sequential chain of ``op``'s sums in ``dtype``: the backend's declared
        block (None: one sequential pass), else the contract's."""
        fits = [s for s in self.summation if s.op in (op, ANY_OP) and s.dtype in (None, dtype)]
        if not fits:
            return CONTRACT_BLOCK
        block = min(fits, key=lambda s: s.op == ANY_OP).block  # the op's own entry first
        # a declared chain shorter than the contract's block (a probe's measure) never tightens the bound
        return None if block is None else max(block, CONTRACT_BLOCK)


NOTHING = Declared()
