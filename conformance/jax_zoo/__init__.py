"""JAX programs for the JAX frontend's tests and ``parity bench --jax``: the plain-JAX models
(:mod:`.plain`: an MLP, a CNN, a causal transformer LM) and the Flax zoo (:mod:`.flax_models`:
NNX CNN with BatchNorm and Dropout, ViT, VAE, LSTM through ``nnx.scan``, a Linen transformer),
each as three programs: the forward pass, ``value_and_grad`` of its loss, one optax step.

Example::

    >>> fun, args = program("mlp", "forward")
    >>> fun(*args).shape
    (5, 4)
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from . import flax_models, plain

STAGES = ("forward", "gradients", "optax_step")
MODEL_NAMES = (*plain.MODELS, *flax_models.ZOO)


@functools.cache
def _model(name: str):
    """Each model built once per process (Flax's initialisers are the slow part); its functions are pure."""
    return plain.MODELS[name]() if name in plain.MODELS else flax_models.ZOO[name]()


def program(model: str, stage: str) -> tuple[Callable, tuple]:
    """The function and arguments of one stage (:data:`STAGES`) of one model (:data:`MODEL_NAMES`)."""
    if model not in MODEL_NAMES or stage not in STAGES:
        raise KeyError(f"no JAX program {model}/{stage}; models: {list(MODEL_NAMES)}, stages: {list(STAGES)}")
    built = _model(model)
    return plain.stage_of(built, stage) if model in plain.MODELS else flax_models.stage_of(built, stage)
