"""What the inductor backend does not claim, and its known, measured deviations.

:data:`UNSUPPORTED` lists the (op, dtype) cells the backend does not claim, each with
the reason it was measured to fail (``parity conform --backend inductor``); claims
are the rule table minus these. :data:`DEVIATIONS` are cells it claims and runs, with
the measured error where it is outside the IR's contract.
"""

from __future__ import annotations

from ...ir.dtypes import DType
from ..base import Deviation

_FMOD = ("Inductor's fmod gives NaN for a subnormal divisor (fmod(1, 1e-45) = NaN, specials) and for a "
         "quotient past the float range (fmod(1e30, -3e-41)), where C's fmod is exact")

# torch 2.13's Inductor on CPU, measured by parity conform and reproduced with torch.compile alone
_SUM_8BIT = ("Inductor's CPU sum (its AVX2 kernels; the AVX-512 ones are right) of 8-bit integers is wrong: the int8 row [-128, -127, -1, 0, 1, 2, 7, 126, 127] "
             "sums to 31 where the wrapped sum (and eager torch) is 7")
_ARGMIN_8BIT = ("Inductor's CPU argmin over 8-bit integers (its AVX2 kernels) returns index 0 for every row (argmin along axis 1 "
                "of a 4x9 uint8 array gives [0, 0, 0, 0] where eager torch gives [0, 0, 2, 7])")

UNSUPPORTED: dict[tuple[str, DType], str] = {
    **{("reduce_sum", d): _SUM_8BIT for d in (DType.int8, DType.uint8)},
    **{("argmin", d): _ARGMIN_8BIT for d in (DType.int8, DType.uint8)},
    **{("rem", d): _FMOD for d in (DType.float16, DType.bfloat16, DType.float32, DType.float64)},
    ("reduce_prod", DType.float64): (
        "Inductor multiplies in a tree: tiny · tiny underflows to 0 and inf · 0 gives NaN where the IR's "
        "sequential product is inf (full_range: NaN for inf); float64 has no wider type to compute in"),
}

# (op, dtype) -> measured max error in ULPs of the dtype, and why. None at present: complex
# division, the last entry, now runs complex64 in complex128 and measures within the contract.
MEASURED: dict[tuple[str, DType], tuple[float, str]] = {}

DEVIATIONS: tuple[Deviation, ...] = tuple(
    Deviation(op=op, reason=reason, max_error=f"{ulps:.3g} ulp", dtype=dtype, device="cpu")
    for (op, dtype), (ulps, reason) in MEASURED.items()
)
