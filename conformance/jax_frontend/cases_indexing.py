"""Frontend cases of the contraction, indexing and window rules (``rules/contraction.py``,
``rules/indexing.py``, ``rules/window.py``).

Contractions and window sums are held to the IR op's accumulation bound (the contract's
chains, with XLA:CPU's declared summation blocks); gathers, max/min windows and their index
handling are bit-exact, with negative and out-of-range indices in each mode.
``select_and_scatter_add`` (max-pooling's gradient) is given positive cotangents, so its
sums do not cancel: its bound is derived in :data:`SCATTER_POSITIVE`.
"""

from __future__ import annotations

import functools

import numpy as np

from ...ir.dtypes import DType
from .. import values as V
from ..bounds import Bound
from ..opdb.common import EDGE, RANDOM
from .cases_scatter import general_gathers, scatters
from .spec import FrontendCase

F32, F64, BF16 = DType.float32, DType.float64, DType.bfloat16

# Window 3, stride 2: an input element is the maximum of at most 2 windows per spatial dim, so
# it sums at most 4 positive cotangents: 3 roundings of u each, no cancellation (≤ 3 ULP).
SCATTER_POSITIVE = Bound("ulp", 3, note="≤ 4 positive cotangents summed per element (window 3, stride 2): "
                                        "3 roundings, each ≤ u relative")


def _lax():
    from jax import lax

    return lax


def _normal(shape, scale=1.0):
    return lambda rng, d: V.normal(rng, d, shape, scale)


def _case(primitive, d, fun, draws, name, tags=(RANDOM,), bound=None):
    return FrontendCase(primitive, d, fun, lambda rng: tuple(draw(rng, d) if callable(draw) else draw
                                                             for draw in draws), name, tags, bound)


def _dot_general() -> list[FrontendCase]:
    lax = _lax()
    out = []
    rows = [("matmul", (((1,), (0,)), ((), ())), (3, 5), (5, 4)),
            ("batch", (((2,), (1,)), ((0,), (0,))), (2, 3, 6), (2, 6, 4)),
            ("lhs_contract_first", (((0,), (1,)), ((), ())), (5, 3), (4, 5)),
            ("two_contracted", (((1, 2), (0, 1)), ((), ())), (3, 4, 2), (4, 2, 5))]
    for name, dims, ls, rs in rows:
        for d in (F32, F64, BF16, DType.complex64):
            out.append(_case("dot_general", d, functools.partial(lambda x, y, dims: lax.dot_general(x, y, dims),
                                                                 dims=dims), [_normal(ls), _normal(rs)], name))
    out.append(_case("dot_general", BF16, lambda x, y: lax.dot_general(x, y, (((1,), (0,)), ((), ())),
                                                                         preferred_element_type=np.float32),
                     [_normal((3, 40)), _normal((40, 2))], "preferred_f32"))
    out.append(_case("dot_general", DType.int32, lambda x, y: lax.dot_general(x, y, (((1,), (0,)), ((), ()))),
                     [lambda rng, d: V.full_range(rng, d, (3, 4)), lambda rng, d: V.full_range(rng, d, (4, 2))],
                     "int_wraps", (EDGE,)))
    from .cases_shape import tame_specials

    specials = tame_specials(F32)  # a subnormal product is flushed inside XLA:CPU's sum, a huge one overflows it
    out.append(FrontendCase("dot_general", F32, lambda x, y: lax.dot_general(x, y, (((1,), (0,)), ((), ()))),
                            lambda rng: (np.resize(specials, (5, 3)), np.resize(specials[::-1], (3, 4))), "specials",
                            (EDGE,)))
    return out


def _conv() -> list[FrontendCase]:
    lax = _lax()
    rows = [("nchw_same", dict(window_strides=(1, 1), padding="SAME"), ("NCHW", "OIHW", "NCHW"), (2, 3, 6, 5),
             (4, 3, 3, 3)),
            ("strided_dilated", dict(window_strides=(2, 1), padding=((1, 0), (2, 1)), rhs_dilation=(1, 2)),
             ("NHWC", "HWIO", "NHWC"), (1, 7, 6, 2), (2, 3, 2, 3)),
            ("lhs_dilation", dict(window_strides=(1, 1), padding=((1, 1), (0, 2)), lhs_dilation=(2, 1)),
             ("NCHW", "OIHW", "NCHW"), (1, 2, 4, 4), (3, 2, 2, 3)),
            ("groups", dict(window_strides=(1, 1), padding="VALID", feature_group_count=2),
             ("NCHW", "OIHW", "NCHW"), (2, 4, 5, 5), (6, 2, 2, 2)),
            # what autodiff emits for a grouped convolution's weight gradient
            ("batch_groups", dict(window_strides=(1, 1), padding=((1, 0), (0, 1)), batch_group_count=2),
             ("NHWC", "HWIO", "NHWC"), (4, 5, 4, 3), (2, 2, 3, 6))]
    out = []
    for name, kw, dn, ls, rs in rows:
        fun = functools.partial(lambda x, w, kw, dn: lax.conv_general_dilated(x, w, dimension_numbers=dn, **kw),
                                kw=kw, dn=dn)
        for d in (F32, F64):
            out.append(_case("conv_general_dilated", d, fun, [_normal(ls), _normal(rs)], name))
    return out


