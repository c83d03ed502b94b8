"""What test_compiled_objects.py sends to DataLoader workers started with ``spawn``: the child
unpickles these by module and name, so they live in a module the test puts on ``sys.path``
(the child inherits it), not in the test module."""

from __future__ import annotations

import torch

import parity
from parity.frontend.compiled_graph import STATS


def scaled_tanh(x):
    return torch.tanh(x) * 2 + x


@parity.compile(backend="onnx")
def decorated_softplus(x):
    return torch.nn.functional.softplus(x) - 1


def row(i: int) -> torch.Tensor:
    """The input of item ``i``."""
    return torch.linspace(-2, 2, 3) * (i + 1)


class ThroughCompiled(torch.utils.data.Dataset):
    """Item i: the compiled module's and the compiled function's results on :func:`row` (i), and
    how many graphs parity translated or loaded in this process (0 would mean it ran eagerly)."""

    def __init__(self, module, function, n: int):
        self.module, self.function, self.n = module, function, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        with torch.no_grad():
            results = self.module(row(i)), self.function(row(i))
        return (*results, STATS["translations"] + STATS["fast_path_disk_loads"])
