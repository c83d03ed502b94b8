"""ViT: Conv2d patch embedding, class token, position embedding, one pre-LayerNorm
encoder block (``nn.MultiheadAttention``, GELU MLP), classification head."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from .spec import ModelSpec

IMAGE, PATCH, CHANNELS, WIDTH, HEADS, CLASSES = 8, 4, 3, 16, 2, 5


class EncoderBlock(nn.Module):
    def __init__(self, width: int = WIDTH, heads: int = HEADS):
        super().__init__()
        self.ln1 = nn.LayerNorm(width)
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class ViT(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(CHANNELS, WIDTH, PATCH, stride=PATCH)
        tokens = (IMAGE // PATCH) ** 2 + 1
        self.cls = nn.Parameter(torch.randn(1, 1, WIDTH) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, tokens, WIDTH) * 0.02)
        self.block = EncoderBlock()
        self.ln = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, CLASSES)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.patch(images).flatten(2).transpose(1, 2)  # (batch, patches, width)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        x = self.block(x)
        return self.head(self.ln(x[:, 0]))


def _inputs(g: torch.Generator) -> tuple:
    return (torch.randn(2, CHANNELS, IMAGE, IMAGE, generator=g),)


def _loss(logits: torch.Tensor, inputs: tuple) -> torch.Tensor:
    return F.cross_entropy(logits, torch.tensor([0, 4]))


SPEC = ModelSpec("vit", ViT, _inputs, _loss, description="ViT patch embedding + one encoder block")
