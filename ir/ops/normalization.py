"""Normalization composites: ``layer_norm rms_norm batch_norm group_norm``.

Each normalizes x over some axes with statistics computed in the graph (biased
variance, as torch does) and applies a per-element or per-channel affine map. The
weight and bias operands are always present: a frontend passes ones/zeros where torch's
are ``None``. float16/bfloat16 inputs are normalized in float32 and rounded back once,
like torch's kernels, so the statistics do not lose the mantissa bits they need.

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, evaluate, f64
    >>> b = GraphBuilder()
    >>> x, w, bias = b.input(f64[1, 2]), b.input(f64[2]), b.input(f64[2])
    >>> g = b.build([b.layer_norm(x, w, bias, normalized_ndim=1, eps=0.0)])
    >>> evaluate(g, [np.array([[1.0, 3.0]]), np.ones(2), np.zeros(2)])[0].tolist()
    [[-1.0, 1.0]]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..dtypes import FLOAT_DTYPES
from ..errors import TypeRuleError
from ..opdef import Accuracy, AttrKind, AttrSpec, Group, Kind, OpDef
from ..types import TensorType
from . import compose
from .compose import expand, full, kept_dims, widened
from .rules import check_dtype


def _check_params(op: str, x: TensorType, params: Sequence[TensorType], shape, what: str) -> None:
    """Weight/bias/statistics operands (1, 2, ...) have x's dtype and ``shape``."""
    for i, t in enumerate(params, start=1):
        if t.dtype != x.dtype:
            raise TypeRuleError(op, f"dtype {t.dtype.short} differs from x's {x.dtype.short}; insert a convert", i)
        if t.shape != tuple(shape):
            raise TypeRuleError(op, f"shape {t} must be {what} {list(shape)} (x is {x})", i)


def _standardize(b, x, axes, eps):
    """(x - mean) / sqrt(var + eps) over ``axes`` (biased variance); also returns the mean,
    the sum of squared deviations and the element count (rank-0), for batch_norm's update."""
    keep = kept_dims(x.rank, axes)
    n = compose.count(b, x, axes, x.dtype)
    mean = b.div(b.reduce_sum(x, axes=tuple(axes)), expand(b, n, [x.shape[d] for d in keep], ()))
    xc = b.sub(x, expand(b, mean, x.shape, keep))
    sq_sum = b.reduce_sum(b.mul(xc, xc), axes=tuple(axes))
    var = b.div(sq_sum, expand(b, n, sq_sum.shape, ()))
    rstd = b.rsqrt(b.add(var, full(b, eps, x.dtype, var.shape)))
    return b.mul(xc, expand(b, rstd, x.shape, keep)), mean, sq_sum, n


# -- layer_norm / rms_norm ---------------------------------------------------------------


def _trailing_infer(op: str):
    def infer(types, attrs):
        x, *params = types
        k = attrs["normalized_ndim"]
        check_dtype(op, x, FLOAT_DTYPES)
        if not 1 <= k <= x.rank:
            raise TypeRuleError(op, f"must be in 1..{x.rank} for x {x}", "normalized_ndim")
        _check_params(op, x, params, x.shape[x.rank - k:], "the normalized trailing shape")
        return (x,)

    return infer


@widened
def _layer_norm(b, attrs, x, weight, bias):
    tail = tuple(range(x.rank - attrs["normalized_ndim"], x.rank))
    y = _standardize(b, x, tail, attrs["eps"])[0]
    return b.add(b.mul(y, expand(b, weight, x.shape, tail)), expand(b, bias, x.shape, tail))


@widened
def _rms_norm(b, attrs, x, weight):
    tail = tuple(range(x.rank - attrs["normalized_ndim"], x.rank))
    ms = b.mean(b.mul(x, x), axes=tail)
    rrms = b.rsqrt(b.add(ms, full(b, attrs["eps"], x.dtype, ms.shape)))
    y = b.mul(x, expand(b, rrms, x.shape, kept_dims(x.rank, tail)))
    return b.mul(y, expand(b, weight, x.shape, tail))


# -- batch_norm ----------------------------------------------------------------------------


def _channel_infer(op: str, params: str):
    """Type rule of ops over x [N, C, *spatial] with per-channel operands of shape [C]."""

    def infer(types, attrs):
        x, *rest = types
        check_dtype(op, x, FLOAT_DTYPES)
        if x.rank < 2:
            raise TypeRuleError(op, f"x must be [N, C, *spatial], got {x}", 0)
        _check_params(op, x, rest, (x.shape[1],), f"[C] ({params})")
        return (x,)

    return infer


def _batch_norm_infer(types, attrs):
    (x,) = _channel_infer("batch_norm", "weight, bias, running_mean, running_var")(types, attrs)
    per_channel = [x.shape[d] for d in range(x.rank) if d != 1]
    if attrs["training"] and all(isinstance(d, int) for d in per_channel) and math.prod(per_channel) == 1:
        # torch raises too: the unbiased running variance would divide by zero.
        raise TypeRuleError("batch_norm", f"training needs more than one value per channel, x is {x}", 0)
    channel = TensorType(x.dtype, (x.shape[1],))
    return (x, channel, channel)


