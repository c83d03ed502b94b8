"""Activation composites: elementwise float functions built from primitives.

Each entry of ``OPS`` is one op, every field named: its attributes, its decomposition
and the formula it follows. The formulas are PyTorch's (``torch.nn.functional``), including
what they do at the edges: ``relu(-0.0) = -0.0``, ``gelu(-inf) = nan`` (``-inf * 0``),
``softplus`` returns x above its threshold. float16/bfloat16 are computed in float32
and rounded once (see :func:`compose.widened`), as PyTorch's kernels do.
"""

from __future__ import annotations

import math

from ..dtypes import FLOAT_DTYPES
from ..errors import TypeRuleError
from ..opdef import Accuracy, AttrKind, AttrSpec, Group
from . import compose
from .compose import full_like
from .rules import check_dtype

# SELU's constants (Klambauer et al. 2017), as in PyTorch.
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _relu(b, attrs, x):
    zero = full_like(b, 0.0, x)
    # x < 0 -> 0, so -0.0 and NaN pass through unchanged (torch's clamp_min(x, 0)).
    return b.select(b.lt(x, zero), zero, x)


def _leaky_relu(b, attrs, x):
    below = b.mul(x, full_like(b, attrs["negative_slope"], x))
    return b.select(b.gt(x, full_like(b, 0.0, x)), x, below)


def _elu_like(b, x, pos_scale: float, neg_scale: float):
    """x > 0 ? x * pos_scale : expm1(x) * neg_scale (NaN takes the negative branch)."""
    pos = x if pos_scale == 1.0 else b.mul(x, full_like(b, pos_scale, x))
    neg = b.mul(b.expm1(x), full_like(b, neg_scale, x))
    return b.select(b.gt(x, full_like(b, 0.0, x)), pos, neg)


def _elu(b, attrs, x):
    return _elu_like(b, x, 1.0, attrs["alpha"])


def _selu(b, attrs, x):
    return _elu_like(b, x, SELU_SCALE, SELU_ALPHA * SELU_SCALE)


def _gelu(b, attrs, x):
    if attrs["approximate"] == "tanh":
        # sqrt(2/pi) * (x + 0.044715 x^3)
        cube = b.mul(b.mul(x, x), x)
        inner = b.add(x, b.mul(full_like(b, 0.044715, x), cube))
        t = b.tanh(b.mul(full_like(b, math.sqrt(2.0 / math.pi), x), inner))
    else:
        t = b.erf(b.mul(x, full_like(b, math.sqrt(0.5), x)))
    # 0.5 x (1 + t); at x = -inf this is -inf * 0 = nan, as in torch.
    return b.mul(b.mul(x, full_like(b, 0.5, x)), b.add(full_like(b, 1.0, x), t))


def _silu(b, attrs, x):
    return b.mul(x, b.logistic(x))


def _softplus_of(b, x, beta: float, threshold: float):
    """(beta x > threshold) ? x : log1p(exp(beta x)) / beta."""
    xb = x if beta == 1.0 else b.mul(x, full_like(b, beta, x))
    soft = b.log1p(b.exp(xb))
    if beta != 1.0:
        soft = b.div(soft, full_like(b, beta, x))
    return b.select(b.gt(xb, full_like(b, threshold, x)), x, soft)


def _softplus(b, attrs, x):
    return _softplus_of(b, x, attrs["beta"], attrs["threshold"])


def _mish(b, attrs, x):
    # torch uses log1p(exp(x)) without a threshold; above 20 tanh(softplus) is 1.0
    # even in float64, so the threshold only avoids an inf intermediate.
    return b.mul(x, b.tanh(_softplus_of(b, x, 1.0, 20.0)))


def _hardtanh(b, attrs, x):
    return b.clamp(full_like(b, attrs["min_val"], x), x, full_like(b, attrs["max_val"], x))


def _relu6_of_x_plus_3(b, x):
    shifted = b.add(x, full_like(b, 3.0, x))
    return b.clamp(full_like(b, 0.0, x), shifted, full_like(b, 6.0, x))


def _hardsigmoid(b, attrs, x):
    return b.div(_relu6_of_x_plus_3(b, x), full_like(b, 6.0, x))


def _hardswish(b, attrs, x):
    # x * (relu6(x + 3) / 6): torch's (x * relu6(x + 3)) / 6 overflows for |x| near the
    # dtype's max; the bound (three roundings) is the same.
    return b.mul(x, _hardsigmoid(b, attrs, x))


def _check_hardtanh(attrs):
    if attrs["min_val"] > attrs["max_val"]:
        raise TypeRuleError("hardtanh", f"min_val {attrs['min_val']} exceeds max_val {attrs['max_val']}", "min_val")


def _float(name: str, default: float, doc: str = "") -> AttrSpec:
    return AttrSpec(name, AttrKind.FLOAT, default, doc=doc)


_ATTR_CHECKS = {"hardtanh": _check_hardtanh}


def _infer(name: str):
    check = _ATTR_CHECKS.get(name)

    def infer(types, attrs):
        check_dtype(name, types[0], FLOAT_DTYPES)
        if check is not None:
            check(attrs)
        return (types[0],)

    return infer


def _activation(*, name: str, decompose, widen: bool = True, attrs=(), doc: str):
    """An activation composite: one float operand x, elementwise. With ``widen`` (the
    default) float16/bfloat16 are computed in float32 and rounded once; relu and hardtanh
    only select or clamp, so they stay in the narrow dtype."""
    return compose.composite(name=name, operands=("x",), attrs=attrs, infer=_infer(name),
                             decompose=compose.widened(decompose) if widen else decompose, dtypes=FLOAT_DTYPES,
                             accuracy=Accuracy.COMPOSITE, groups=(Group.ELEMENTWISE, Group.ACTIVATION), doc=doc)


OPS = (
    _activation(name="relu", decompose=_relu, widen=False, doc="x < 0 ? 0 : x (keeps -0.0 and NaN)"),
    _activation(name="leaky_relu", attrs=(_float("negative_slope", 0.01),), decompose=_leaky_relu,
                doc="x > 0 ? x : negative_slope * x"),
    _activation(name="elu", attrs=(_float("alpha", 1.0),), decompose=_elu, doc="x > 0 ? x : alpha * expm1(x)"),
    _activation(name="selu", decompose=_selu, doc="scale * (x > 0 ? x : alpha * expm1(x)) with the SELU constants"),
    _activation(name="gelu", attrs=(AttrSpec("approximate", AttrKind.STR, "none", choices=("none", "tanh")),),
                decompose=_gelu,
                doc="0.5 x (1 + erf(x / sqrt 2)); approximate='tanh': "
                    "0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))"),
    _activation(name="silu", decompose=_silu, doc="x * logistic(x)"),
    _activation(name="mish", decompose=_mish, doc="x * tanh(softplus(x))"),
    _activation(name="softplus", attrs=(_float("beta", 1.0), _float("threshold", 20.0)), decompose=_softplus,
                doc="beta x > threshold ? x : log1p(exp(beta x)) / beta"),
    _activation(name="hardtanh", attrs=(_float("min_val", -1.0), _float("max_val", 1.0)), decompose=_hardtanh,
                widen=False, doc="clamp(x, min_val, max_val)"),
    _activation(name="hardsigmoid", decompose=_hardsigmoid, doc="clamp(x + 3, 0, 6) / 6"),
    _activation(name="hardswish", decompose=_hardswish, doc="x * (clamp(x + 3, 0, 6) / 6)"),
)
