"""Elementwise ops: unary, binary, select/clamp, convert/bitcast_convert.

Accuracy cases draw from each op's domain (``_DOMAINS``: acosh >= 1, log > 0, ...);
the ``specials`` cases feed every edge value, including those outside the domain,
whose NaN results every backend must reproduce. Integer division by zero is
implementation-defined, so it is masked out of the comparison (and nothing else).
"""

from __future__ import annotations

import numpy as np

from ...ir.dtypes import ALL_DTYPES, COMPLEX_DTYPES, DType
from ...ir.ops import OP_TABLE, ops_in_family
from ...ir.ops.unary import BRANCH_CUT, COMPLEX_SPECIALS
from ...ir.types import tensor as _t
from .. import values as V
from ..case import Case, ErrorCase
from .common import EDGE, case, layouts, mask_where, ops_of


def _uniform(lo, hi):
    return lambda rng, d, shape: V.uniform(rng, d, shape, lo, hi)


def _positive(lo_exp, hi_exp):
    return lambda rng, d, shape: V.magnitudes(rng, d, shape, lo_exp, hi_exp, signed=False)


def _normal(scale):
    return lambda rng, d, shape: V.normal(rng, d, shape, scale)


# op -> draw(rng, dtype, shape) inside the op's domain (default: normal, scale 3).
_DOMAINS = {
    "log": _positive(-20, 20), "log2": _positive(-20, 20), "sqrt": _positive(-30, 30),
    "rsqrt": _positive(-30, 30), "log1p": _uniform(-0.999, 50.0), "asin": _uniform(-1, 1),
    "acos": _uniform(-1, 1), "atanh": _uniform(-0.999, 0.999), "acosh": _uniform(1, 100),
    "exp": _normal(4), "exp2": _normal(5), "expm1": _normal(2), "sinh": _normal(3), "cosh": _normal(3),
    "tan": _uniform(-1.5, 1.5), "erf": _normal(1.5), "logistic": _normal(6), "reciprocal": _normal(10),
    "round": lambda rng, d, shape: V.cast(np.round(rng.standard_normal(shape) * 8) / 2, d),  # many ties
}


# op -> arguments where some backend was measured out of contract (regression data, every
# float dtype): ORT's float64 tan (sin/cos after range reduction) reaches 5 ULP at these.
_HARD_ARGS = {"tan": (8.11839943570422, -7.597203263979107, 14.923555407931076, -19.605346686563976),
              # XLA's float32 erf polynomial reaches 5.6 ULP here (its tail near ±3.72)
              "erf": (-3.720837116241455, -3.773391008377075, 3.7075910568237305, 3.7682650089263916)}


def _default_draw(rng, d, shape):
    return V.normal(rng, d, shape)


def domain(op: str):
    """``draw(rng, dtype, shape)`` inside ``op``'s domain, or None for ops defined everywhere
    (the fuzzer draws a restricted op's fresh inputs from it)."""
    return _DOMAINS.get(op)


def _complex_mask(name: str, d: DType):
    """Where a complex op's result is implementation-defined (ir/ops/unary.py: operands with
    an infinite or NaN part; the sign of a zero on the branch cut), the elements are masked."""
    defined = OP_TABLE[name].implementation_defined
    if not d.is_complex or COMPLEX_SPECIALS not in defined:
        return None
    cut = BRANCH_CUT in defined

    def valid(*operands):
        ok = np.ones(np.broadcast_shapes(*(np.shape(z) for z in operands)), bool)
        for z in operands:
            ok &= np.isfinite(z)
        if cut:
            z = operands[0]
            ok &= ~((z.real < 0) & (z.imag == 0))
        return ok

    return mask_where(valid)


def _unary_cases(name: str) -> list[Case]:
    opdef = OP_TABLE[name]
    out = []
    for d in opdef.dtypes:
        dom = _DOMAINS.get(name, _default_draw) if not d.is_complex else _default_draw  # complex: everywhere
        mask = _complex_mask(name, d)
        out += layouts(name, d, lambda rng, shape, dom=dom, d=d: (dom(rng, d, shape),), mask=mask)
        out.append(case(name, d, "specials", (V.specials(d),), tags=(EDGE,), mask=mask))
        out.append(case(name, d, "full_range", lambda rng, d=d: (V.full_range(rng, d, (64,)),), tags=(EDGE,),
                        mask=mask))
        if d.is_float and name in _HARD_ARGS:
            out.append(case(name, d, "hard_args", (V.cast(np.array(_HARD_ARGS[name]), d),), tags=(EDGE,)))
        if d.is_float or d.is_complex:
            out.append(case(name, d, "subnormals", lambda rng, d=d: (V.subnormals(rng, d, (32,)),), tags=(EDGE,),
                            mask=mask))
        if d.is_float and name in _SUBNORMAL_RESULTS:
            out.append(case(name, d, "subnormal_results",
                            lambda rng, d=d, f=_SUBNORMAL_RESULTS[name]: (f(rng, d, (32,)),), tags=(EDGE,)))
    return out


