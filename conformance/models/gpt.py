"""A GPT-style language model: token + position embeddings, pre-LayerNorm blocks with
causal attention (``F.scaled_dot_product_attention``) and a GELU MLP, tied output head,
next-token cross-entropy. Also the training step used by ``examples/train_gpt.py``."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from .spec import ModelSpec


@dataclass(frozen=True)
class GPTConfig:
    vocab: int = 32
    context: int = 8
    width: int = 16
    heads: int = 2
    layers: int = 2
    batch: int = 2


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.heads = cfg.heads
        self.qkv = nn.Linear(cfg.width, 3 * cfg.width)
        self.proj = nn.Linear(cfg.width, cfg.width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, t, c))


class Block(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.width)
        self.attn = CausalSelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.width)
        self.mlp = nn.Sequential(nn.Linear(cfg.width, 4 * cfg.width), nn.GELU(), nn.Linear(4 * cfg.width, cfg.width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    """Returns the mean next-token cross-entropy of ``tokens`` (the training objective)."""

    def __init__(self, cfg: GPTConfig = GPTConfig()):
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab, cfg.width)
        self.pos = nn.Embedding(cfg.context, cfg.width)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))
        self.ln_f = nn.LayerNorm(cfg.width)
        self.head = nn.Linear(cfg.width, cfg.vocab, bias=False)
        self.head.weight = self.tok.weight  # tied embeddings: one parameter, two uses
        for embedding in (self.tok, self.pos):  # GPT-2's init: logits start small, loss near log(vocab)
            nn.init.normal_(embedding.weight, std=0.02)

    def forward(self, tokens: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        t = tokens.shape[1]
        x = self.tok(tokens) + self.pos(torch.arange(t, device=tokens.device))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def batch(cfg: GPTConfig, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Random tokens and their next-token targets (the sequence shifted by one)."""
    seq = torch.randint(0, cfg.vocab, (cfg.batch, cfg.context + 1), generator=g)
    return seq[:, :-1].contiguous(), seq[:, 1:].contiguous()


def train_step(model: nn.Module, optimizer: torch.optim.Optimizer, tokens, targets) -> float:
    """One optimizer step on ``model`` (compiled or eager); returns the loss before the step."""
    optimizer.zero_grad(set_to_none=True)
    loss = model(tokens, targets)
    loss.backward()
    optimizer.step()
    return loss.item()


def _inputs(g: torch.Generator) -> tuple:
    return batch(GPTConfig(), g)


def _loss(loss: torch.Tensor, inputs: tuple) -> torch.Tensor:
    return loss


SPEC = ModelSpec("gpt", GPT, _inputs, _loss, description="2-layer GPT LM, causal SDPA, tied head, cross-entropy")
