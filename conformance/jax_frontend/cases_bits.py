"""Frontend cases of ``frontend/jax/rules/bits.py``: ``reduce_precision`` to the formats of
f16, bf16 and f32 (and a wider or equal one: the operand itself), ``population_count`` and
``clz``. All bit-exact: a round trip and a select, or integer shifts, masks and adds.
reduce_precision's cases are ``narrowing``: JAX's result is held to the graph run node by node
in each node's dtype (the float64 oracle would skip the round trip, which is the point).

reduce_precision's cases hold the values its rule treats apart: around the target's smallest
normal (the flush threshold, smallest normal · (1 - 2^-(m+2)), and one float either side of
it), around its largest finite (the largest, the first that rounds to inf), ties, the
operand's edge values and log-uniform magnitudes over its whole range.
"""

from __future__ import annotations

import functools

import numpy as np

from ...ir.dtypes import DType
from .. import values as V
from ..bounds import Bound
from ..opdb.common import EDGE, RANDOM
from .spec import FrontendCase, Refusal

ROUND_TRIP = Bound("exact", note="converts to and from the target dtype and a select: each bit-exact here (a "
                                 "convert of a value the target holds, or XLA's own rounding to nearest even)")
_INTS = (DType.int8, DType.int16, DType.int32, DType.int64, DType.uint8, DType.uint32)
# operand dtype -> the (exponent_bits, mantissa_bits) it is reduced to (its own: the identity)
_TARGETS = {DType.float32: ((5, 10), (8, 7), (8, 23)), DType.float64: ((5, 10), (8, 7), (8, 23)),
            DType.bfloat16: ((5, 10), (8, 7)), DType.float16: ((5, 10),)}
_TARGET_DTYPE = {(5, 10): DType.float16, (8, 7): DType.bfloat16, (8, 23): DType.float32}


def _thresholds(d: DType, target: DType, mantissa: int) -> np.ndarray:
    """The target's flush threshold, smallest normal, largest finite and overflow point, each with
    its neighbours in ``d``, both signs."""
    tiny, big = float(target.finfo.smallest_normal), float(target.finfo.max)
    spacing = big * 2.0 ** -(mantissa + 1)  # half an ULP at the top binade: past it, inf
    points = V.cast(np.array([tiny * (1 - 2.0 ** -(mantissa + 2)), tiny, tiny * (1 - 2.0 ** -(mantissa + 1)),
                              big, big + spacing, big + spacing / 2]), d)
    around = np.concatenate([points, np.nextafter(points, np.inf), np.nextafter(points, 0)]).astype(d.numpy)
    return np.concatenate([around, -around])


def _reduce(x, *, e: int, m: int):
    from jax import lax

    return lax.reduce_precision(x, e, m)


def _reduce_precision() -> list:
    out = []
    for d, targets in _TARGETS.items():
        for e, m in targets:
            fun, t = functools.partial(_reduce, e=e, m=m), _TARGET_DTYPE[(e, m)]
            name = f"to_{t.short}"
            out += [FrontendCase("reduce_precision", d, fun, lambda rng, d=d: (V.full_range(rng, d, (512,)),),
                                 f"{name}:full_range", (RANDOM,), ROUND_TRIP, narrowing=True),
                    FrontendCase("reduce_precision", d, fun, lambda rng, d=d: (V.specials(d),), f"{name}:specials",
                                 (EDGE,), ROUND_TRIP, narrowing=True)]
            if t.bits < d.bits or (t is DType.float16 and d is DType.bfloat16):
                out.append(FrontendCase("reduce_precision", d, fun, lambda rng, d=d, t=t, m=m: (
                    _thresholds(d, t, m),), f"{name}:thresholds", (EDGE,), ROUND_TRIP, narrowing=True))
    out.append(Refusal("reduce_precision", functools.partial(_reduce, e=4, m=3), (np.ones(3, np.float32),),
                       "UntranslatedPrimitive", "f8_format_refused"))
    return out


def _counts(name: str) -> list[FrontendCase]:
    from jax import lax

    fun = getattr(lax, name)
    return [FrontendCase(name, d, fun, lambda rng, d=d: (np.concatenate([V.specials(d), V.full_range(rng, d, (256,))]),),
                         "full_range", (EDGE,), ROUND_TRIP) for d in _INTS]


NEXTAFTER = Bound("exact", note="integer steps on the operand's bits, selects and bitcasts: bit-exact")


def _nextafter() -> list[FrontendCase]:
    """Every pair of the dtype's edge values (±0, ±inf, NaN, the extremes, subnormals: each
    branch of the rule, both directions and equal operands), and random finite pairs."""
    from jax import lax

    def grid(d):
        edges = V.specials(d)
        return np.repeat(edges, edges.size), np.tile(edges, edges.size)

    out = []
    for d in (DType.float32, DType.float64, DType.bfloat16, DType.float16):
        out += [FrontendCase("nextafter", d, lax.nextafter, lambda rng, d=d: grid(d), "edge_pairs", (EDGE,), NEXTAFTER,
                             narrowing=True),
                FrontendCase("nextafter", d, lax.nextafter, lambda rng, d=d: (V.full_range(rng, d, (256,)),
                                                                              V.full_range(rng, d, (256,))),
                             "full_range", (RANDOM,), NEXTAFTER, narrowing=True)]
    return out


CASES = {"nextafter": _nextafter, "reduce_precision": _reduce_precision, "population_count": functools.partial(_counts, "population_count"),
         "clz": functools.partial(_counts, "clz")}
