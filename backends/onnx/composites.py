"""Composites claimed natively: the ONNX op where it agrees with the IR, measured.

:data:`NATIVE` maps a composite to its ONNX rule, the dtypes it is claimed in and, where
the ONNX op covers only some attributes, a ``fits(attrs, in_types)`` test. A node in an
unclaimed dtype, or whose attributes do not fit, is lowered through its decomposition
(:func:`.lowering.lower_node`), so every graph still lowers. Each claim was checked by
``parity conform --backend onnx`` on every claimed dtype (docs/backends/onnx.md lists the
measured errors and what stays decomposed, with the reason).

float16/bfloat16 run in float32 and are rounded once (``legalize.COMPOSITE_F32``), which
is what the IR's decompositions do (``compose.widened``).

Example::

    >>> from parity.ir import GraphBuilder, f32
    >>> from parity.backends.onnx.lowering import to_model
    >>> b = GraphBuilder(); x = b.input(f32[2, 3])
    >>> [n.op_type for n in to_model(b.build([b.softmax(x, axis=1)])).graph.node]
    ['Softmax']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...ir.dtypes import DType
from ...ir.ops.pooling import _windows
from ...ir.types import TensorType
from .context import OnnxNodeContext
from .emitter import ONNX_DTYPES
from .shape import dim_value

_F16, _BF16, _F32, _F64 = DType.float16, DType.bfloat16, DType.float32, DType.float64
_FLOATS = frozenset({_F16, _BF16, _F32, _F64})

Fits = Callable[[Mapping[str, Any], Sequence[TensorType]], bool]


@dataclass(frozen=True)
class Native:
    """One composite lowered to an ONNX op: the rule, the claimed dtypes, the attributes it covers."""

    rule: Callable[..., Any]
    dtypes: frozenset[DType]
    fits: Fits | None = None


def _eps_exact(attrs, in_types) -> bool:
    """ONNX's ``epsilon`` is a float32 attribute: float64 graphs need an eps float32 holds."""
    eps = attrs["eps"]
    return in_types[0].dtype is not _F64 or float(np.float32(eps)) == eps


def _stash(ctx: OnnxNodeContext) -> int:
    """Compute the statistics in the operand's own type (float32 after widening, or float64)."""
    return ONNX_DTYPES[ctx.dtype]


def layer_norm(ctx, x, weight, bias):
    return ctx.op("LayerNormalization", x, weight, bias, axis=-ctx.attrs["normalized_ndim"],
                  epsilon=ctx.attrs["eps"], stash_type=_stash(ctx))


def rms_norm(ctx, x, weight):
    return ctx.op("RMSNormalization", x, weight, axis=-ctx.attrs["normalized_ndim"], epsilon=ctx.attrs["eps"],
                  stash_type=_stash(ctx))


def group_norm(ctx, x, weight, bias):
    return ctx.op("GroupNormalization", x, weight, bias, num_groups=ctx.attrs["groups"],
                  epsilon=ctx.attrs["eps"], stash_type=_stash(ctx))


def batch_norm(ctx, x, weight, bias, mean, var):
    y = ctx.op("BatchNormalization", x, weight, bias, mean, var, epsilon=ctx.attrs["eps"])
    return y, mean, var  # eval mode: the running statistics come back unchanged


def softmax(ctx, x):
    return ctx.op("Softmax", x, axis=ctx.attrs["axis"])


def log_softmax(ctx, x):
    axis = ctx.attrs["axis"]
    out = ctx.op("LogSoftmax", x, axis=axis)
    if ctx.dtype is not _F64:
        return out
    # ORT's float64 LogSoftmax gives -inf beside a +inf in the row, and finite values beside
    # a NaN that is not the row's first element (its max skips NaN); the IR's row is NaN.
    # NaN counts as +inf here, so one ReduceMax finds both.
    inf = ctx.scalar(np.inf)
    top = ctx.op("ReduceMax", ctx.op("Where", ctx.op("IsNaN", x), inf, x), ctx.em.ints([axis]), keepdims=1)
    inf_row = ctx.expand(ctx.op("Equal", top, inf), _keep_axis(ctx.in_types[0].shape, axis),
                         ctx.in_types[0].shape)
    return ctx.where(inf_row, ctx.scalar(np.nan), out, _F64)