def _exp_underflow(base: float):
    """Arguments whose exponential is subnormal: log_base(smallest subnormal) .. log_base(tiny)."""
    def draw(rng, d, shape):
        fi = d.finfo
        lo, hi = (float(np.log(float(v)) / np.log(base)) for v in (fi.smallest_subnormal, fi.tiny))
        return V.uniform(rng, d, shape, lo, hi)

    return draw


# Ops that can return subnormals from ordinary arguments (flush-to-zero shows there).
_SUBNORMAL_RESULTS = {"exp": _exp_underflow(np.e), "exp2": _exp_underflow(2.0)}


def _binary_draw(name: str, d: DType):
    if name == "pow" and d.is_float:
        return lambda rng, shape: (V.magnitudes(rng, d, shape, -4, 4, signed=False), V.normal(rng, d, shape, 2))
    if name.startswith("shift"):
        return lambda rng, shape: (V.full_range(rng, d, shape),
                                   rng.integers(max(-2, int(d.iinfo.min)), d.bits + 2, size=shape).astype(d.numpy))
    if name in ("eq", "ne", "lt", "le", "gt", "ge") and not d.is_bool:
        # Small values so that equal pairs occur.
        return lambda rng, shape: (V.cast(rng.integers(-2, 3, size=shape), d), V.cast(rng.integers(-2, 3, size=shape), d))
    return lambda rng, shape: (V.normal(rng, d, shape), V.normal(rng, d, shape))


def _binary_mask(name: str, d: DType):
    if name in ("div", "rem") and d.is_integer:
        return mask_where(lambda x, y: y != 0)  # implementation-defined: integer division by zero
    return _complex_mask(name, d)


def _binary_cases(name: str) -> list[Case]:
    opdef = OP_TABLE[name]
    out = []
    for d in opdef.dtypes:
        mask = _binary_mask(name, d)
        out += layouts(name, d, _binary_draw(name, d), mask=mask, broadcast_operand=1)
        out.append(case(name, d, "specials", V.grid(V.specials(d), V.specials(d)), tags=(EDGE,), mask=mask))
        out.append(case(name, d, "full_range", lambda rng, d=d: (V.full_range(rng, d, (64,)),
                                                                 V.full_range(rng, d, (64,))),
                        tags=(EDGE,), mask=mask))
        if d.is_float or d.is_complex:
            out.append(case(name, d, "subnormals", lambda rng, d=d: (V.subnormals(rng, d, (32,)),
                                                                     V.subnormals(rng, d, (32,))), tags=(EDGE,)))
    return out


def _select_cases() -> list[Case]:
    out = []
    for d in OP_TABLE["select"].dtypes:
        def draw(rng, shape, d=d):
            return rng.random(shape) < 0.5, V.normal(rng, d, shape), V.normal(rng, d, shape)

        out += layouts("select", d, draw, broadcast_operand=0)
        s = V.specials(d)
        out.append(case("select", d, "specials", (np.arange(s.size) % 2 == 0, s, s[::-1].copy()), tags=(EDGE,)))
    return out


def _clamp_cases() -> list[Case]:
    out = []
    for d in OP_TABLE["clamp"].dtypes:
        def draw(rng, shape, d=d):
            lo = V.normal(rng, d, shape)
            hi = V.cast(np.maximum(lo.astype(np.float64), V.normal(rng, d, shape).astype(np.float64)), d)
            return lo, V.normal(rng, d, shape), hi

        out += layouts("clamp", d, draw, broadcast_operand=1)
        s = V.specials(d)
        lo, hi = V.cast(np.full(s.shape, -1), d), V.cast(np.full(s.shape, 1), d)
        out.append(case("clamp", d, "specials_x", (lo, s, hi), tags=(EDGE,)))
        out.append(case("clamp", d, "specials_bounds", (s, V.cast(np.zeros(s.shape), d), s[::-1].copy()),
                        tags=(EDGE,)))
        out.append(case("clamp", d, "lo_above_hi", (hi, s, lo), tags=(EDGE,)))  # lo > hi gives hi
    return out


def _convert_mask(src: DType, dst: DType):
    if not (src.is_float and dst.is_integer):
        return None
    info = dst.iinfo

    def valid(x):  # float -> int of NaN or out-of-range values is implementation-defined
        t = np.trunc(x.astype(np.float64))
        return np.isfinite(t) & (t >= float(info.min)) & (t < float(info.max) + 1.0)

    return mask_where(valid)


def _convert_pairs():
    """Every (source, result) dtype pair convert takes: any real pair, and any dtype to complex."""
    for src in OP_TABLE["convert"].dtypes:
        for dst in ALL_DTYPES + COMPLEX_DTYPES:
            if not (src.is_complex and not dst.is_complex):
                yield src, dst


