"""``nn.RNN``, ``nn.GRU`` and ``nn.LSTM``, which Dynamo leaves to eager torch by default.

Unless ``torch._dynamo.config.allow_rnn`` is set, Dynamo refuses to trace these modules: the
module runs in eager torch, and often the whole function around it does (a model whose forward
starts with its LSTM captures no graph at all), with no graph break on record, so neither
torch.compile nor ``torch._dynamo.explain`` says so. parity's backends run them (the model zoo's
LSTM trains on every backend with the flag set), so ``parity.compile`` names each such module
once, at the ``parity.compile`` line, with the fix, and ``parity.explain`` lists them.

Example::

    >>> import torch
    >>> net = torch.nn.Sequential(torch.nn.Linear(4, 4))
    >>> eager_rnn_modules(net)
    []
"""

from __future__ import annotations

import torch

from ..ir.graph import SourceLoc
from .graph_breaks import RNN_FIX, GraphBreakWarning, Island
from .source import warn_at

RNN_WHY = ("Dynamo leaves nn.RNN, nn.GRU and nn.LSTM to eager torch unless torch._dynamo.config.allow_rnn is "
           "set, and then often the whole function around them, with no graph break on record")


def eager_rnn_modules(module) -> list[str]:
    """The names of ``module``'s RNN, GRU and LSTM submodules (``""`` for itself) that Dynamo
    will leave to eager torch under the current config; [] for a function or with allow_rnn set."""
    if not isinstance(module, torch.nn.Module) or torch._dynamo.config.allow_rnn:
        return []
    return [name for name, sub in module.named_modules() if isinstance(sub, torch.nn.RNNBase)]


def _why(names: list[str]) -> str:
    return ", ".join(repr(name or "the module itself") for name in names) + f" (nn.RNN/GRU/LSTM): {RNN_WHY}"


def warn_eager_rnns(module, backend_name: str, site: SourceLoc | None) -> None:
    """One warning at ``site`` naming the RNN modules Dynamo will leave to eager torch."""
    names = eager_rnn_modules(module)
    if names:
        warn_at(site, f"parity.compile: {len(names)} recurrent module(s) will run in eager torch, not on "
                      f"{backend_name!r}\n  why: {_why(names)}\n  fix: {RNN_FIX}", GraphBreakWarning)


def rnn_islands(module, site: SourceLoc | None) -> list[Island]:
    """``parity.explain``'s islands for the same modules: one, as one warning names them."""
    names = eager_rnn_modules(module)
    return [Island("skipped frame", site, _why(names))] if names else []
