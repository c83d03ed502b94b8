"""``scaled_dot_product_attention``: softmax(q @ k^T * scale + mask) @ v, as a composite.

Semantics (torch.nn.functional.scaled_dot_product_attention, dropout excluded):

- q ``[*B, L, E]``, k ``[*B, S, E]``, v ``[*B, S, Ev]`` → ``[*B, L, Ev]``; the batch dims
  ``*B`` are equal in all operands (the frontend broadcasts them).
- ``scale`` is always explicit: a frontend passes ``1 / sqrt(E)`` for torch's ``None``.
- ``has_mask = false``: the ``mask`` operand is ignored (frontends pass a rank-0 dummy).
  ``has_mask = true``: mask is ``[*B, L, S]``, either bool (true = attend) or of q's
  dtype (added to the scores, ``-inf`` = masked).
- ``causal``: query i attends to keys j ≤ i (top-left aligned, also when L ≠ S). It
  excludes ``has_mask``, as in torch: fold a causal mask into ``mask`` instead.
- A query whose keys are all masked gets an all-zero output row (torch ≥ 2.5's
  ``_safe_softmax``), not NaN.
- The softmax subtracts the row maximum before ``exp``, so large scores do not overflow.
- float16/bfloat16 operands are computed in float32 and rounded once, as torch does.

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, evaluate, f64, bool_
    >>> b = GraphBuilder()
    >>> q, k, v = b.input(f64[1, 1]), b.input(f64[2, 1]), b.input(f64[2, 1])
    >>> out = b.scaled_dot_product_attention(q, k, v, b.constant(True, bool_), causal=True, scale=1.0)
    >>> evaluate(b.build([out]), [np.ones((1, 1)), np.ones((2, 1)), np.array([[3.0], [5.0]])])[0].tolist()
    [[3.0]]
"""

from __future__ import annotations

from ..dtypes import FLOAT_DTYPES, DType
from ..errors import TypeRuleError
from ..opdef import Accuracy, AttrKind, AttrSpec, Kind, OpDef
from .compose import expand, full, widened
from .rules import check_dtype

_OP = "scaled_dot_product_attention"


def _sdpa_infer(types, attrs):
    q, k, v, mask = types
    check_dtype(_OP, q, FLOAT_DTYPES)
    for i, t in enumerate((k, v), start=1):
        if t.dtype != q.dtype:
            raise TypeRuleError(_OP, f"dtype {t.dtype.short} differs from q's {q.dtype.short}", i)
        if t.rank != q.rank:
            raise TypeRuleError(_OP, f"{t} must have q's rank ({q})", i)
    if q.rank < 2:
        raise TypeRuleError(_OP, f"q must be [*B, L, E], got {q}", 0)
    batch, (length, embed) = q.shape[:-2], q.shape[-2:]
    if k.shape[:-2] != batch or k.shape[-1] != embed:
        raise TypeRuleError(_OP, f"k must be [*B, S, E] = [{_dims(batch)}S, {embed}] for q {q}, got {k}", 1)
    source = k.shape[-2]
    if v.shape[:-1] != batch + (source,):
        raise TypeRuleError(_OP, f"v must be [*B, S, Ev] = [{_dims(batch)}{source}, Ev] for k {k}, got {v}", 2)
    if attrs["has_mask"]:
        if attrs["causal"]:
            raise TypeRuleError(_OP, "causal excludes an explicit mask (as in torch); fold it into the mask",
                                "causal")
        if mask.dtype not in (DType.bool, q.dtype) or mask.shape != batch + (length, source):
            raise TypeRuleError(_OP, f"mask must be bool or {q.dtype.short} of shape "
                                f"[{_dims(batch)}{length}, {source}], got {mask}", 3)
    return (v.with_shape(batch + (length, v.shape[-1])),)


def _dims(batch) -> str:
    return "".join(f"{d}, " for d in batch)


@widened
def _sdpa(b, attrs, q, k, v, mask):
    n = q.rank - 2
    batch = tuple(range(n))
    scores = b.dot_general(q, k, lhs_contracting_dims=(n + 1,), rhs_contracting_dims=(n + 1,),
                           lhs_batch_dims=batch, rhs_batch_dims=batch)
    shape, dtype = scores.shape, q.dtype
    scores = b.mul(scores, full(b, attrs["scale"], dtype, shape))
    masked = full(b, float("-inf"), dtype, shape)
    if attrs["causal"]:
        rows = b.iota(dtype=DType.int64, shape=shape[-2:], dimension=0)
        cols = b.iota(dtype=DType.int64, shape=shape[-2:], dimension=1)
        keep = expand(b, b.ge(rows, cols), shape, (n, n + 1))
        scores = b.select(keep, scores, masked)
    elif attrs["has_mask"]:
        scores = b.select(mask, scores, masked) if mask.dtype == DType.bool else b.add(scores, mask)
    # Stable softmax over keys; a fully masked row has max -inf, shifted by 0 instead.
    row = batch + (n,)
    top = b.reduce_max(scores, axes=(n + 1,))
    top = b.select(b.eq(top, full(b, float("-inf"), dtype, top.shape)), full(b, 0.0, dtype, top.shape), top)
    e = b.exp(b.sub(scores, expand(b, top, shape, row)))
    total = b.reduce_sum(e, axes=(n + 1,))
    p = b.div(e, expand(b, total, shape, row))
    empty = b.eq(total, full(b, 0.0, dtype, total.shape))
    p = b.select(expand(b, empty, shape, row), full(b, 0.0, dtype, shape), p)
    return b.dot_general(p, v, lhs_contracting_dims=(n + 1,), rhs_contracting_dims=(n,),
                         lhs_batch_dims=batch, rhs_batch_dims=batch)


OPS = (
    OpDef(
        name=_OP,
        kind=Kind.COMPOSITE,
        operands=("q", "k", "v", "mask"),
        attrs=(
            AttrSpec("causal", AttrKind.BOOL, False, doc="query i attends to keys j <= i (top-left aligned)"),
            AttrSpec("scale", AttrKind.FLOAT, doc="multiplies q @ k^T; torch's default is 1/sqrt(E)"),
            AttrSpec("has_mask", AttrKind.BOOL, False, doc="use the mask operand (else it is ignored)"),
        ),
        infer=_sdpa_infer,
        dtypes=FLOAT_DTYPES,
        accuracy=Accuracy.COMPOSITE,
        decompose=_sdpa,
        doc="softmax(q @ k^T * scale + mask) @ v over [*B, L, E] x [*B, S, E] x [*B, S, Ev]; "
            "fully masked rows give zeros.",
    ),
)