def _keep_axis(shape, axis: int) -> list:
    return [1 if i == axis else d for i, d in enumerate(shape)]


def gelu(ctx, x):
    return ctx.op("Gelu", x, approximate=ctx.attrs["approximate"])


def einsum(ctx, *xs):
    return ctx.op("Einsum", *xs, equation=ctx.attrs["equation"].replace(" ", ""))


def _same_label_sizes(attrs, in_types) -> bool:
    """ONNX Einsum broadcasts only '...' dims; the IR also broadcasts a letter of size 1."""
    terms = attrs["equation"].replace(" ", "").partition("->")[0].split(",")
    sizes: dict[str, Any] = {}
    for term, t in zip(terms, in_types):
        head, _, tail = term.partition("...")
        labelled = list(zip(head, t.shape)) + list(zip(reversed(tail), reversed(t.shape)))
        if any(sizes.setdefault(c, d) != d for c, d in labelled):
            return False
    return True


def _pool_attrs(ctx: OnnxNodeContext, op: str) -> dict:
    """Window geometry as explicit pads: torch's ceil_mode windows become extra high padding."""
    windows = _windows(op, ctx.in_types[0], ctx.attrs)
    return dict(kernel_shape=[w.kernel for w in windows], strides=[w.stride for w in windows],
                pads=[w.pad for w in windows] + [w.pad_high for w in windows])


def max_pool(ctx, x):
    attrs = _pool_attrs(ctx, "max_pool")
    dilations = [w.dilation for w in _windows("max_pool", ctx.in_types[0], ctx.attrs)]

    def plain():
        return ctx.op("MaxPool", x, dilations=dilations, **attrs)

    def exact():  # MaxPool skips NaN; the IR's max propagates it: pool a NaN indicator alongside
        nan = ctx.op("MaxPool", ctx.cast(ctx.op("IsNaN", x), ctx.dtype), dilations=dilations, **attrs)
        return ctx.poison(plain(), nan)

    if not ctx.dtype.is_float:
        return plain()
    # One read pass picks the path: an input without NaN has a sum that is not NaN, and pools
    # plainly, which keeps ORT's NCHWc MaxPool after a Conv (the indicator's passes cost a
    # 16×3×64×64 convnet 1.3-1.5x in raw ORT: docs/measurements/onnx_vs_export.md). A NaN sum without a NaN
    # (inf + -inf) takes the exact path too, only slower.
    wide = x if ctx.dtype in (DType.float32, DType.float64) else ctx.cast(x, DType.float32)
    has_nan = ctx.op("IsNaN", ctx.op("ReduceSum", wide, keepdims=0))
    return ctx.em.if_(has_nan, exact, plain, ctx.out.with_dtype(ctx.dtype))


def avg_pool(ctx, x):
    return ctx.op("AveragePool", x, count_include_pad=int(ctx.attrs["count_include_pad"]),
                  **_pool_attrs(ctx, "avg_pool"))


def _avg_divisor_fits(attrs, in_types) -> bool:
    """torch counts padding up to ``size + pad`` only; ONNX would count ceil_mode's extra padding too."""
    if not attrs["count_include_pad"]:
        return True
    return all(w.pad_high == w.pad for w in _windows("avg_pool", in_types[0], attrs))


