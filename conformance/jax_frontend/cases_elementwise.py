"""Frontend cases of the elementwise rules (``frontend/jax/rules/elementwise.py``).

A rule that maps a lax primitive onto one IR op takes that op's cases from the op database
(``conformance/opdb``: its random draw inside the op's domain and every edge case — NaN,
±inf, ±0, subnormals, extremes, ties, integer wraparound — in every dtype JAX has; the masks
of implementation-defined elements come along), plus two JAX-shaped layouts: a rank-0
literal operand and a size-1 dim (``add f32[4,7] f32[1,7]``), both broadcast by the rule.
Rules that compose several IR ops declare the bound they are held to, derived in the note.
"""

from __future__ import annotations

import functools

import numpy as np

from ...ir.dtypes import DType
from .. import values as V
from ..bounds import EXACT, Bound
from ..opdb.common import EDGE, LAYOUT, LONG, RANDOM
from .spec import FrontendCase, Refusal

# IR dtypes JAX computes in, as the frontend's cases take them: complex64 for the rules whose IR op
# takes it (complex128 not yet)
JAX_DTYPES = tuple(d for d in DType if d is not DType.complex128)
FLOATS = (DType.float16, DType.bfloat16, DType.float32, DType.float64)
COMPLEX = (DType.complex64,)


@functools.lru_cache(maxsize=1)
def _opdb_by_op() -> dict:
    from .. import opdb

    by_op: dict = {}
    for c in opdb.all_cases():
        if c.build is None and not c.broadcast and not set(c.tags) & {LAYOUT, LONG} and c.dtype in JAX_DTYPES:
            by_op.setdefault(c.op, []).append(c)
    return by_op


def _lax(name: str):
    from jax import lax

    return getattr(lax, name)


def _add_any(x, y):
    """``add_any``: JAX sums two cotangents of one value with it (the VJP of a fan-out)."""
    import jax

    return jax.vjp(lambda a: (a, a), x)[1]((x, y))[0]


def from_opdb(primitive: str, ir_op: str, fun, *, dtypes=None, reorder=None, bound: Bound | None = None,
              where=lambda c: True) -> list[FrontendCase]:
    """The op database's cases of ``ir_op`` as cases of ``primitive`` (``fun`` on the same arrays,
    ``reorder`` mapping the IR operand order to JAX's)."""
    out = []
    for c in _opdb_by_op().get(ir_op, []):
        if (dtypes is not None and c.dtype not in dtypes) or not where(c):
            continue
        inputs = c.inputs if reorder is None else (lambda rng, c=c: reorder(*c.inputs(rng)))
        mask = c.mask if reorder is None or c.mask is None else None
        out.append(FrontendCase(primitive, c.dtype, fun, inputs, c.name, c.tags, bound, mask))
    return out


def _layouts(primitive: str, fun, arity: int, dtype: DType = DType.float32, draw=None) -> list[FrontendCase]:
    """A rank-0 operand and a size-1 dim, which the rule broadcasts to the result's shape."""
    draw = draw or (lambda rng, shape: V.normal(rng, dtype, shape))
    if arity == 1:
        return [FrontendCase(primitive, dtype, fun, lambda rng: (draw(rng, ()),), "rank0", (LAYOUT,))]
    literal = 2.5 if dtype.is_float else 3
    return [FrontendCase(primitive, dtype, lambda x: fun(x, literal), lambda rng: (draw(rng, (4, 7)),), "literal",
                         (LAYOUT,)),
            FrontendCase(primitive, dtype, fun, lambda rng: (draw(rng, (4, 7)), draw(rng, (1, 7))), "size1_dim",
                         (LAYOUT,))]


_UNARY = ("neg", "exp", "exp2", "log", "log1p", "expm1", "tanh", "logistic", "sin", "cos", "tan", "asin", "acos",
          "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "sqrt", "rsqrt", "abs", "sign", "floor", "ceil", "erf",
          "is_finite")
_BINARY = ("add", "sub", "mul", "div", "rem", "max", "min", "atan2", "eq", "ne", "lt", "le", "gt", "ge")
_SHIFTS = ("shift_left", "shift_right_arithmetic", "shift_right_logical")
# lax primitive -> (lax function, the IR ops of its bool and integer forms)
_LOGICAL = {"and": ("bitwise_and", "logical_and", "bitwise_and"), "or": ("bitwise_or", "logical_or", "bitwise_or"),
            "xor": ("bitwise_xor", "logical_xor", "bitwise_xor"), "not": ("bitwise_not", "logical_not", "bitwise_not")}


