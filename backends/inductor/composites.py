"""Composites the backend claims natively: torch's own softmax and log_softmax.

Inductor fuses them into one reduction kernel each (its decompositions compute
float16/bfloat16 in float32 and round once, which the IR's composites do too). Their
edge cases are the IR's: a row with NaN or +inf, or made only of -inf, gives NaN.
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


RULES = {"softmax": softmax, "log_softmax": log_softmax}
