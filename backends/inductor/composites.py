"""Composites the backend claims natively: torch's own softmax, log_softmax and
scaled_dot_product_attention, and lgamma and digamma through torch's float64 kernels.

Inductor fuses softmax and log_softmax into one reduction kernel each (its decompositions
compute float16/bfloat16 in float32 and round once, which the IR's composites do too). Their
edge cases are the IR's: a row with NaN or +inf, or made only of -inf, gives NaN.

Attention is torch's fused CPU kernel (``_scaled_dot_product_flash_attention_for_cpu``, an
extern call in Inductor's code, as under torch.compile) where the keys are many: one pass over
them per block of queries, where Inductor's fusion of the decomposition with the step's other
kernels (the cache update, the rotary embedding) reads a long KV cache more than once. Where
the keys are few the extern call's fixed cost loses, and the composite is decomposed
(:func:`declined`). Its edge cases are the IR's (``parity conform --backend inductor --ops
scaled_dot``: a row whose keys are all masked gives zeros; infinities in v give NaN where
weighted).
Every other composite reaches the backend decomposed into primitives, which Inductor
fuses again.
"""

from __future__ import annotations

import torch

from ...ir.dtypes import DType
from .context import InductorNodeContext


def softmax(ctx: InductorNodeContext, x):
    return torch.softmax(x, ctx.attrs["axis"])


def log_softmax(ctx: InductorNodeContext, x):
    return torch.log_softmax(x, ctx.attrs["axis"])


def scaled_dot_product_attention(ctx: InductorNodeContext, q, k, v, mask):
    attrs = ctx.attrs  # the IR's mask is torch's: bool true = attend, a float one is added
    return torch.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=mask if attrs["has_mask"] else None, is_causal=attrs["causal"], scale=attrs["scale"])


# The fused kernel from this many keys on. A 4-layer Llama (hidden 256, 8 heads of 32) decoding
# 32 tokens into a static cache (studies/static_cache_decode), ms per token, fused against
# decomposed in one process: 128 keys 3.59 / 3.17, 512 keys 3.64 / 3.74, 2048 keys 4.73 / 5.34.
# The zoo's tiny decoders (21 keys) ran 4-6% slower whole with the fused kernel.
FUSED_ATTENTION_MIN_KEYS = 512


def declined(node) -> bool:
    """Whether a claimed composite node is decomposed all the same: attention with few keys,
    keys of a symbolic count (a dynamic cache: its first sizes are a decode's smallest),
    operands the fused kernel does not take ([B, H, L, E] with v's E equal to q's), or float16
    and bfloat16 (the fused kernel rounds the weights to them before their product with v;
    the IR computes in float32 and rounds once: conformance case ``long_keys_causal``, bf16,
    failed with it)."""
    if node.op != "scaled_dot_product_attention":
        return False
    q, k, v = (value.type for value in node.inputs[:3])
    keys = k.shape[-2]
    return not (isinstance(keys, int) and keys >= FUSED_ATTENTION_MIN_KEYS and q.rank == 4
                and v.shape[-1] == q.shape[-1] and q.dtype in (DType.float32, DType.float64))


def _in_float64(torch_function):
    """lgamma, digamma (ir/ops/special.py): torch's float64 kernel (glibc's lgamma; Cephes's ψ),
    rounded once to the operand's dtype, as the IR's composite computes. Its decomposition (235
    and 126 float64 nodes, its series and shifts unrolled) took Inductor minutes to compile; the
    float64 kernels are within a float32 ULP's thousandth of the true value."""
    def rule(ctx: InductorNodeContext, x):
        return torch_function(x.to(torch.float64)).to(x.dtype)

    return rule


RULES = {"softmax": softmax, "log_softmax": log_softmax, "scaled_dot_product_attention": scaled_dot_product_attention,
         "lgamma": _in_float64(torch.lgamma), "digamma": _in_float64(torch.digamma)}
