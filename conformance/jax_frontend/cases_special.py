"""Frontend cases of ``frontend/jax/rules/special.py``: ``erfc`` and ``cbrt`` of float16,
bfloat16 and float32, computed in float64 and rounded once, ``lgamma`` and ``digamma`` (the IR's
ops of those names, computed the same way), and their float64 refusals.

Each dtype gets random draws, a sweep through the ranges the rule treats apart (erfc: the
series below |x| = 2 and the continued fraction above, out to where erfc underflows; cbrt:
magnitudes from the subnormals to the largest finite) and the edge values. The bound is
derived in the rule's note: 0.5 ULP for the one rounding to the operand's dtype, plus the
float64 steps' relative error (at most 1.2e-13 for erfc, 4e-15 for cbrt: under 0.01 ULP of
float32), declared as 1 ULP. The rule's own accuracy against math.erfc / np.cbrt (not only
JAX's) is tests/jax/test_special_rules.py's.
"""

from __future__ import annotations

import functools

import numpy as np

from ...ir.dtypes import DType
from .. import values as V
from ..bounds import Bound
from ..opdb.common import EDGE, RANDOM
from .spec import FrontendCase, Refusal

NARROW = (DType.float16, DType.bfloat16, DType.float32)
ROUNDED_ONCE = Bound("ulp", 1, note="computed in float64 and rounded once to the operand's dtype: 0.5 ULP, plus "
                                    "< 0.01 ULP from the float64 steps (frontend/jax/rules/special.py)")
# binary exponents from the smallest subnormal to past the largest finite
_EXPONENTS = {DType.float16: (-24, 16), DType.bfloat16: (-133, 128), DType.float32: (-149, 128)}
# per primitive: the lax function and its sweep (rng, dtype) -> values
_SWEEPS = {
    "erfc": lambda rng, d: V.cast(np.linspace(-6.0, 11.0, 2001), d),
    "cbrt": lambda rng, d: V.magnitudes(rng, d, (2001,), *_EXPONENTS[d], signed=True),
    # the IR's ops (ir/ops/special.py): negative non-integers, both series windows, shifts, magnitudes
    "lgamma": lambda rng, d: V.cast(np.concatenate([np.linspace(-20.0, 30.0, 1601), np.linspace(0.9, 2.1, 400),
                                                    np.exp2(rng.uniform(-20, 100, 200))]), d),
    "digamma": lambda rng, d: V.cast(np.concatenate([np.linspace(-20.0, 30.0, 1601), np.linspace(1.2, 1.7, 400),
                                                     np.exp2(rng.uniform(-20, 100, 200))]), d),
}


def _lax(name: str):
    from jax import lax

    return getattr(lax, name)


def _cases(name: str) -> list[FrontendCase]:
    fun = functools.partial(lambda x, name: _lax(name)(x), name=name)
    out = []
    for d in NARROW:
        out += [FrontendCase(name, d, fun, lambda rng, d=d: (V.normal(rng, d, (64,)),), "random", (RANDOM,),
                             ROUNDED_ONCE),
                FrontendCase(name, d, fun, lambda rng, d=d: (_SWEEPS[name](rng, d),), "sweep", (RANDOM,),
                             ROUNDED_ONCE),
                FrontendCase(name, d, fun, lambda rng, d=d: (V.specials(d),), "specials", (EDGE,), ROUNDED_ONCE)]
    out.append(Refusal(name, fun, (np.array([0.5, 3.0]),), "UntranslatedPrimitive", "f64_refused", DType.float64))
    return out


CASES = {name: functools.partial(_cases, name) for name in _SWEEPS}
