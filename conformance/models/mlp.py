"""MLP: Linear → ReLU → Linear → Tanh → Linear, trained with cross-entropy."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from .spec import ModelSpec

IN, HIDDEN, CLASSES, BATCH = 6, 16, 5, 4


class MLP(nn.Module):
    def __init__(self, d_in: int = IN, hidden: int = HIDDEN, classes: int = CLASSES):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc1(x))
        h = torch.tanh(self.fc2(h))
        return self.out(h)


def _inputs(g: torch.Generator) -> tuple:
    return (torch.randn(BATCH, IN, generator=g),)


def _loss(logits: torch.Tensor, inputs: tuple) -> torch.Tensor:
    target = torch.arange(logits.shape[0]) % logits.shape[1]
    return F.cross_entropy(logits, target)


SPEC = ModelSpec("mlp", MLP, _inputs, _loss, description="3-layer MLP, ReLU/Tanh, cross-entropy")