def scaled_dot_product_attention(ctx, q, k, v, mask):
    """softmax(q @ k^T * scale, masked) @ v in float32 (float16 and bfloat16 are rounded once
    at the end, the IR's rule): the IR's own formula, node by node.

    Not ONNX's Attention: under the opset parity emits, ORT has no Attention kernel and
    inlines the op's function, which scales q and k by sqrt(scale) each (two roundings
    more), adds an all-zero bias, copies k and v for grouped heads and reads its shapes
    back per call: about 40 nodes where this is 7 to 11. A GPT-2 decode step with a static
    cache ran 314 ORT nodes with it (bench/results/programs.md). Without mask or causal flag,
    float32 is bit for bit what ORT's native Attention kernel (opset 23) computes.

    A masked score is -inf (a bool mask selects, a float mask is added), so ORT's Softmax,
    which subtracts the row maximum first, sees the sign of a zero score nowhere. A row
    whose scores are all -inf gets zero weights, as the IR's softmax gives (ORT's gives NaN:
    conformance case ``infinite_scores``), so its output is zeros (NaN where v holds an
    infinity, as in the IR and torch: case ``masked_row_infinite_values``). A row sum of -inf
    rules out NaN and +inf in the row, so a row maximum of -inf then means every score is -inf.
    """
    dtype, attrs = ctx.dtype, ctx.attrs
    if dtype is not DType.float32:
        q, k, v = (ctx.cast(x, DType.float32) for x in (q, k, v))
    q_t, k_t, _, mask_t = ctx.in_types
    rank = k_t.rank
    keys = ctx.op("Transpose", k, perm=[*range(rank - 2), rank - 1, rank - 2])
    scores = ctx.op("Mul", ctx.op("MatMul", q, keys), ctx.scalar(attrs["scale"], DType.float32))
    minus_inf = ctx.scalar(-np.inf, DType.float32)
    if attrs["causal"]:
        scores = ctx.op("Where", _causal_keep(ctx, q_t.shape[-2], k_t.shape[-2]), scores, minus_inf)
    elif attrs["has_mask"] and mask_t.dtype is DType.bool:
        scores = ctx.op("Where", mask, scores, minus_inf)
    elif attrs["has_mask"]:
        scores = ctx.op("Add", scores, mask if dtype is DType.float32 else ctx.cast(mask, DType.float32))
    last = ctx.em.ints([-1])
    empty = ctx.op("And", ctx.op("Equal", ctx.op("ReduceSum", scores, last, keepdims=1), minus_inf),
                   ctx.op("Equal", ctx.op("ReduceMax", scores, last, keepdims=1), minus_inf))
    # The weights of an empty row are zeros before the product, as in the IR (0 * inf is NaN
    # there too). ORT's Where may turn a selected -0.0 into +0.0, and no weight is -0.0.
    weights = ctx.op("Where", empty, ctx.scalar(0.0, DType.float32), ctx.op("Softmax", scores, axis=-1))
    out = ctx.op("MatMul", weights, v)
    return out if dtype is DType.float32 else ctx.cast(out, dtype)


def _causal_keep(ctx, queries, keys) -> str:
    """bool [L, S]: query i attends to key j <= i (top-left aligned; sizes may be symbolic)."""
    def counts(size):
        return ctx.op("Range", ctx.scalar(0, DType.int64), dim_value(ctx, size), ctx.scalar(1, DType.int64))

    rows = ctx.op("Unsqueeze", counts(queries), ctx.em.ints([1]))
    return ctx.op("GreaterOrEqual", rows, counts(keys))


def relu(ctx, x):
    return ctx.op("Relu", x)  # ORT's Relu keeps -0.0 and NaN, as the IR's x < 0 ? 0 : x does


def _not_training(attrs, in_types) -> bool:
    return not attrs["training"]


NATIVE: dict[str, Native] = {
    "layer_norm": Native(layer_norm, _FLOATS, _eps_exact),
    "rms_norm": Native(rms_norm, _FLOATS, _eps_exact),
    "group_norm": Native(group_norm, _FLOATS, _eps_exact),
    "batch_norm": Native(batch_norm, _FLOATS, lambda a, t: _not_training(a, t) and _eps_exact(a, t)),
    "relu": Native(relu, _FLOATS),  # ORT's Where is ~15x slower than its Relu (16M f32: 160 vs 11 ms)
    "softmax": Native(softmax, _FLOATS),
    "log_softmax": Native(log_softmax, _FLOATS),
    "gelu": Native(gelu, frozenset({_F16, _BF16, _F32})),  # ORT has no float64 Erf
    "einsum": Native(einsum, _FLOATS | {DType.int32, DType.int64}, _same_label_sizes),
    "max_pool": Native(max_pool, _FLOATS | {DType.int8, DType.uint8}),
    # The rule computes in float32 (the IR's rule for narrower floats); float64 takes the decomposition.
    "scaled_dot_product_attention": Native(scaled_dot_product_attention, frozenset({_F16, _BF16, _F32})),
    "avg_pool": Native(avg_pool, frozenset({_F16, _BF16, _F32}), _avg_divisor_fits),  # no float64 kernel
}

RULES = {name: native.rule for name, native in NATIVE.items()}
