"""What the inductor backend does not claim, and its known, measured deviations.

:data:`UNSUPPORTED` lists the (op, dtype) cells the backend does not claim, each with
the reason it was measured to fail (``parity conform --backend inductor``); claims
are the rule table minus these. :data:`DEVIATIONS` are cells it claims and runs, with
the measured error where it is outside the IR's contract.
"""

from __future__ import annotations

from ...ir.dtypes import DType
from ..base import Deviation

UNSUPPORTED: dict[tuple[str, DType], str] = {}

# (op, dtype) -> measured max error in ULPs of the dtype, and why.
MEASURED: dict[tuple[str, DType], tuple[float, str]] = {}

DEVIATIONS: tuple[Deviation, ...] = tuple(
    Deviation(op=op, reason=reason, max_error=f"{ulps:.3g} ulp", dtype=dtype, device="cpu")
    for (op, dtype), (ulps, reason) in MEASURED.items()
)
