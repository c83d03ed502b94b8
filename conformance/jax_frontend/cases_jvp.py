"""Frontend cases of ``select_and_gather_add`` (``rules/window.py``): max- and min-pooling's
forward-mode derivative, as jax.jvp and jax.jacfwd emit it. Bit-exact: slices, pads and selects.

Overlapping windows with SAME padding on random draws (no ties: which of tied maxima XLA:CPU
takes follows its reduce_window loop order, which changes with padding), VALID windows with
ties and the edge values (NaN, ±inf, ±0 side by side: -0 and 0 tie), a window dilation, and
min-pooling with uneven padding.
"""

from __future__ import annotations

import functools

import numpy as np

from ...ir.dtypes import DType
from .. import values as V
from ..opdb.common import EDGE, RANDOM
from .spec import FrontendCase

# (name, kind, window, strides, padding, window dilation, draw, tags)
_SETTINGS = (
    ("same_overlap", "max", (1, 3, 3), (1, 2, 2), "SAME", (1, 1, 1), "normal", (RANDOM,)),
    ("valid_ties", "max", (1, 2, 2), (1, 1, 2), "VALID", (1, 1, 1), "ties", (EDGE,)),
    ("valid_specials", "max", (1, 2, 3), (1, 2, 1), "VALID", (1, 1, 1), "specials", (EDGE,)),
    ("dilated", "max", (1, 2, 2), (1, 1, 1), "VALID", (1, 2, 2), "normal", (RANDOM,)),
    ("min_uneven_padding", "min", (1, 2, 3), (1, 2, 1), ((0, 0), (1, 0), (0, 2)), (1, 1, 1), "normal", (RANDOM,)),
)
_SHAPE = (2, 7, 9)


def _draw(kind: str, d: DType):
    def inputs(rng):
        if kind == "normal":
            x = V.normal(rng, d, _SHAPE)
        elif kind == "ties":
            x = V.cast(np.round(rng.standard_normal(_SHAPE)), d)
        else:
            x = np.resize(np.concatenate([V.specials(d), V.normal(rng, d, (64,))]), _SHAPE)
            x[1, :2, :3] = -np.inf  # a window of -infs alone: XLA's init pair wins, tangent 0
        return x, V.normal(rng, d, _SHAPE)
    return inputs


def _jvp(x, t, *, kind, window, strides, padding, dilation):
    import jax
    from jax import lax

    init, op = (-np.inf, lax.max) if kind == "max" else (np.inf, lax.min)
    return jax.jvp(lambda v: lax.reduce_window(v, init, op, window, strides, padding, window_dilation=dilation),
                   (x,), (t,))[1]


def _cases() -> list[FrontendCase]:
    out = []
    for name, kind, window, strides, padding, dilation, draw, tags in _SETTINGS:
        fun = functools.partial(_jvp, kind=kind, window=window, strides=strides, padding=padding, dilation=dilation)
        for d in (DType.float32, DType.float64, DType.bfloat16):
            out.append(FrontendCase("select_and_gather_add", d, fun, _draw(draw, d), name, tags))
    return out


CASES = {"select_and_gather_add": _cases}
