"""Loss composites: ``cross_entropy nll_loss mse_loss`` with torch's reductions.

Class-index losses take scores ``[C]``, ``[N, C]`` or ``[N, C, d...]`` (classes on dim 1,
or dim 0 without a batch) and integer targets of that shape without the class dim.
Targets equal to ``ignore_index`` contribute 0 and are left out of the ``mean``'s count,
so a batch whose targets are all ignored has mean NaN (0/0), as in torch. Other
out-of-range targets are implementation-defined (torch raises). float16/bfloat16 are
computed in float32 and rounded once.

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, evaluate, f64, i64
    >>> b = GraphBuilder()
    >>> logp, t = b.input(f64[2, 2]), b.input(i64[2])
    >>> g = b.build([b.nll_loss(logp, t, ignore_index=1)])
    >>> evaluate(g, [np.array([[-1.0, -2.0], [-3.0, -4.0]]), np.array([0, 1])])[0].tolist()
    1.0
"""

from __future__ import annotations

from ..dtypes import FLOAT_DTYPES, DType
from ..errors import TypeRuleError
from ..opdef import Accuracy, AttrKind, AttrSpec, Group, Kind, OpDef
from ..types import TensorType
from .compose import full, widened
from .rules import check_dtype, check_same_types

_TARGET_DTYPES = (DType.int32, DType.int64)


def _class_axis(scores: TensorType) -> int:
    return 1 if scores.rank >= 2 else 0


def _result(x: TensorType, per_element, reduction: str) -> TensorType:
    return x.with_shape(per_element if reduction == "none" else ())


def _class_infer(op: str):
    def infer(types, attrs):
        scores, target = types
        check_dtype(op, scores, FLOAT_DTYPES)
        if scores.rank < 1:
            raise TypeRuleError(op, f"scores must be [C], [N, C] or [N, C, d...], got {scores}", 0)
        c = _class_axis(scores)
        want = scores.shape[:c] + scores.shape[c + 1:]
        check_dtype(op, target, _TARGET_DTYPES, 1)
        if target.shape != want:
            raise TypeRuleError(op, f"target must have the scores' shape without the class dim, "
                                f"[{','.join(map(str, want))}], got {target}", 1)
        info = target.dtype.iinfo
        if not info.min <= attrs["ignore_index"] <= info.max:
            raise TypeRuleError(op, f"{attrs['ignore_index']} does not fit the target's {target.dtype.short}",
                                "ignore_index")
        if not 0.0 <= attrs.get("label_smoothing", 0.0) <= 1.0:
            raise TypeRuleError(op, f"must be in [0, 1], got {attrs['label_smoothing']}", "label_smoothing")
        return (_result(scores, want, attrs["reduction"]),)

    return infer


def _reduce(b, loss, count, reduction: str):
    """torch's reduction: 'none' keeps the elements, 'sum' adds them, 'mean' divides the sum by ``count()``."""
    if reduction == "none":
        return loss
    total = b.reduce_sum(loss, axes=tuple(range(loss.rank)))
    return total if reduction == "sum" else b.div(total, count())


def _nll(b, attrs, logp, target):
    """(reduced -logp[target], the valid-target mask, the 'mean' divisor)."""
    c = _class_axis(logp.type)
    valid = b.ne(target, full(b, attrs["ignore_index"], target.dtype, target.shape))
    safe = b.select(valid, target, full(b, 0, target.dtype, target.shape))  # any in-range index will do
    index = b.reshape(safe, shape=target.shape[:c] + (1,) + target.shape[c:])
    picked = b.reshape(b.gather(logp, index, axis=c), shape=target.shape)
    zeros = full(b, 0.0, logp.dtype, target.shape)
    loss = b.select(valid, b.neg(picked), zeros)

    def count():
        return b.reduce_sum(b.convert(valid, dtype=logp.dtype), axes=tuple(range(valid.rank)))

    return _reduce(b, loss, count, attrs["reduction"]), valid, zeros, count


@widened
def _nll_loss(b, attrs, logp, target):
    return _nll(b, attrs, logp, target)[0]


@widened
def _cross_entropy(b, attrs, logits, target):
    c = _class_axis(logits.type)
    logp = b.log_softmax(logits, axis=c)
    loss, valid, zeros, count = _nll(b, attrs, logp, target)
    eps, reduction = attrs["label_smoothing"], attrs["reduction"]
    if eps == 0.0:
        return loss
    # torch: (1 - eps) * nll + eps / C * (the reduced -sum_c logp, zero where ignored)
    smooth = b.select(valid, b.neg(b.reduce_sum(logp, axes=(c,))), zeros)
    smooth = _reduce(b, smooth, count, reduction)
    dtype, shape = logits.dtype, loss.shape
    return b.add(b.mul(full(b, 1.0 - eps, dtype, shape), loss),
                 b.mul(smooth, full(b, eps / logits.shape[c], dtype, shape)))


def _mse_infer(types, attrs):
    check_dtype("mse_loss", types[0], FLOAT_DTYPES)
    check_same_types("mse_loss", types)
    return (_result(types[0], types[0].shape, attrs["reduction"]),)


@widened
def _mse_loss(b, attrs, x, y):
    diff = b.sub(x, y)

    def count():
        return b.constant(diff.type.numel, x.dtype)

    return _reduce(b, b.mul(diff, diff), count, attrs["reduction"])


_REDUCTION = AttrSpec("reduction", AttrKind.STR, "mean", choices=("mean", "sum", "none"),
                      doc="'mean' divides by the number of non-ignored elements")
_IGNORE = AttrSpec("ignore_index", AttrKind.INT, -100, doc="targets equal to it contribute nothing")

# name -> (operands, attrs, infer, decompose, doc)
_OPS = {
    "cross_entropy": (("logits", "target"),
                      (_IGNORE, AttrSpec("label_smoothing", AttrKind.FLOAT, 0.0, doc="in [0, 1]"), _REDUCTION),
                      _class_infer("cross_entropy"), _cross_entropy,
                      "torch.nn.functional.cross_entropy with class-index targets: nll_loss of "
                      "log_softmax over the class dim, optionally label-smoothed."),
    "nll_loss": (("logp", "target"), (_IGNORE, _REDUCTION), _class_infer("nll_loss"), _nll_loss,
                 "-logp[target] along the class dim, reduced; ignored targets count as 0 and "
                 "not at all in the mean."),
    "mse_loss": (("x", "y"), (_REDUCTION,), _mse_infer, _mse_loss, "(x - y)**2, reduced."),
}

OPS = tuple(
    OpDef(name=name, kind=Kind.COMPOSITE, operands=operands, attrs=attrs, infer=infer, dtypes=FLOAT_DTYPES,
          accuracy=Accuracy.COMPOSITE, groups=frozenset({Group.LOSS}), decompose=decompose, doc=doc,
          implementation_defined=("target out of range other than ignore_index (torch raises)",)
          if name != "mse_loss" else ())
    for name, (operands, attrs, infer, decompose, doc) in _OPS.items()
)