def _affine(b, y, weight, bias):
    """y * weight + bias with per-channel weight/bias [C] on dim 1."""
    return b.add(b.mul(y, expand(b, weight, y.shape, (1,))), expand(b, bias, y.shape, (1,)))


@widened
def _batch_norm(b, attrs, x, weight, bias, running_mean, running_var):
    eps, momentum = attrs["eps"], attrs["momentum"]
    if not attrs["training"]:
        rstd = b.rsqrt(b.add(running_var, full(b, eps, x.dtype, running_var.shape)))
        y = b.mul(b.sub(x, expand(b, running_mean, x.shape, (1,))), expand(b, rstd, x.shape, (1,)))
        return _affine(b, y, weight, bias), running_mean, running_var
    y, mean, sq_sum, n = _standardize(b, x, (0,) + tuple(range(2, x.rank)), eps)
    # torch: running = momentum * batch_stat + (1 - momentum) * running, with the
    # unbiased variance (squared deviations / (n - 1)) as the batch statistic.
    dof = b.sub(n, compose.scalar(b, 1, x.dtype))
    unbiased = b.div(sq_sum, expand(b, dof, sq_sum.shape, ()))
    new = [b.add(b.mul(full(b, momentum, x.dtype, stat.shape), stat),
                 b.mul(full(b, 1.0 - momentum, x.dtype, stat.shape), running))
           for stat, running in ((mean, running_mean), (unbiased, running_var))]
    return _affine(b, y, weight, bias), new[0], new[1]


# -- group_norm ------------------------------------------------------------------------------


def _group_norm_infer(types, attrs):
    (x,) = _channel_infer("group_norm", "weight, bias")(types, attrs)
    groups, channels = attrs["groups"], x.shape[1]
    if groups < 1 or isinstance(channels, int) and channels % groups:
        raise TypeRuleError("group_norm", f"{groups} must be ≥ 1 and divide the {channels} channels of x {x}",
                            "groups")
    return (x,)


@widened
def _group_norm(b, attrs, x, weight, bias):
    groups = attrs["groups"]
    per_group = compose.static_count(x, range(1, x.rank))
    if per_group is None:  # the group size is a reshape attribute, so it must be known
        raise TypeRuleError("group_norm", f"x's channel and spatial dims must be static, got {x.type}", 0)
    per_group //= groups
    grouped = b.reshape(x, shape=(x.shape[0], groups, per_group))
    y = _standardize(b, grouped, (2,), attrs["eps"])[0]
    return _affine(b, b.reshape(y, shape=x.shape), weight, bias)


# -- the table ----------------------------------------------------------------------------------

_EPS = AttrSpec("eps", AttrKind.FLOAT, 1e-5, doc="added to the variance before the square root")
_NDIM = AttrSpec("normalized_ndim", AttrKind.INT, doc="how many trailing dims are normalized")

# name -> (operands, attrs, infer, decompose, num_results, doc)
_OPS = {
    "layer_norm": (("x", "weight", "bias"), (_NDIM, _EPS), _trailing_infer("layer_norm"), _layer_norm, 1,
                   "(x - mean) / sqrt(var + eps) * weight + bias over the trailing `normalized_ndim` dims "
                   "(biased variance); weight and bias have the normalized shape."),
    "rms_norm": (("x", "weight"), (_NDIM, AttrSpec("eps", AttrKind.FLOAT, doc="torch's None is finfo(dtype).eps")),
                 _trailing_infer("rms_norm"), _rms_norm, 1,
                 "x / sqrt(mean(x**2) + eps) * weight over the trailing `normalized_ndim` dims."),
    "batch_norm": (("x", "weight", "bias", "running_mean", "running_var"),
                   (AttrSpec("training", AttrKind.BOOL, doc="normalize with batch statistics and update the running ones"),
                    AttrSpec("momentum", AttrKind.FLOAT, 0.1, doc="weight of the batch statistic in the update"),
                    _EPS),
                   _batch_norm_infer, _batch_norm, 3,
                   "x [N, C, *spatial] normalized per channel → (out, new_running_mean, new_running_var). "
                   "Training: batch mean and biased variance; running stats updated with the unbiased "
                   "variance. Eval: running stats, returned unchanged."),
    "group_norm": (("x", "weight", "bias"),
                   (AttrSpec("groups", AttrKind.INT, doc="channel groups; must divide C"), _EPS),
                   _group_norm_infer, _group_norm, 1,
                   "x [N, C, *spatial] normalized over each group of C/groups channels and all spatial "
                   "dims, then weight/bias [C] per channel."),
}

OPS = tuple(
    OpDef(name=name, kind=Kind.COMPOSITE, operands=operands, attrs=attrs, infer=infer, dtypes=FLOAT_DTYPES,
          accuracy=Accuracy.COMPOSITE, groups=frozenset({Group.NORMALIZATION}), decompose=decompose,
          num_results=num_results, doc=doc)
    for name, (operands, attrs, infer, decompose, num_results, doc) in _OPS.items()
)
