"""Run a zoo model through ``parity.compile`` and eager torch side by side.

:func:`compare` builds two identical copies of a model, runs the forward and the
backward of the spec's loss in both, and returns every tensor pair that must agree:
the output, the loss, each parameter's gradient, and each buffer after the step
(BatchNorm's running statistics). Nothing here asserts; tests and reports decide.

Example::

    >>> from parity.conformance.models import get_model
    >>> result = compare(get_model("mlp"), backend="reference")
    >>> sorted(result.pairs)[:3]
    ['grad fc1.bias', 'grad fc1.weight', 'grad fc2.bias']
"""

from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass, field

import torch

from .spec import ModelSpec


@dataclass
class Comparison:
    """Compiled vs eager tensors of one (model, backend, mode) run.

    ``pairs`` maps a label (``"output"``, ``"loss"``, ``"grad NAME"``, ``"buffer NAME"``)
    to ``(compiled, eager)``; ``translations`` counts the FX graphs parity translated
    (a forward and a backward when the model is captured whole).
    """

    model: str
    backend: str
    mode: str
    pairs: dict[str, tuple[torch.Tensor, torch.Tensor]] = field(default_factory=dict)
    translations: int = 0

    def max_errors(self) -> dict[str, float]:
        """Largest absolute difference per label (NaN where the shapes differ)."""
        out = {}
        for label, (a, b) in self.pairs.items():
            out[label] = (a.double() - b.double()).abs().max().item() if a.shape == b.shape and a.numel() else (
                0.0 if a.shape == b.shape else float("nan"))
        return out

    def worst(self, prefix: str = "") -> float:
        """The largest error over the labels starting with ``prefix``."""
        errors = [e for label, e in self.max_errors().items() if label.startswith(prefix)]
        return max(errors, default=0.0)


def compare(spec: ModelSpec, backend: str = "reference", mode: str = "train", *, seed: int = 0) -> Comparison:
    """One forward + backward of ``spec`` compiled on ``backend`` and in eager torch."""
    import parity
    from parity.frontend import STATS

    model, inputs = spec.instantiate(seed, mode)
    eager = copy.deepcopy(model)
    result = Comparison(spec.name, backend, mode)
    before = STATS["translations"]
    with dynamo_config(spec):
        compiled = parity.compile(model, backend=backend)
        out = compiled(*inputs)
        spec.loss(out, inputs).backward()
    result.translations = STATS["translations"] - before
    expected = eager(*inputs)
    spec.loss(expected, inputs).backward()
    result.pairs["output"] = (out.detach(), expected.detach())
    result.pairs["loss"] = (spec.loss(out, inputs).detach(), spec.loss(expected, inputs).detach())
    for (name, p), (_, q) in zip(model.named_parameters(), eager.named_parameters()):
        missing = torch.full_like(p, float("nan"))  # a gradient that never arrived shows as NaN
        result.pairs[f"grad {name}"] = (_or(p.grad, missing), _or(q.grad, missing))
    for (name, a), (_, b) in zip(model.named_buffers(), eager.named_buffers()):
        result.pairs[f"buffer {name}"] = (a.detach().clone(), b.detach().clone())
    return result


def _or(tensor, default):
    return default if tensor is None else tensor.detach().clone()


@contextlib.contextmanager
def dynamo_config(spec: ModelSpec):
    """``torch._dynamo.config`` patched with the spec's settings for the duration."""
    if not spec.dynamo_config:
        yield
        return
    with torch._dynamo.config.patch(**spec.dynamo_config):
        yield
