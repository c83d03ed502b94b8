"""Frontend cases of the shape and reduction rules (``rules/shape.py``, ``rules/reduction.py``).

Shape rules move values: every case is bit-exact, on edge values, in a float and an integer
dtype, with the parameters a rule can get wrong (a dropped or permuted dim, an off-by-one
start or limit, strides, negative and interior padding, clamped dynamic starts). Reductions
take the op database's draws and are held to the IR op's bound (accumulations: the
contract's chain bound, with JAX's XLA:CPU summation blocks declared as data).
"""

from __future__ import annotations

import functools

import numpy as np

from ...ir.dtypes import DType
from .. import values as V
from ..opdb.common import EDGE, LAYOUT, RANDOM
from .spec import FrontendCase, Refusal

_MOVED = (DType.float32, DType.int16, DType.bfloat16)


def _edge_tensor(rng, d: DType, shape) -> np.ndarray:
    """``shape`` filled with the dtype's edge values and random ones, every element distinct
    where the dtype allows, so a moved element shows."""
    size = int(np.prod(shape))
    pool = np.concatenate([V.specials(d), V.normal(rng, d, (max(size, 1),)) if not d.is_bool else V.specials(d)])
    return np.resize(pool, size).reshape(shape) if size else np.zeros(shape, d.numpy)


def moved(primitive: str, fun, shapes, name: str, dtypes=_MOVED, extra=(), tags=(EDGE,)) -> list[FrontendCase]:
    """``fun`` on edge-value tensors of ``shapes`` (plus fixed ``extra`` arrays), per dtype."""
    return [FrontendCase(primitive, d, fun, lambda rng, d=d: (*(_edge_tensor(rng, d, s) for s in shapes), *extra),
                         name, tags) for d in dtypes]


def _stacked(fun, count: int, name: str) -> list[FrontendCase]:
    """``count`` edge-value operands of shape (2, 3), each rolled differently, so every one is distinct."""
    return [FrontendCase("stack", d, fun, lambda rng, d=d: tuple(np.roll(_edge_tensor(rng, d, (2, 3)), k)
                                                             for k in range(count)), name, (EDGE,)) for d in _MOVED]


def _jnp():
    import jax.numpy as jnp

    return jnp


def _lax():
    from jax import lax

    return lax


def _shape_cases() -> dict:
    lax = _lax()
    i32 = functools.partial(np.array, dtype=np.int32)
    return {
        "broadcast_in_dim": moved("broadcast_in_dim", lambda x: lax.broadcast_in_dim(x, (2, 3, 4), (0, 2)),
                                  [(2, 4)], "dims_0_2")
        + moved("broadcast_in_dim", lambda x: lax.broadcast_in_dim(x, (3, 5), (0, 1)), [(1, 5)], "size1_expands")
        + moved("broadcast_in_dim", lambda x: lax.broadcast_in_dim(x, (3, 3, 3), (0, 2)), [(3, 3)], "square_dims"),
        "reshape": moved("reshape", lambda x: lax.reshape(x, (4, 6)), [(2, 3, 4)], "merge")
        + moved("reshape", lambda x: lax.reshape(x, (6, 4), dimensions=(1, 0, 2)), [(2, 3, 4)], "transposed_first")
        + moved("reshape", lambda x: lax.reshape(x, (0, 5)), [(5, 0)], "empty", tags=(LAYOUT,)),
        "squeeze": moved("squeeze", lambda x: lax.squeeze(x, (0, 2)), [(1, 4, 1, 3)], "dims_0_2"),
        "transpose": moved("transpose", lambda x: lax.transpose(x, (2, 0, 1)), [(2, 3, 4)], "perm_201")
        + moved("transpose", lambda x: lax.transpose(x, (1, 0)), [(3, 5)], "perm_10"),
        "slice": moved("slice", lambda x: lax.slice(x, (1, 2), (4, 7)), [(5, 8)], "unit_strides")
        + moved("slice", lambda x: lax.slice(x, (0, 1), (5, 8), (2, 3)), [(5, 8)], "strided")
        + moved("slice", lambda x: lax.slice(x, (2, 0), (2, 8)), [(5, 8)], "empty", tags=(LAYOUT,)),
        "dynamic_slice": [c for start in (1, 4, -2) for c in moved(
            "dynamic_slice", lambda x, i: lax.dynamic_slice(x, (i, np.int32(2)), (3, 3)), [(6, 6)],
            f"start{start}", extra=(i32(start),), dtypes=_MOVED + (DType.complex64,))],  # 4 and -2 are clamped into range, as XLA does
        "dynamic_update_slice": [c for start in (0, 5, -1) for c in moved(
            "dynamic_update_slice", lambda x, u, i: lax.dynamic_update_slice(x, u, (np.int32(1), i)), [(5, 6), (2, 3)],
            f"start{start}", extra=(i32(start),), dtypes=_MOVED + (DType.complex64,))],
        "concatenate": moved("concatenate", lambda x, y, z: lax.concatenate([x, y, z], 1), [(2, 3), (2, 1), (2, 4)],
                             "dim1") + moved("concatenate", lambda x, y: lax.concatenate([x, y], 0),
                                             [(0, 3), (2, 3)], "empty_piece", tags=(LAYOUT,)),
        "tile": moved("tile", lambda x: _jnp().tile(x, (2, 3)), [(2, 3)], "reps_2_3")
        + moved("tile", lambda x: _jnp().tile(x, (1, 3, 2)), [(2, 3, 4)], "reps_1_3_2")
        + moved("tile", lambda x: _jnp().tile(x, (2, 0)), [(2, 3)], "reps_0", tags=(LAYOUT,)),
        "stack": _stacked(lambda x, y, z: _jnp().stack([x, y, z], axis=1), 3, "axis1")
        + _stacked(lambda x, y: _jnp().stack([x, y], axis=2), 2, "last_axis"),
        "unstack": moved("unstack", lambda x: _jnp().unstack(x, axis=1), [(2, 3, 4)], "axis1")
        + moved("unstack", lambda x: _jnp().unstack(x, axis=0), [(3, 5)], "axis0"),
        "split": moved("split", lambda x: lax.split(x, (1, 3, 2), axis=1), [(2, 6)], "sizes_132")
        + moved("split", lambda x: lax.split(x, (2, 0, 1), axis=0), [(3, 2)], "empty_piece", tags=(LAYOUT,)),
        "pad": moved("pad", lambda x, v: lax.pad(x, v, ((1, 2, 0), (0, 1, 2))), [(3, 4), ()], "edges_interior")
        + moved("pad", lambda x, v: lax.pad(x, v, ((-1, 1, 0), (2, -2, 1))), [(3, 4), ()], "negative"),
        "rev": moved("rev", lambda x: lax.rev(x, (0, 2)), [(2, 3, 4)], "dims_0_2"),
        "iota": [FrontendCase("iota", d, lambda: lax.broadcasted_iota(d.numpy, (3, 5), 1), lambda rng: (),
                              "dim1_of_2", (RANDOM,)) for d in (DType.int32, DType.float32, DType.uint8)]
        + [FrontendCase("iota", DType.int32, lambda: lax.iota(np.int32, 300), lambda rng: (), "long", (RANDOM,))],
    }


