"""Frontend cases of gather and the scatter family in their general form
(``rules/indexing_general.py``) and of the total-order comparisons (``rules/sorting.py``).

Each form is called through ``lax.gather``/``lax.scatter*`` with explicit dimension numbers and
mode, so every form and mode is reached whatever jnp would choose: two indexed axes, a window
narrower than its dim, a batching dim (what ``vmap`` of indexing gives), and starts out of range
in each mode (one past the end, -1, a window that overhangs the end by one). ``scatter``
(replace) cases write each element at most once in every mode (which of several updates wins
is implementation-defined); the reducing primitives get duplicates on purpose.
"""

from __future__ import annotations

import functools

import numpy as np

from ...ir.dtypes import DType
from .. import values as V
from ..opdb.common import EDGE, RANDOM
from .cases_shape import tame_specials
from .spec import FrontendCase

F32, F16, BF16, I32, U8, BOOL = (DType.float32, DType.float16, DType.bfloat16, DType.int32, DType.uint8,
                                 DType.bool)
SHAPE = (5, 6)
MODES = ("clip", "fill", "promise_in_bounds")


def _lax():
    from jax import lax

    return lax


def _operand(shape, tame: bool = False):
    """Specials first (floats), then normals; ints over their full range; bools at random.
    ``tame``: specials without subnormals or extremes (:func:`.cases_shape.tame_specials`), for
    the combining scatters: XLA:CPU flushes subnormal sums and products (a declared deviation
    that would blur the cell), and an extreme product's overflow depends on the order."""
    def draw(rng, d):
        n = int(np.prod(shape))
        if d.is_bool:
            return rng.integers(0, 2, shape).astype(bool)
        if not d.is_float:
            return V.full_range(rng, d, shape)
        edge = tame_specials(d) if tame else V.specials(d)
        return np.resize(np.concatenate([edge, V.normal(rng, d, (n,))]), shape)

    return draw


# (name, gather/scatter dimension numbers as keyword dicts, operand window sizes, starts per mode)
# starts: ("in range", "out of range") index arrays; "promise_in_bounds" gets only the first
_TWO_AXES = dict(gather=dict(offset_dims=(), collapsed_slice_dims=(0, 1), start_index_map=(0, 1)),
                 scatter=dict(update_window_dims=(), inserted_window_dims=(0, 1), scatter_dims_to_operand_dims=(0, 1)),
                 slice_sizes=(1, 1), updates=lambda k: (k,))
_WINDOW = dict(gather=dict(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0, 1)),
               scatter=dict(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0, 1)),
               slice_sizes=(1, 3), updates=lambda k: (k, 3))
_BATCHED = dict(gather=dict(offset_dims=(1,), collapsed_slice_dims=(), start_index_map=(1,), operand_batching_dims=(0,),
                            start_indices_batching_dims=(0,)),
                scatter=dict(update_window_dims=(1,), inserted_window_dims=(), scatter_dims_to_operand_dims=(1,),
                             operand_batching_dims=(0,), scatter_indices_batching_dims=(0,)),
                slice_sizes=(1, 2), updates=lambda k: (k, 2))
# starts that never collide after clamping (replace writes each element once): in range, then
# out of range (past the end, negative, a window overhanging the end by one)
STARTS = {
    "two_axes": (_TWO_AXES, np.array([[0, 0], [4, 5], [2, 3], [1, 1]], np.int32),
                 np.array([[0, 0], [5, 2], [-1, 3], [2, 6], [3, 2]], np.int32)),
    "window": (_WINDOW, np.array([[0, 3], [4, 0], [2, 1]], np.int32),
               np.array([[0, 0], [4, 4], [-1, 3], [2, 3], [5, 0]], np.int32)),
    "batched": (_BATCHED, np.array([[0], [4], [2], [3], [1]], np.int32),
                np.array([[0], [5], [-1], [4], [9]], np.int32)),
}
# reducing scatters: duplicates on purpose (each row twice), out of range in the non-promise modes
DUPLICATES = {"two_axes": np.array([[1, 2], [1, 2], [4, 5], [0, 7], [-2, 0]], np.int32),
              "window": np.array([[1, 2], [1, 2], [3, 3], [0, 4]], np.int32),
              "batched": np.array([[1], [1], [0], [5], [3]], np.int32)}


def _starts(form: str, mode: str, replace: bool) -> np.ndarray:
    _, inside, outside = STARTS[form]
    if mode == "promise_in_bounds":  # out of range is implementation-defined in JAX's docs
        return inside
    return outside if replace else DUPLICATES[form]


def _gather_call(x, s, form, mode):
    lax = _lax()
    spec = STARTS[form][0]
    return lax.gather(x, s, lax.GatherDimensionNumbers(**spec["gather"]), spec["slice_sizes"], mode=mode,
                      fill_value=None)


