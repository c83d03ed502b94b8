"""Statistics composites: softmax, log_softmax, logsumexp, mean, var, std.

All are numerically stable the usual way: softmax-like ops subtract the maximum along
the axis first, var subtracts the mean first (two passes). Edge cases follow PyTorch:
a softmax row containing NaN or +inf, or made only of -inf, is NaN; logsumexp of an
all -inf (or empty) row is -inf and of a row containing +inf is +inf; var with
``n - correction <= 0`` divides by 0 (inf, or NaN for 0/0). float16/bfloat16 are
computed in float32 and rounded once. Reduced dims are removed (frontends reshape for
``keepdim``).
"""

from __future__ import annotations

from ..dtypes import FLOAT_DTYPES
from ..opdef import Accuracy, AttrKind, AttrSpec, Group
from . import compose
from .compose import expand, full_like, kept_dims, reduce
from .rules import check_axes, check_axis, check_dtype


def _softmax(b, attrs, x):
    axis = (attrs["axis"],)
    e = b.exp(b.sub(x, reduce(b, "reduce_max", x, axis, keepdims=True)))
    return b.div(e, reduce(b, "reduce_sum", e, axis, keepdims=True))


def _log_softmax(b, attrs, x):
    axis = (attrs["axis"],)
    shifted = b.sub(x, reduce(b, "reduce_max", x, axis, keepdims=True))
    log_sum = b.log(b.reduce_sum(b.exp(shifted), axes=axis))
    return b.sub(shifted, expand(b, log_sum, x.shape, kept_dims(x.rank, axis)))


def _logsumexp(b, attrs, x):
    axes = attrs["axes"]
    m = b.reduce_max(x, axes=axes)
    # An infinite max (all -inf, or some +inf) is replaced by 0 so that x - m has no
    # inf - inf; the sum then gives log(0) = -inf or log(inf) = inf, as torch does.
    m = b.select(b.is_inf(m), full_like(b, 0.0, m), m)
    e = b.exp(b.sub(x, expand(b, m, x.shape, kept_dims(x.rank, axes))))
    return b.add(b.log(b.reduce_sum(e, axes=axes)), m)


def _mean_of(b, x, axes):
    n = compose.count(b, x, axes, x.dtype)
    total = b.reduce_sum(x, axes=axes)
    return b.div(total, expand(b, n, total.shape, ()))


def _mean(b, attrs, x):
    return _mean_of(b, x, attrs["axes"])


def _var_of(b, x, axes, correction: int):
    d = b.sub(x, expand(b, _mean_of(b, x, axes), x.shape, kept_dims(x.rank, axes)))
    squares = b.reduce_sum(b.mul(d, d), axes=axes)
    n = compose.static_count(x, axes)
    if n is not None:
        dof = compose.scalar(b, max(n - correction, 0), x.dtype)
    else:
        n = compose.count(b, x, axes, x.dtype)
        dof = b.max(b.sub(n, compose.scalar(b, correction, x.dtype)), compose.scalar(b, 0, x.dtype))
    return b.div(squares, expand(b, dof, squares.shape, ()))


def _var(b, attrs, x):
    return _var_of(b, x, attrs["axes"], attrs["correction"])


def _std(b, attrs, x):
    return b.sqrt(_var_of(b, x, attrs["axes"], attrs["correction"]))


def _infer_axis(name: str):
    def infer(types, attrs):
        t = types[0]
        check_dtype(name, t, FLOAT_DTYPES)
        check_axis(name, attrs["axis"], t.rank)
        return (t,)

    return infer


def _infer_axes(name: str):
    def infer(types, attrs):
        t = types[0]
        check_dtype(name, t, FLOAT_DTYPES)
        check_axes(name, attrs["axes"], t.rank)
        return (t.with_shape(t.shape[d] for d in kept_dims(t.rank, attrs["axes"])),)

    return infer


_AXIS = AttrSpec("axis", AttrKind.INT, doc="the axis to normalize over")
_AXES = AttrSpec("axes", AttrKind.INTS, doc="the axes to reduce (removed from the result)")
_CORRECTION = AttrSpec("correction", AttrKind.INT, 1, doc="divide by n - correction (1: Bessel)")


def _statistic(*, name: str, decompose, **fields):
    """A statistics composite: one float operand x, computed in float32 for float16/bfloat16."""
    return compose.composite(name=name, operands=("x",), decompose=compose.widened(decompose), dtypes=FLOAT_DTYPES,
                             **fields)


OPS = (
    _statistic(name="softmax", attrs=(_AXIS,), infer=_infer_axis("softmax"), decompose=_softmax,
               doc="exp(x - max) / sum(exp(x - max)) along axis"),
    _statistic(name="log_softmax", attrs=(_AXIS,), infer=_infer_axis("log_softmax"), decompose=_log_softmax,
               doc="(x - max) - log(sum(exp(x - max))) along axis"),
    _statistic(name="logsumexp", attrs=(_AXES,), infer=_infer_axes("logsumexp"), decompose=_logsumexp,
               groups=(Group.REDUCTION,), doc="log(sum(exp(x - m))) + m over axes, m the max (0 where infinite)"),
    _statistic(name="mean", attrs=(_AXES,), infer=_infer_axes("mean"), decompose=_mean,
               accuracy=Accuracy.ACCUMULATION, groups=(Group.REDUCTION,), doc="sum over axes / n (empty: nan)"),
    _statistic(name="var", attrs=(_AXES, _CORRECTION), infer=_infer_axes("var"), decompose=_var,
               accuracy=Accuracy.ACCUMULATION, groups=(Group.REDUCTION,),
               doc="sum((x - mean)^2) / max(n - correction, 0)"),
    _statistic(name="std", attrs=(_AXES, _CORRECTION), infer=_infer_axes("std"), decompose=_std,
               accuracy=Accuracy.ACCUMULATION, groups=(Group.REDUCTION,), doc="sqrt(var)"),
)
