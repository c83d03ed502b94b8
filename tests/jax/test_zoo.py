"""The JAX model zoo (conformance/jax_zoo/flax_models.py): each model's forward pass, value_and_grad of its loss and
one optax AdamW step, through parity.jax.jit on every backend, against jax.jit by the rule of
tests/jax/compare.py. The models' new state (batch statistics, RNG counts and keys) is an
output and is compared too: dropout masks and normal draws come from the same keys as jax.jit's."""

from __future__ import annotations

import functools

import pytest

from parity.conformance.jax_zoo.flax_models import ZOO, stage_of

from .compare import assert_matches_jax_jit

pytest.importorskip("flax.nnx", reason="the zoo needs Flax (pip install 'parity[jax]')")
pytest.importorskip("optax", reason="the zoo needs optax (pip install 'parity[jax]')")

BACKENDS = ("reference", "xla", "onnx", "inductor", "triton")
STAGES = ("forward", "gradients", "optax_step")


@functools.cache
def _model(name):
    """Each model built once per process (Flax's initialisers are the slow part); its functions are pure."""
    return ZOO[name]()


@pytest.fixture
def triton_interpreted(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


# CI runs two cells on the reference interpreter: the CNN's gradients (train-mode BatchNorm
# state and dropout masks, which no other CI test has; 18 s, its AdamW step 26-33 s, the step
# being test_libraries' NNX CNN AdamW step on xla in CI) and the LSTM's AdamW step (nnx.scan). The ViT (onnx 14 s; attention is the plain-jnp
# transformer's in CI), the VAE (xla 10 s; normal draws are test_random's) and the Linen
# transformer (onnx 13 s; Linen is test_libraries' CNN) run with -m matrix, as do inductor and
# triton, whose C++ compile and interpreter take minutes on these graphs (the threefry rounds
# alone take inductor ~10 min). Seconds measured on the idle 2-core machine, 2026-12-06.
# The ConvNeXt's gradients on xla (4 s) are the CI cell of a grouped convolution's weight gradient.
CI_CELLS = {("reference", "nnx_cnn_bn_dropout", "gradients"), ("reference", "nnx_lstm", "optax_step"),
            ("xla", "nnx_convnext", "gradients")}
CELLS = [pytest.param(b, m, s, marks=() if (b, m, s) in CI_CELLS else pytest.mark.matrix)
         for b in BACKENDS for m in ZOO for s in STAGES]


@pytest.mark.usefixtures("triton_interpreted")
@pytest.mark.parametrize("backend,model_name,stage", CELLS)
def test_zoo_model_matches_jax_jit(backend, model_name, stage):
    fun, args = stage_of(_model(model_name), stage)
    assert_matches_jax_jit(fun, args, backend, f"{model_name} {stage}")