_PRODUCTS = ("reduce_prod", "cumprod")


def tame_specials(d: DType) -> np.ndarray:
    """NaN, ±inf, ±0 and values within 2**±8: a product of them never overflows or underflows on
    the way, so its order (XLA's, or the float64 oracle's) cannot turn a finite result into inf
    or 0 (huge·huge·0 is NaN in float32 and 0 in float64)."""
    s = V.specials(d).astype(np.float64)
    keep = ~np.isfinite(s) | (s == 0) | ((np.abs(s) >= 2.0 ** -8) & (np.abs(s) <= 2.0 ** 8))
    return V.cast(s[keep], d)


def _reduce(primitive: str, call, ir_op: str, axes_list=((1,), (0, 2)), prefix: str = "") -> list[FrontendCase]:
    """The op database's draws of ``ir_op``, reduced over each of ``axes_list`` that fits their
    rank: ``call(lax_function, x, axes)``. Products take tame edge values (:func:`tame_specials`)
    in place of the database's full-range and special ones."""
    from .cases_elementwise import _opdb_by_op

    fun = getattr(_lax(), primitive)
    out = []
    if primitive in _PRODUCTS:
        for d in (DType.float32, DType.float16, DType.int32):
            values = tame_specials(d) if d.is_float else V.specials(d)
            for axes in axes_list:
                out.append(FrontendCase(primitive, d, functools.partial(call, fun, axes=axes),
                                        lambda rng, v=values: (np.resize(np.concatenate([v, v[::-1]]), (3, 8, 2)),),
                                        f"{prefix}axes{''.join(map(str, axes))}:tame_specials", (EDGE,)))
    for c in _opdb_by_op().get(ir_op, []):
        if primitive in _PRODUCTS and c.name in ("specials", "full_range") and c.dtype.is_float:
            continue
        rank = len(np.shape(c.arrays()[0]))
        for axes in axes_list:
            if max(axes) < rank:
                out.append(FrontendCase(primitive, c.dtype, functools.partial(call, fun, axes=axes), c.inputs,
                                        f"{prefix}axes{''.join(map(str, axes))}:{c.name}", c.tags))
    return out


def _over_axes(fn, x, axes):
    return fn(x, axes)


def _arg(fn, x, axes):
    return fn(x, axes[0], np.int32)


def _cumulative(fn, x, axes, reverse=False):
    return fn(x, axes[0], reverse=reverse)


def _cumulative_cases(name: str) -> list[FrontendCase]:
    return (_reduce(name, _cumulative, name, ((0,), (1,)))
            + _reduce(name, functools.partial(_cumulative, reverse=True), name, ((1,),), "reverse:"))


CASES = {name: functools.partial(lambda name: _shape_cases()[name], name) for name in (
    "broadcast_in_dim", "reshape", "squeeze", "transpose", "slice", "dynamic_slice", "dynamic_update_slice",
    "concatenate", "split", "tile", "stack", "unstack", "pad", "rev", "iota")}
CASES |= {name: functools.partial(_reduce, name, _over_axes, name) for name in (
    "reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or")}
CASES |= {name: functools.partial(_reduce, name, _arg, name, ((1,), (0,))) for name in ("argmax", "argmin")}


def _complex_product(z):
    return _lax().reduce_prod(z, (0,))


# the IR's reduce_prod takes no complex numbers: refused at the user's line (of constants, as jnp.fft's norm="ortho"
# scale, it is folded: frontend/jax/folding.py)
CASES["reduce_prod"] = functools.partial(lambda build: build() + [Refusal(
    "reduce_prod", _complex_product, (np.array([1 + 2j, 3 - 1j], np.complex64),), "UntranslatedPrimitive",
    "complex_refused", DType.complex64)], CASES["reduce_prod"])
CASES |= {name: functools.partial(_cumulative_cases, name) for name in ("cumsum", "cumprod", "cummax", "cummin")}