def general_gathers() -> list[FrontendCase]:
    """The general-form gathers: every form in every mode, in float, int, bf16 and bool."""
    out = []
    for form in STARTS:
        for mode in MODES:
            starts = _starts(form, mode, replace=True)
            fun = functools.partial(_gather_call, form=form, mode=mode)
            for d in (F32, DType.int16, BF16, BOOL):
                out.append(FrontendCase("gather", d, fun, lambda rng, d=d, s=starts: (_operand(SHAPE)(rng, d), s),
                                        f"{form}_{mode}", (EDGE,)))
    # 64-bit starts (under x64), one out of range. Not beyond int32: jax.jit's FILL_OR_DROP gather
    # narrows its starts to int32 first (2**32 + 1 reads as 1, in range); parity fills there
    # (the scatter cases below hold starts beyond int32, where XLA drops and clamps them right)
    wide = np.array([[4, 5], [0, 1], [7, 0]], np.int64)
    out.append(FrontendCase("gather", F32, functools.partial(_gather_call, form="two_axes", mode="fill"),
                            lambda rng: (_operand(SHAPE)(rng, F32), wide), "two_axes_int64_starts", (EDGE,)))
    empty = np.zeros((0, 2), np.int32)
    out.append(FrontendCase("gather", F32, functools.partial(_gather_call, form="two_axes", mode="clip"),
                            lambda rng: (_operand(SHAPE)(rng, F32), empty), "two_axes_no_starts", (EDGE,)))
    return out


_SCATTERS = {"scatter": "scatter", "scatter-add": "scatter_add", "scatter-sub": "scatter_sub",
             "scatter-mul": "scatter_mul", "scatter-min": "scatter_min", "scatter-max": "scatter_max"}
# dtypes JAX takes for each (bool only in replace, min and max)
_DTYPES = {"scatter": (F32, I32, BF16, BOOL), "scatter-add": (F32, I32, F16), "scatter-sub": (F32, U8, BF16),
           "scatter-mul": (F32, I32), "scatter-min": (F32, I32, BOOL), "scatter-max": (F32, F16, BOOL)}


def _scatter_call(x, s, u, primitive, form, mode):
    lax = _lax()
    spec = STARTS[form][0]
    return getattr(lax, _SCATTERS[primitive])(x, s, u, lax.ScatterDimensionNumbers(**spec["scatter"]), mode=mode)


def spec_updates(form: str, k: int) -> tuple[int, ...]:
    """The updates' shape of ``form`` for ``k`` starts."""
    return STARTS[form][0]["updates"](k)


def scatters(primitive: str) -> list[FrontendCase]:
    """``primitive`` in every form and mode, with specials in the operand and the updates."""
    out = []
    for form in STARTS:
        for mode in MODES:
            starts = _starts(form, mode, replace=primitive == "scatter")
            fun = functools.partial(_scatter_call, primitive=primitive, form=form, mode=mode)
            x, u = (_operand(shape, tame=primitive != "scatter") for shape in (SHAPE, spec_updates(form, len(starts))))
            for d in _DTYPES[primitive]:
                out.append(FrontendCase(primitive, d, fun, lambda rng, d=d, s=starts, x=x, u=u: (x(rng, d), s, u(rng, d)),
                                        f"{form}_{mode}", (EDGE,)))
    wide = np.array([[4, 5], [0, 1], [2**32 + 1, 2], [1, -2**33]], np.int64)  # no collision after clamping
    for mode in ("clip", "fill"):
        fun = functools.partial(_scatter_call, primitive=primitive, form="two_axes", mode=mode)
        out.append(FrontendCase(primitive, F32, fun, lambda rng: (_operand(SHAPE, tame=True)(rng, F32), wide,
                                                                  _operand((4,), tame=True)(rng, F32)),
                                f"two_axes_int64_starts_{mode}", (EDGE,)))
    fun = functools.partial(_scatter_call, primitive=primitive, form="two_axes", mode="fill")
    out.append(FrontendCase(primitive, F32, fun, lambda rng: (_operand(SHAPE)(rng, F32), np.zeros((0, 2), np.int32),
                                                              np.zeros((0,), np.float32)), "two_axes_no_updates",
                            (RANDOM,)))
    return out


def _total_order_call(x, y, primitive):
    from jax._src.lax import lax as lax_internal  # eq_to_p & co. have no public function

    return getattr(lax_internal, f"{primitive}_p").bind(x, y)


def total_order(primitive: str) -> list[FrontendCase]:
    """Every pair of specials (±NaN, ±inf, ±0, subnormals) and random pairs, floats and ints."""
    out = []
    fun = functools.partial(_total_order_call, primitive=primitive)
    for d in (F32, DType.float64, F16, BF16):
        def specials(rng, d=d):
            s = V.specials(d)
            s = np.concatenate([s, -s])  # both NaN signs
            return V.grid(s, s)

        out.append(FrontendCase(primitive, d, fun, specials, "specials", (EDGE,)))
    out.append(FrontendCase(primitive, I32, fun, lambda rng: V.grid(*(V.full_range(rng, I32, (9,)),) * 2),
                            "full_range", (EDGE,)))
    return out


CASES = {
    **{name: functools.partial(scatters, name) for name in _SCATTERS if name != "scatter-add"},
    **{name: functools.partial(total_order, name) for name in ("eq_to", "le_to", "lt_to")},
}
