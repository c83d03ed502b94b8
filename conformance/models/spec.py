"""What a zoo entry declares: constructor, example inputs, loss, modes."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch


@dataclass(frozen=True)
class ModelSpec:
    """One zoo model.

    ``build()`` returns a fresh ``nn.Module`` (parameters drawn from torch's generator);
    ``inputs(generator)`` returns the forward's positional arguments; ``loss(output,
    inputs)`` a scalar to differentiate. ``modes`` are the module modes checked
    (``"eval"`` matters for modules such as BatchNorm that behave differently).
    ``dynamo_config`` holds ``torch._dynamo.config`` settings the model needs to be
    captured whole (e.g. ``allow_rnn`` for ``nn.LSTM``, which Dynamo otherwise leaves
    to eager torch).
    """

    name: str
    build: Callable[[], torch.nn.Module]
    inputs: Callable[[torch.Generator], tuple]
    loss: Callable[[Any, tuple], torch.Tensor]
    modes: tuple[str, ...] = ("train",)
    dynamo_config: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""

    def instantiate(self, seed: int = 0, mode: str = "train") -> tuple[torch.nn.Module, tuple]:
        """A model and its example inputs, both reproducible from ``seed``."""
        torch.manual_seed(seed)
        model = self.build()
        model.train(mode == "train")
        generator = torch.Generator().manual_seed(seed + 1)
        return model, self.inputs(generator)


def mean_square(output: torch.Tensor, inputs: tuple) -> torch.Tensor:
    """A loss for models without targets: every output element gets a distinct gradient."""
    weights = torch.linspace(-1.0, 1.0, output.numel(), dtype=output.dtype).reshape(output.shape)
    return (output * output * weights).mean() + output.mean()
