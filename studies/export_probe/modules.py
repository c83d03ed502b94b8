"""Whole modules users deploy that the Hugging Face zoo may not cover, as export probe cases.

Each is a :class:`~studies.torch_ops_probe.cases.Case` whose function calls an eval-mode
module and whose inputs have the batch at dim 0 of every input (the export probe makes
dim 0 of each input dynamic): a TransformerEncoder with a padding mask, MultiheadAttention,
a bidirectional batch-first LSTM and GRU, a small UNet (ConvTranspose2d, nearest and
bilinear interpolation), a model that masks with ``torch.where`` and ``masked_fill``, and
an int64 token classifier with an embedding.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from studies.torch_ops_probe.cases import Case, R, ri, rn


def _eval(module: nn.Module) -> nn.Module:
    return module.eval()


def _made(cls, *args, **kwargs) -> nn.Module:
    torch.manual_seed(0)
    return _eval(cls(*args, **kwargs))


def _padding(batch: int, seq: int) -> torch.Tensor:
    """A key padding mask: row b pads its last b positions (True = padding)."""
    return torch.arange(seq)[None, :] >= (seq - torch.arange(batch)[:, None])


class UNet(nn.Module):
    """Two levels down, two up: ConvTranspose2d, nearest and bilinear upsampling, a skip."""

    def __init__(self):
        super().__init__()
        self.down1, self.down2 = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.up = nn.ConvTranspose2d(16, 8, 2, stride=2)
        self.mix, self.out = nn.Conv2d(16, 8, 3, padding=1), nn.Conv2d(8, 2, 1)

    def forward(self, x):
        a = F.relu(self.down1(x))
        b = F.relu(self.down2(F.max_pool2d(a, 2)))
        c = F.interpolate(self.up(b), scale_factor=2, mode="nearest")
        c = F.relu(self.mix(torch.cat([a, c], 1)))
        return self.out(F.interpolate(c, scale_factor=0.5, mode="bilinear", align_corners=False))


class MaskedScores(nn.Module):
    """Scores masked two ways (``masked_fill`` and ``torch.where``) with a boolean mask input."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 6)

    def forward(self, x, mask):
        s = self.proj(x) @ x.transpose(1, 2)
        s = s.masked_fill(~mask[:, None, :], float("-inf")).softmax(-1)
        return torch.where(mask[:, :, None], s @ x, torch.zeros_like(x))


class TokenClassifier(nn.Module):
    """int64 tokens → embedding → GELU MLP → per-token logits and a mean-pooled sentence logit."""

    def __init__(self):
        super().__init__()
        self.emb, self.fc, self.head = nn.Embedding(50, 16, padding_idx=0), nn.Linear(16, 16), nn.Linear(16, 3)

    def forward(self, tokens):
        h = F.gelu(self.fc(self.emb(tokens)))
        return self.head(h), self.head(h.mean(1))


def module_cases() -> list[Case]:
    """The deployed-module cases, batch 3 at dim 0 of every input."""
    encoder = _made(nn.TransformerEncoder, nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True),
                    num_layers=2, enable_nested_tensor=False)
    mha = _made(nn.MultiheadAttention, 16, 4, batch_first=True)
    lstm = _made(nn.LSTM, 6, 8, num_layers=2, batch_first=True, bidirectional=True)
    gru = _made(nn.GRU, 6, 8, batch_first=True, bidirectional=True)
    unet, masked, tokens = _made(UNet), _made(MaskedScores), _made(TokenClassifier)
    return [
        Case("m_transformer_encoder_pad", lambda x, pad: encoder(x, src_key_padding_mask=pad),
             lambda: (rn(3, 7, 16), _padding(3, 7))),
        Case("m_multihead_attention", lambda q, kv, pad: mha(q, kv, kv, key_padding_mask=pad),
             lambda: (rn(3, 5, 16), rn(3, 7, 16), _padding(3, 7))),
        Case("m_lstm_bidir_2layer", lambda x: lstm(x), lambda: (rn(3, 5, 6),)),
        Case("m_gru_bidir", lambda x: gru(x), lambda: (rn(3, 5, 6),)),
        Case("m_unet", unet, lambda: (rn(3, 3, 8, 8),)),
        Case("m_where_masked_fill", masked, lambda: (rn(3, 5, 6), torch.rand(3, 5, generator=R) > 0.3)),
        Case("m_token_embedding", tokens, lambda: (ri(0, 50, 3, 7),)),
    ]
