"""Complex numbers: ``complex``, ``real``, ``imag``, ``conj``, ``complex_abs`` and ``angle``.

Parts are drawn independently in the part dtype (``values``); the ``specials`` cases pair
every special value of the part dtype with plain and special partners, both ways round,
so NaN and infinite parts, signed zeros and subnormal parts all meet each op. The
arithmetic ops that take complex operands (add, exp, dot_general, ...) get their complex
cases from their own families, which sweep every dtype an op accepts.
"""

from __future__ import annotations

from ...ir.dtypes import COMPLEX_DTYPES, DType
from ...ir.types import tensor as _t
from .. import values as V
from ..case import Case, ErrorCase
from .common import EDGE, case, layouts, ops_of

IR_FAMILIES = ("complex",)
OPS = ops_of(IR_FAMILIES)

_PARTS = (DType.float32, DType.float64)


def _complex_cases() -> list[Case]:
    out = []
    for d in _PARTS:
        out += layouts("complex", d, lambda rng, shape, d=d: (V.normal(rng, d, shape), V.normal(rng, d, shape)),
                       broadcast_operand=1)
        out.append(case("complex", d, "specials", V.grid(V.specials(d), V.specials(d)), tags=(EDGE,)))
    return out


def _unary_cases(op: str) -> list[Case]:
    out = []
    for d in COMPLEX_DTYPES:
        out += layouts(op, d, lambda rng, shape, d=d: (V.normal(rng, d, shape),))
        out.append(case(op, d, "specials", (V.specials(d),), tags=(EDGE,)))
        out.append(case(op, d, "full_range", lambda rng, d=d: (V.full_range(rng, d, (64,)),), tags=(EDGE,)))
        out.append(case(op, d, "subnormals", lambda rng, d=d: (V.subnormals(rng, d, (32,)),), tags=(EDGE,)))
    return out


def cases() -> list[Case]:
    return _complex_cases() + [c for op in OPS if op != "complex" for c in _unary_cases(op)]


f32, f64, c64, i32 = DType.float32, DType.float64, DType.complex64, DType.int32

ERRORS = (
    ErrorCase("complex", (_t(f32, 3), _t(f64, 3)), {}, "insert a convert", "part_dtypes"),
    ErrorCase("complex", (DType.float16[3], DType.float16[3]), {}, "dtype f16 is not accepted", "f16_parts"),
    ErrorCase("real", (_t(f32, 3),), {}, "dtype f32 is not accepted", "real_operand"),
    ErrorCase("complex_abs", (_t(i32, 3),), {}, "dtype i32 is not accepted", "int_operand"),
    ErrorCase("convert", (_t(c64, 3),), {"dtype": f32}, "would drop the imaginary part", "complex_to_real"),
)