def _unary(name: str) -> list[FrontendCase]:
    return from_opdb(name, name, _lax(name)) + _layouts(name, _lax(name), 1)


def _complex_sign(z):
    from jax import lax

    return lax.sign(z)


def _complex_sin(z):
    from jax import lax

    return lax.sin(z)


# complex64 operands of ops the IR defines on real numbers only: refused at the user's line
_COMPLEX_REFUSED = {"sign": _complex_sign, "sin": _complex_sin}


def _refused_on_complex(name: str) -> list[Refusal]:
    z = np.array([1 + 2j, -0.5 - 1j], np.complex64)
    return [Refusal(name, _COMPLEX_REFUSED[name], (z,), "UntranslatedPrimitive", "complex_refused", DType.complex64)]


def _binary(name: str, ir_op: str | None = None, fun=None) -> list[FrontendCase]:
    fun = fun or _lax(name)
    out = from_opdb(name, ir_op or name, fun)
    if name in _SHIFTS:
        return out + _layouts(name, fun, 2, DType.int32, lambda rng, shape: V.cast(rng.integers(0, 31, shape),
                                                                                       DType.int32))
    return out + _layouts(name, fun, 2)


def _logical(name: str) -> list[FrontendCase]:
    fn, logical, bitwise = _LOGICAL[name]
    fun = _lax(fn)
    out = (from_opdb(name, logical, fun, where=lambda c: c.dtype.is_bool)
           + from_opdb(name, bitwise, fun, where=lambda c: not c.dtype.is_bool))
    if name != "not":
        out += _layouts(name, fun, 2, DType.int32, lambda rng, shape: V.cast(rng.integers(-99, 99, shape), DType.int32))
    return out


def _round() -> list[FrontendCase]:
    from jax import lax

    away = Bound("exact", note="half away from zero: trunc(x + sign(x)·0.5) where |x − trunc x| is exactly 0.5 "
                               "(both exact), else round-half-even, which agrees off ties: an integer, exact")
    even = from_opdb("round", "round", lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN), dtypes=FLOATS)
    halves = [FrontendCase(c.primitive, c.dtype, lambda x: lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO), c.inputs,
                           f"away:{c.name}", c.tags, away, c.mask) for c in even]
    return even + halves


def _pow() -> list[FrontendCase]:
    from jax import lax

    int_exponent = Bound("ulp", 4, note="pow's 4 ULP: the integer exponent's convert is exact for |y| < 2**24")
    cases = from_opdb("pow", "pow", lax.pow, dtypes=FLOATS)
    for d in (DType.float32, DType.float64):
        cases.append(FrontendCase("pow", d, lax.pow, lambda rng, d=d: (
            V.magnitudes(rng, d, (4, 7), -3, 3, signed=True), V.cast(rng.integers(-6, 7, (4, 7)), DType.int32)),
            "int_exponent", (RANDOM,), int_exponent))
    return cases


def _integer_pow() -> list[FrontendCase]:
    from jax import lax

    out = []
    for y in (0, 1, 2, 5, -3):
        # by squaring: a product tree computing x**|y| has relative error ≤ (|y| − 1)·u to first
        # order (u ≤ 1 ULP of |o|), and 1/x**|y| one rounding more
        bound = EXACT if y in (0, 1) else Bound("ulp", abs(y) - 1 + (y < 0) + 0.5,
                                                 note=f"x**{y} by squaring: ({abs(y)} − 1 + {int(y < 0)}) roundings "
                                                      "of u each, + 0.5 for second-order terms")
        for d in FLOATS:
            fun = functools.partial(lambda x, y: lax.integer_pow(x, y), y=y)
            mask = _in_range(d, y) if y < 0 else None
            out.append(FrontendCase("integer_pow", d, fun, lambda rng, d=d: (V.magnitudes(rng, d, (4, 7), -3, 3),),
                                    f"y{y}:random", (RANDOM,), bound, mask))
            out.append(FrontendCase("integer_pow", d, fun, lambda rng, d=d: (V.specials(d),), f"y{y}:specials",
                                    (EDGE,), bound, mask))
    for d in (DType.int32, DType.int8):  # integers wrap
        out.append(FrontendCase("integer_pow", d, lambda x: lax.integer_pow(x, 3),
                                lambda rng, d=d: (V.full_range(rng, d, (64,)),), "y3:wrap", (EDGE,), EXACT))
    return out


def _in_range(d: DType, y: int):
    """x**y for y < 0 is 1/x**|y|: where x**|y| overflows ``d`` the quotient is 0 in JAX and in the
    rule alike, not the float64 chain's tiny value; the bound above is derived for the rest."""
    def mask(arrays):
        with np.errstate(all="ignore"):
            power = np.abs(arrays[0].astype(np.float64)) ** abs(y)
        return [~(power > float(d.finfo.max))]

    return mask


