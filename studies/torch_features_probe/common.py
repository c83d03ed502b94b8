"""What the probe's scenarios share: the registry (:data:`CASES`, filled by :func:`case` in
cases.py and cases_modules.py) and the small models, inputs and training step they build on."""

from __future__ import annotations

import torch
from torch import nn

CASES: dict = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def _x(*shape, seed=1):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _mlp(seed=0, d=8):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(d, 16), nn.GELU(), nn.Linear(16, d))


def _grads(model, prefix="g.") -> dict:
    return {prefix + n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def _train_step(compiled, model, x) -> dict:
    out = compiled(x)
    out.square().mean().backward()
    return {"out": out.detach(), **_grads(model)}
