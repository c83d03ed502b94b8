"""The model zoo: small PyTorch models every backend must run, forward and training step.

Each model lives in its own module and exports one or more :class:`ModelSpec` entries;
:data:`MODELS` lists them all (explicitly, no discovery). Sizes are small so the
float64 reference interpreter runs each in well under a second. A spec says how to
build the model, how to make example inputs, how to turn the output into a scalar loss,
and which modes (``"train"``, ``"eval"``) it is checked in.

Example::

    >>> from parity.conformance.models import MODELS, get_model
    >>> [spec.name for spec in MODELS]
    ['mlp', 'cnn', 'resnet_block', 'gpt', 'lstm', 'vit', 'spectrogram']
    >>> model, inputs = get_model("mlp").instantiate(seed=0)
    >>> tuple(model(*inputs).shape)
    (4, 5)
"""

from __future__ import annotations

from . import cnn, gpt, lstm, mlp, resnet, spectrogram, vit
from .spec import ModelSpec

#: Every zoo model, in a fixed order (tests and reports are parametrized over it).
MODELS: tuple[ModelSpec, ...] = (mlp.SPEC, cnn.SPEC, resnet.SPEC, gpt.SPEC, lstm.SPEC, vit.SPEC,
                               spectrogram.SPEC)


def get_model(name: str) -> ModelSpec:
    """The spec called ``name``; the error lists the zoo."""
    for spec in MODELS:
        if spec.name == name:
            return spec
    raise KeyError(f"no zoo model named {name!r}; the zoo has {', '.join(s.name for s in MODELS)}")


__all__ = ["MODELS", "ModelSpec", "get_model"]
