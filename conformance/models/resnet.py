"""ResNet basic block (two 3x3 convs with BatchNorm, a strided 1x1 projection shortcut)."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from .spec import ModelSpec, mean_square


class BasicBlock(nn.Module):
    """torchvision's BasicBlock, with the downsampling shortcut."""

    def __init__(self, c_in: int = 4, c_out: int = 8, stride: int = 2):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.shortcut = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


def _inputs(g: torch.Generator) -> tuple:
    return (torch.randn(2, 4, 8, 8, generator=g),)


SPEC = ModelSpec("resnet_block", BasicBlock, _inputs, mean_square, modes=("train", "eval"),
                 description="ResNet basic block with projection shortcut")
