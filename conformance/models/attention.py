"""A hand-written multi-head self-attention block whose graph computes sizes from its input's.

Not a zoo entry (it has no loss and no training mode): dynamic-shape export and
``compile(dynamic=True)`` are checked on it because it reshapes to ``B*S`` and
``B*heads``, products of the dynamic dims that an exported file must carry as expressions.

Example::

    >>> import torch
    >>> block = Attention(dim=8, heads=2)
    >>> tuple(block(torch.ones(3, 5, 8)).shape)
    (3, 5, 8)
"""

from __future__ import annotations

import torch
from torch import nn


class Attention(nn.Module):
    """Multi-head self-attention on ``x [batch, seq, dim]``, written with explicit reshapes."""

    def __init__(self, dim: int = 32, heads: int = 4):
        super().__init__()
        self.heads, self.qkv, self.out = heads, nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)

    def forward(self, x):
        batch, seq, dim = x.shape
        qkv = self.qkv(x.reshape(batch * seq, dim)).view(batch, seq, 3, self.heads, dim // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).reshape(3, batch * self.heads, seq, dim // self.heads)
        weights = torch.softmax(q @ k.transpose(1, 2) / (dim // self.heads) ** 0.5, dim=-1)
        mixed = (weights @ v).view(batch, self.heads, seq, -1).transpose(1, 2).reshape(batch, seq, dim)
        return self.out(mixed)