def _gather() -> list[FrontendCase]:
    import jax.numpy as jnp

    out = []
    idx = np.array([0, -1, 9, 2, -7], np.int32)
    for d in (F32, DType.int16, BF16):
        x = lambda rng, d: np.resize(np.concatenate([V.specials(d), V.normal(rng, d, (30,))]), (5, 6))  # noqa: E731
        for mode in ("fill", "clip"):
            fun = functools.partial(lambda v, i, mode: jnp.take(v, i, axis=1, mode=mode, fill_value=-3), mode=mode)
            out.append(_case("gather", d, fun, [x, idx], f"take_axis1_{mode}", (EDGE,)))
        out.append(_case("gather", d, lambda v, i: v[i], [x, np.array([4, 0, 0, 3], np.int32)], "rows"))
        out.append(_case("gather", d, lambda v, i: jnp.take_along_axis(v, i, axis=1),
                         [x, np.array([[0], [5], [2], [1], [3]], np.int32)], "take_along_axis"))
    return out + general_gathers()


def _take_along_axis_grad(v, i, ct):
    import jax
    import jax.numpy as jnp

    return jax.vjp(lambda x: jnp.take_along_axis(x, i, axis=1), v)[1](ct)[0]


def _scatter_add() -> list[FrontendCase]:

    exact_sums = Bound("exact", note="small integers in float32: every partial sum is exact")
    ints = lambda rng, d: V.cast(rng.integers(-8, 9, (6, 3)), d)  # noqa: E731
    out = [_case("scatter-add", d, lambda v, i, u: v.at[i].add(u),
                 [ints, np.array([1, 1, 4, -1, 9], np.int32), lambda rng, d: V.cast(rng.integers(-8, 9, (5, 3)), d)],
                 "duplicates_negative_dropped", (EDGE,), exact_sums if d.is_float else None)
           for d in (F32, DType.int32)]
    out.append(_case("scatter-add", F32, _take_along_axis_grad,
                     [ints, np.array([[0], [2], [2], [1], [7], [-1]], np.int32),
                      lambda rng, d: V.cast(rng.integers(-8, 9, (6, 1)), d)], "take_along_axis_grad", (EDGE,),
                     exact_sums))
    return out + scatters("scatter-add")


def _windows() -> list[FrontendCase]:
    lax = _lax()
    out = []
    for name, init, op in (("reduce_window_max", -np.inf, lax.max), ("reduce_window_min", np.inf, lax.min),
                           ("reduce_window_sum", 0.0, lax.add)):
        for label, window, strides, padding in (("overlap_same", (1, 3, 3), (1, 2, 2), "SAME"),
                                                ("valid", (1, 2, 2), (1, 2, 1), "VALID")):
            fun = functools.partial(lambda x, init, op, w, s, p: lax.reduce_window(x, init, op, w, s, p), init=init,
                                    op=op, w=window, s=strides, p=padding)
            for d in (F32, BF16):
                if name == "reduce_window_sum":
                    out.append(_case(name, d, fun, [_normal((2, 7, 6))], label))
                else:
                    out.append(FrontendCase(name, d, fun, lambda rng, d=d: (np.resize(np.concatenate(
                        [V.specials(d), V.normal(rng, d, (84,))]), (2, 7, 6)),), f"{label}:specials", (EDGE,)))
    return out


def _maxpool_grad(x, ct):
    import jax

    lax = _lax()
    return jax.vjp(lambda v: lax.reduce_window(v, -np.inf, lax.max, (1, 3, 3), (1, 2, 2), "VALID"), x)[1](ct)[0]


def _select_and_scatter_add() -> list[FrontendCase]:
    ties = lambda rng, d: V.cast(np.round(rng.standard_normal((2, 7, 9))), d)  # noqa: E731 - many equal maxima
    positive = lambda rng, d: V.uniform(rng, d, (2, 3, 4), 0.5, 2.0)  # noqa: E731
    return [_case("select_and_scatter_add", d, _maxpool_grad, [draw, positive], name, tags, SCATTER_POSITIVE)
            for d in (F32, F64) for name, draw, tags in (("random", _normal((2, 7, 9)), (RANDOM,)),
                                                         ("ties", ties, (EDGE,)))]


CASES = {
    "dot_general": _dot_general,
    "conv_general_dilated": _conv,
    "gather": _gather,
    "scatter-add": _scatter_add,
    "reduce_window_max": lambda: [c for c in _windows() if c.primitive == "reduce_window_max"],
    "reduce_window_min": lambda: [c for c in _windows() if c.primitive == "reduce_window_min"],
    "reduce_window_sum": lambda: [c for c in _windows() if c.primitive == "reduce_window_sum"],
    "select_and_scatter_add": _select_and_scatter_add,
}
