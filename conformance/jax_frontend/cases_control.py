"""Frontend cases of the control rules (``rules/control.py``): ``scan`` and a counting ``while``
as the IR's ``loop``, ``cond`` as a select over its branches, and the refusals (a
data-dependent ``while``, host callbacks), which must name the primitive at the user's line.

Loop bodies use ops whose results are exact (integer arithmetic, max, select), so a step
taken in the wrong order, a dropped or extra step or a swapped carry shows bit for bit;
cond's result is one branch's single op, held to the larger of the branches' bounds.
"""

from __future__ import annotations

import numpy as np

from ...ir.dtypes import DType
from .. import values as V
from ..bounds import Bound
from ..opdb.common import EDGE, RANDOM
from .spec import FrontendCase, Refusal

F32, I32 = DType.float32, DType.int32


def normal_specials(d: DType) -> np.ndarray:
    """The edge values without the subnormals: XLA:CPU reads those as ±0 (deviations.py), which a
    comparison inside a loop body turns into a different count, not into an error in ULPs."""
    s = V.specials(d)
    return s[~((s != 0) & (np.abs(s.astype(np.float64)) < float(d.finfo.tiny)))]


def _running(xs, c0):
    """Two carries (an int sum that wraps, a running max) and the stacked steps, forward."""
    from jax import lax

    def step(carry, x):
        count, top = carry
        return (count + (x > top).astype(np.int32), lax.max(top, x)), lax.select(x > top, x, -top)

    return lax.scan(step, (np.zeros(c0.shape, np.int32), c0), xs)


def _running_reverse(xs, c0):
    from jax import lax

    return lax.scan(lambda c, x: (lax.max(c, -x), lax.min(c, x)), c0, xs, reverse=True)


def _fori(x):
    from jax import lax

    return lax.fori_loop(0, 5, lambda i, v: v * 2 + i.astype(v.dtype), x)


def _cond(p, x):
    from jax import lax

    return lax.cond(p > 0, lambda v: lax.sin(v), lambda v: v * 3.0, x)


def _switch(i, x):
    from jax import lax

    return lax.switch(i, [lax.neg, lax.abs, lambda v: lax.max(v, v[::-1])], x)


# cond: each output element is one branch's single op: sin (4 ULP) or a product (1 ULP)
BRANCH_BOUND = Bound("ulp", 4, note="the chosen branch's one op: sin ≤ 4 ULP, the product ≤ 1 ULP")


def _control() -> dict:
    specials = lambda rng, d: np.resize(np.concatenate([normal_specials(d), V.normal(rng, d, (40,))]), (7, 5))  # noqa: E731
    return {
        "scan": [FrontendCase("scan", F32, _running, lambda rng: (specials(rng, F32), V.normal(rng, F32, (5,))),
                              "two_carries", (EDGE,)),
                 FrontendCase("scan", F32, _running_reverse, lambda rng: (V.normal(rng, F32, (6, 3)),
                                                                          V.normal(rng, F32, (3,))), "reverse"),
                 FrontendCase("scan", I32, _fori, lambda rng: (V.cast(rng.integers(-9, 9, (4,)), I32),),
                              "fori_loop", (RANDOM,)),
                 FrontendCase("scan", F32, _running, lambda rng: (np.zeros((0, 5), np.float32),
                                                                  V.normal(rng, F32, (5,))), "zero_steps")],
        "cond": [FrontendCase("cond", F32, _cond, lambda rng, s=s: (np.float32(s), V.specials(F32)), name, (EDGE,),
                              BRANCH_BOUND) for s, name in ((1.0, "true_branch"), (-1.0, "false_branch"))]
        + [FrontendCase("cond", F32, _switch, lambda rng, i=i: (np.int32(i), specials(rng, F32)[0]), name, (EDGE,))
           for i, name in ((0, "switch_0"), (2, "switch_2"), (7, "switch_clamped"), (-3, "switch_negative"))],
    }


def _callback(x):
    import jax

    jax.debug.callback(lambda v: None, x)
    return x


def _io_callback(x):
    from jax.experimental import io_callback

    return io_callback(lambda v: v, x, x)


def _pure_callback(x):
    import jax

    return jax.pure_callback(lambda v: v, x, x)


def _debug_print(x):
    import jax

    jax.debug.print("{}", x)
    return x


def _while(x):
    from jax import lax

    return lax.while_loop(lambda v: v.sum() < 100.0, lambda v: v * 2.0, x)


def _counted_while(x):
    """Counts to a literal bound: 6 steps of an exact body (ints wrap)."""
    from jax import lax

    return lax.while_loop(lambda s: s[0] < 6, lambda s: (s[0] + 1, s[1] * 3 + s[0]), (0, x))


def _fori_with_array_bounds(x):
    """fori_loop with bounds that are arrays: a while whose bound is a carry passed on."""
    import jax.numpy as jnp
    from jax import lax

    return lax.fori_loop(jnp.int32(2), jnp.int32(7), lambda i, v: lax.max(v, v[::-1]) - i, x)


def _while_cases() -> list:
    ints = lambda rng: (V.cast(rng.integers(-1000, 1000, (5,)), I32),)  # noqa: E731
    return [FrontendCase("while", I32, _counted_while, ints, "counted", (RANDOM,)),
            FrontendCase("while", I32, _fori_with_array_bounds, ints, "fori_array_bounds", (RANDOM,)),
            Refusal("while", _while, _ONES, "DataDependentLoop")]


_ONES = (np.ones(3, np.float32),)
CASES = {
    "scan": lambda: _control()["scan"],
    "cond": lambda: _control()["cond"],
    "while": _while_cases,
    "debug_callback": lambda: [Refusal("debug_callback", _callback, _ONES, "EffectNotSupported")],
    "io_callback": lambda: [Refusal("io_callback", _io_callback, _ONES, "EffectNotSupported")],
    "pure_callback": lambda: [Refusal("pure_callback", _pure_callback, _ONES, "EffectNotSupported")],
    "debug_print": lambda: [Refusal("debug_print", _debug_print, _ONES, "EffectNotSupported")],
}
