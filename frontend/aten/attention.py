"""Attention: torch's fused CPU flash-attention forward/backward pair, translated exactly.

On CPU, AOTAutograd records ``_scaled_dot_product_flash_attention_for_cpu`` in the
forward and its fused backward, which reads the forward's ``logsumexp`` output. torch's
core decomposition of that forward returns a logsumexp of the wrong shape, so the
frontend keeps the fused forward (see ``aten_decompositions.decomposition_table``) and translates
the pair here: the output through the IR ``scaled_dot_product_attention`` composite
(backends may claim it), logsumexp and the gradients from the same scores.
"""

from __future__ import annotations

import math

from ...ir.dtypes import DType
from ..context import TranslationContext, unsupported


class _Scores:
    """scale * q @ k^T with the causal or explicit mask applied, over [*B, L, S]."""

    def __init__(self, ctx: TranslationContext, q, k, is_causal, attn_mask, scale):
        b = ctx.b
        self.n = n = q.type.rank - 2
        self.batch = tuple(range(n))
        self.scale = 1.0 / math.sqrt(q.type.shape[-1]) if scale is None else float(scale)
        dtype = q.type.dtype
        scores = b.dot_general(q, k, lhs_contracting_dims=(n + 1,), rhs_contracting_dims=(n + 1,),
                               lhs_batch_dims=self.batch, rhs_batch_dims=self.batch)
        shape = scores.type.shape
        self.shape = shape
        scores = b.mul(scores, ctx.full(self.scale, dtype, shape))
        minus_inf = ctx.full(-math.inf, dtype, shape)
        if is_causal:
            rows = b.iota(dtype=DType.int64, shape=shape[-2:], dimension=0)
            cols = b.iota(dtype=DType.int64, shape=shape[-2:], dimension=1)
            keep = b.broadcast_in_dim(b.ge(rows, cols), shape=shape, broadcast_dimensions=(n, n + 1))
            scores = b.select(keep, scores, minus_inf)
        self.mask = None
        if attn_mask is not None:
            mask = ctx.broadcast(attn_mask if attn_mask.type.dtype.is_bool else ctx.convert(attn_mask, dtype), shape)
            self.mask = mask
            scores = b.select(mask, scores, minus_inf) if mask.type.dtype.is_bool else b.add(scores, mask)
        self.values = scores

    def logsumexp(self, ctx: TranslationContext):
        """log(sum(exp(scores))) over keys; -inf for a fully masked query."""
        b, n = ctx.b, self.n
        top = b.reduce_max(self.values, axes=(n + 1,))
        finite = b.is_finite(top)
        top = b.select(finite, top, ctx.full(0.0, top.type.dtype, top.type.shape))
        spread = b.broadcast_in_dim(top, shape=self.shape, broadcast_dimensions=self.batch + (n,))
        total = b.reduce_sum(b.exp(b.sub(self.values, spread)), axes=(n + 1,))
        return b.add(b.log(total), top)


def _group_size(q, k) -> int:
    """Query heads per key/value head: 1, or more under grouped-query attention (GQA)."""
    if q.type.rank < 3 or k.type.rank < 3 or q.type.shape[-3] == k.type.shape[-3]:
        return 1
    heads, kv_heads = q.type.shape[-3], k.type.shape[-3]
    if not (isinstance(heads, int) and isinstance(kv_heads, int)) or heads % kv_heads:
        unsupported(f"grouped-query attention with {heads} query heads and {kv_heads} key/value heads")
    return heads // kv_heads


def _repeat_heads(ctx: TranslationContext, x, group: int):
    """[..., H, S, E] -> [..., H * group, S, E], query head h reading head h // group (torch's GQA)."""
    if group == 1:
        return x
    *lead, heads, s, e = x.type.shape
    wide = ctx.b.broadcast_in_dim(x, shape=(*lead, heads, group, s, e),
                                  broadcast_dimensions=(*range(len(lead)), len(lead), len(lead) + 2, len(lead) + 3))
    return ctx.reshape(wide, (*lead, heads * group, s, e))