def _select_n() -> list[FrontendCase]:
    from jax import lax

    cases = from_opdb("select_n", "select", lambda p, f, t: lax.select_n(p, f, t), reorder=lambda p, t, f: (p, f, t))
    for d in (DType.int32, DType.uint8):  # an integer predicate: 0 picks the first case
        cases.append(FrontendCase("select_n", DType.float32, lambda p, f, t: lax.select_n(p, f, t),
                                  lambda rng, d=d: (V.cast(rng.integers(0, 2, (4, 7)), d),
                                                    V.normal(rng, DType.float32, (4, 7)),
                                                    V.normal(rng, DType.float32, (4, 7))), f"{d.short}_predicate"))
    return cases


def _convert() -> list[FrontendCase]:
    from jax import lax

    return [FrontendCase("convert_element_type", c.dtype, functools.partial(
        lambda x, to: lax.convert_element_type(x, to), to=c.attrs["dtype"].numpy), c.inputs, c.name, c.tags,
        mask=c.mask, x64=c.attrs["dtype"].bits == 64) for c in _opdb_by_op()["convert"]
        if c.attrs["dtype"] in JAX_DTYPES and c.attrs["dtype"] is not c.dtype] + _complex_to_real()  # to its own: no primitive


def _complex_to_real() -> list[FrontendCase]:
    """JAX keeps a complex number's real part (the IR's convert refuses to drop the imaginary one)."""
    from jax import lax

    out = []
    for c, to in ((DType.complex64, DType.float32), (DType.complex64, DType.float16), (DType.complex128, DType.float64)):
        fun = functools.partial(lambda x, to: lax.convert_element_type(x, to), to=to.numpy)
        out.append(FrontendCase("convert_element_type", c, fun, lambda rng, c=c: (V.specials(c),),
                                f"to_{to.short}:real_part", (EDGE,)))
    return out


def _passing_through(primitive: str, fun, dtypes=(DType.float32, DType.int32, DType.bfloat16)) -> list[FrontendCase]:
    """Rules that return their operand: bit-exact on the edge values."""
    return [FrontendCase(primitive, d, fun, lambda rng, d=d: (V.specials(d),), "specials", (EDGE,)) for d in dtypes]


def _square() -> list[FrontendCase]:
    from jax import lax

    return [FrontendCase("square", c.dtype, lax.square, lambda rng, c=c: c.inputs(rng)[:1], c.name, c.tags)
            for c in _opdb_by_op()["mul"] if c.dtype in FLOATS + (DType.int32, DType.int8)]


def _copy(x):
    import jax.numpy as jnp

    return jnp.copy(x)


def _barrier(x, y):
    from jax import lax

    return lax.optimization_barrier((x, y))


CASES = {name: functools.partial(_unary, name) for name in _UNARY}
CASES |= {name: (lambda name=name: _unary(name) + _refused_on_complex(name)) for name in _COMPLEX_REFUSED}
CASES |= {name: functools.partial(_binary, name) for name in _BINARY + _SHIFTS}
CASES |= {name: functools.partial(_logical, name) for name in _LOGICAL}
CASES |= {
    # the modulus of a complex number: the IR's complex_abs (c64 -> f32)
    "abs": lambda: _unary("abs") + from_opdb("abs", "complex_abs", _lax("abs"), dtypes=COMPLEX),
    "real": lambda: from_opdb("real", "real", _lax("real")),
    "imag": lambda: from_opdb("imag", "imag", _lax("imag")),
    "conj": lambda: from_opdb("conj", "conj", _lax("conj")),
    "complex": lambda: from_opdb("complex", "complex", _lax("complex")),
    # cotangents are floats (an integer's is float0), of the value's own shape
    "add_any": lambda: from_opdb("add_any", "add", _add_any, dtypes=FLOATS),
    "round": _round,
    "pow": _pow,
    "integer_pow": _integer_pow,
    "select_n": _select_n,
    "clamp": lambda: from_opdb("clamp", "clamp", _lax("clamp")),
    "convert_element_type": _convert,
    "stop_gradient": lambda: _passing_through("stop_gradient", _lax("stop_gradient")),
    "copy": lambda: _passing_through("copy", _copy),
    "optimization_barrier": lambda: [FrontendCase("optimization_barrier", d, _barrier, lambda rng, d=d: (
        V.specials(d), V.specials(d)[::-1].copy()), "specials", (EDGE,)) for d in (DType.float32, DType.int8)],
    "square": _square,
}
