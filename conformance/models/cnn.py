"""CNN: Conv2d, BatchNorm2d (checked in train and eval mode), MaxPool2d, AvgPool2d, Linear."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from .spec import ModelSpec

CHANNELS, SIZE, CLASSES, BATCH = 3, 8, 4, 2


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(CHANNELS, 6, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(6)
        self.pool1 = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(6, 8, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(8)
        self.pool2 = nn.AvgPool2d(2)
        self.head = nn.Linear(8 * (SIZE // 4) ** 2, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.pool1(F.relu(self.bn1(self.conv1(x))))
        h = self.pool2(F.relu(self.bn2(self.conv2(h))))
        return self.head(h.flatten(1))


def _inputs(g: torch.Generator) -> tuple:
    return (torch.randn(BATCH, CHANNELS, SIZE, SIZE, generator=g),)


def _loss(logits: torch.Tensor, inputs: tuple) -> torch.Tensor:
    return F.cross_entropy(logits, torch.tensor([1, 3]))


SPEC = ModelSpec("cnn", CNN, _inputs, _loss, modes=("train", "eval"),
                 description="Conv2d/BatchNorm2d/MaxPool2d/AvgPool2d classifier")
