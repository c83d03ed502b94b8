"""Composites the backend claims natively: torch's own softmax, log_softmax and
scaled_dot_product_attention.

Inductor fuses softmax and log_softmax into one reduction kernel each (its decompositions
compute float16/bfloat16 in float32 and round once, which the IR's composites do too). Their
edge cases are the IR's: a row with NaN or +inf, or made only of -inf, gives NaN.

Attention is torch's fused CPU kernel (``_scaled_dot_product_flash_attention_for_cpu``, an
extern call in Inductor's code, as under torch.compile): one pass over the keys per block of
queries where the decomposition's fused kernel reads a long KV cache for the scores and again
for the weighted sum. A decode step with a static cache of 2048 positions (a 4-layer Llama,
studies/static_cache_decode) went from 0.88× to 0.95× torch.compile's speed. Its edge cases
are the IR's (``parity conform --backend inductor --ops scaled_dot``: a row whose keys are all
masked gives zeros; infinities in v give NaN where weighted).
Every other composite reaches the backend decomposed into primitives, which Inductor
fuses again.
"""

from __future__ import annotations

import torch

from .context import InductorNodeContext


def softmax(ctx: InductorNodeContext, x):
    return torch.softmax(x, ctx.attrs["axis"])


def log_softmax(ctx: InductorNodeContext, x):
    return torch.log_softmax(x, ctx.attrs["axis"])


def scaled_dot_product_attention(ctx: InductorNodeContext, q, k, v, mask):
    attrs = ctx.attrs  # the IR's mask is torch's: bool true = attend, a float one is added
    return torch.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=mask if attrs["has_mask"] else None, is_causal=attrs["causal"], scale=attrs["scale"])


RULES = {"softmax": softmax, "log_softmax": log_softmax, "scaled_dot_product_attention": scaled_dot_product_attention}