def _convert_cases() -> list[Case]:
    out = []
    for src, dst in _convert_pairs():
        attrs, mask, pre = {"dtype": dst}, _convert_mask(src, dst), f"to_{dst.short}:"
        out.append(case("convert", src, pre + "random", lambda rng, s=src: (V.normal(rng, s, (40,), 60),),
                        attrs, mask=mask))
        out.append(case("convert", src, pre + "specials", (V.specials(src),), attrs, tags=(EDGE,), mask=mask))
        out.append(case("convert", src, pre + "full_range", lambda rng, s=src: (V.full_range(rng, s, (64,)),),
                        attrs, tags=(EDGE,), mask=mask))
    return out


def _bitcast_cases() -> list[Case]:
    out = []
    dtypes = OP_TABLE["bitcast_convert"].dtypes
    for src in dtypes:
        for dst in (d for d in dtypes if d.bits == src.bits):
            attrs, pre = {"dtype": dst}, f"to_{dst.short}:"
            out.append(case("bitcast_convert", src, pre + "specials", (V.specials(src),), attrs, tags=(EDGE,)))
            out.append(case("bitcast_convert", src, pre + "full_range",
                            lambda rng, s=src: (V.full_range(rng, s, (3, 16)),), attrs, tags=(EDGE,)))
    return out


# The op table's families, in table order: a new unary or binary op gets its cases here.
_UNARY = ops_in_family("unary")
_BINARY = ops_in_family("binary")

IR_FAMILIES = ("unary", "binary", "selection", "conversion")
OPS = ops_of(IR_FAMILIES)


def cases() -> list[Case]:
    out = []
    for name in _UNARY:
        out += _unary_cases(name)
    for name in _BINARY:
        out += _binary_cases(name)
    return out + _select_cases() + _clamp_cases() + _convert_cases() + _bitcast_cases()



f32, f64, i32, f16, b = DType.float32, DType.float64, DType.int32, DType.float16, DType.bool

ERRORS = (
    ErrorCase("exp", (_t(i32, 3),), {}, "dtype i32 is not accepted", "int_operand"),
    ErrorCase("is_nan", (_t(i32, 3),), {}, "dtype i32 is not accepted", "int_operand"),
    ErrorCase("logical_not", (_t(f32, 3),), {}, "dtype f32 is not accepted", "float_operand"),
    ErrorCase("exp", (_t(f32, 3),), {"axis": 0}, "unknown attribute", "unknown_attr"),
    ErrorCase("add", (_t(f32, 3), _t(f32, 4)), {}, "insert a broadcast_in_dim", "shape_mismatch"),
    ErrorCase("add", (_t(f32, 3), _t(f64, 3)), {}, "insert a convert", "dtype_mismatch"),
    ErrorCase("add", (_t(f32, 3),), {}, "takes 2 operand(s)", "one_operand"),
    ErrorCase("pow", (_t(i32, 3), _t(i32, 3)), {}, "dtype i32 is not accepted", "int_operand"),
    ErrorCase("shift_left", (_t(f32, 3), _t(f32, 3)), {}, "dtype f32 is not accepted", "float_operand"),
    ErrorCase("logical_and", (_t(i32, 3), _t(i32, 3)), {}, "dtype i32 is not accepted", "int_operand"),
    ErrorCase("lt", (_t(b, 3), _t(b, 3)), {}, "dtype bool is not accepted", "bool_operand"),
    ErrorCase("select", (_t(f32, 3), _t(f32, 3), _t(f32, 3)), {}, "the predicate must be bool", "float_pred"),
    ErrorCase("select", (_t(b, 3), _t(f32, 3), _t(f64, 3)), {}, "insert a convert", "branch_dtypes"),
    ErrorCase("select", (_t(b, 2), _t(f32, 3), _t(f32, 3)), {}, "insert a broadcast_in_dim", "pred_shape"),
    ErrorCase("clamp", (_t(f64, 3), _t(f32, 3), _t(f32, 3)), {}, "insert a convert", "lo_dtype"),
    ErrorCase("clamp", (_t(b, 3), _t(b, 3), _t(b, 3)), {}, "dtype bool is not accepted", "bool_operand"),
    ErrorCase("convert", (_t(f32, 3),), {"dtype": "f7"}, "expected a value of kind dtype", "bad_dtype"),
    ErrorCase("convert", (_t(f32, 3),), {}, "missing required attribute", "no_dtype"),
    ErrorCase("bitcast_convert", (_t(b, 3),), {"dtype": DType.uint8}, "bool has no defined bit layout", "bool_src"),
    ErrorCase("bitcast_convert", (_t(f32, 3),), {"dtype": f16}, "bit widths must be equal", "width"),
)