def _sum_heads(ctx: TranslationContext, grad, group: int):
    """The gradient of :func:`_repeat_heads`: each key/value head sums its group's gradients."""
    if group == 1:
        return grad
    *lead, heads, s, e = grad.type.shape
    split = ctx.reshape(grad, (*lead, heads // group, group, s, e))
    return ctx.b.reduce_sum(split, axes=(len(lead) + 1,))


def _agreeing(ctx: TranslationContext, q, k, v):
    """k and v with q's batch dims, k with q's E and v with k's S. torch's CPU attention
    kernel never compares them, so Dynamo may give a KV cache's keys and values separate
    symbols; the equalities become graph assumptions checked when sizes are bound."""
    *batch, _, embed = q.type.shape
    source = k.type.shape[-2]
    k = ctx.assume_shape(k, (*batch, source, embed), "the keys' batch and embedding sizes must equal the queries'")
    v = ctx.assume_shape(v, (*batch, source, v.type.shape[-1]),
                         "the values' batch and sequence sizes must equal the keys'")
    return k, v


def flash_attention_forward(ctx: TranslationContext, q, k, v, dropout_p=0.0, is_causal=False, *, attn_mask=None,
                            scale=None):
    if dropout_p:
        unsupported("attention dropout inside the fused kernel (dropout_p > 0)")
    group = _group_size(q, k)
    k, v = _agreeing(ctx, q, _repeat_heads(ctx, k, group), _repeat_heads(ctx, v, group))
    length, source = q.type.shape[-2], k.type.shape[-2]
    scale_value = 1.0 / math.sqrt(q.type.shape[-1]) if scale is None else float(scale)
    if attn_mask is not None:
        shape = tuple(q.type.shape[:-2]) + (length, source)
        mask = ctx.broadcast(attn_mask if attn_mask.type.dtype.is_bool else ctx.convert(attn_mask, q.type.dtype), shape)
    else:
        mask = ctx.const(True, DType.bool)
    out = ctx.b.scaled_dot_product_attention(q, k, v, mask, causal=bool(is_causal), scale=scale_value,
                                             has_mask=attn_mask is not None)
    lse = None
    if ctx.users_of_result(1):
        scores = _Scores(ctx, q, k, is_causal, attn_mask, scale)
        lse = ctx.convert(scores.logsumexp(ctx), ctx.out_type(1).dtype)
    return out, lse


def flash_attention_backward(ctx: TranslationContext, grad, q, k, v, out, lse, dropout_p, is_causal, *, attn_mask=None,
                             scale=None):
    """dV = P^T dO; dS = P * (dO V^T - rowsum(dO * O)); dQ = scale dS K; dK = scale dS^T Q."""
    if dropout_p:
        unsupported("attention dropout inside the fused kernel (dropout_p > 0)")
    b = ctx.b
    dtype = q.type.dtype
    group = _group_size(q, k)
    k_type, v_type = k.type, v.type
    k, v = _agreeing(ctx, q, _repeat_heads(ctx, k, group), _repeat_heads(ctx, v, group))
    scores = _Scores(ctx, q, k, is_causal, attn_mask, scale)
    n, batch, shape = scores.n, scores.batch, scores.shape
    row = batch + (n,)
    lse = ctx.convert(lse, dtype)
    finite = b.is_finite(lse)
    lse = b.select(finite, lse, ctx.full(0.0, dtype, lse.type.shape))
    p = b.exp(b.sub(scores.values, b.broadcast_in_dim(lse, shape=shape, broadcast_dimensions=row)))
    p = b.select(b.broadcast_in_dim(finite, shape=shape, broadcast_dimensions=row), p, ctx.full(0.0, dtype, shape))

    def dot(x, y, contract_x, contract_y):
        return b.dot_general(x, y, lhs_contracting_dims=(contract_x,), rhs_contracting_dims=(contract_y,),
                             lhs_batch_dims=batch, rhs_batch_dims=batch)

    grad = ctx.convert(grad, dtype)
    grad_v = dot(p, grad, n, n)  # [*B, S, Ev]
    grad_p = dot(grad, v, n + 1, n + 1)  # [*B, L, S]
    delta = b.reduce_sum(b.mul(grad, ctx.convert(out, dtype)), axes=(n + 1,))
    grad_s = b.mul(p, b.sub(grad_p, b.broadcast_in_dim(delta, shape=shape, broadcast_dimensions=row)))
    grad_s = b.mul(grad_s, ctx.full(scores.scale, dtype, shape))
    grad_q = dot(grad_s, k, n + 1, n)  # [*B, L, E]
    grad_k = dot(grad_s, q, n, n)  # [*B, S, E]
    grad_k, grad_v = _sum_heads(ctx, grad_k, group), _sum_heads(ctx, grad_v, group)
    return (grad_q, ctx.assume_shape(grad_k, k_type.shape, "the keys' gradient has the keys' sizes"),
            ctx.assume_shape(grad_v, v_type.shape, "the values' gradient has the values' sizes"))


def sdpa(ctx: TranslationContext, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, *, scale=None,
         enable_gqa=False):
    """The unfused op, as it appears in export-level graphs."""
    result, _ = flash_attention_forward(ctx, q, k, v, dropout_p, is_causal, attn_mask=attn_mask, scale=scale)
    return result


TABLE = {
    "_scaled_dot_product_flash_attention_for_cpu.default": flash_attention_forward,
    "_scaled_dot_product_flash_attention_for_cpu_backward.default": flash_attention_backward,
    "scaled_dot_product_attention.default": sdpa,
}
