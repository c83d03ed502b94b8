"""An LSTM sequence model: ``nn.LSTM`` (2 layers, batch_first) and a linear head."""

from __future__ import annotations

import torch
import torch.nn as nn

from .spec import ModelSpec, mean_square


class LSTMModel(nn.Module):
    def __init__(self, d_in: int = 5, hidden: int = 8, layers: int = 2, d_out: int = 3):
        super().__init__()
        self.lstm = nn.LSTM(d_in, hidden, num_layers=layers, batch_first=True)
        self.head = nn.Linear(hidden, d_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, (h, c) = self.lstm(x)
        return self.head(out + c.sum(0).unsqueeze(1))  # the cell state gets a gradient too


def _inputs(g: torch.Generator) -> tuple:
    return (torch.randn(2, 6, 5, generator=g),)


# Dynamo leaves nn.LSTM to eager torch unless allow_rnn is set; the zoo wants it captured.
SPEC = ModelSpec("lstm", LSTMModel, _inputs, mean_square, dynamo_config={"allow_rnn": True},
                 description="2-layer nn.LSTM + linear head")
