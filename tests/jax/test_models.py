"""Forward, gradients and one optax step of each tiny model (tests/jax/models.py) through
parity.jax.jit on every backend, against jax.jit within the rule of tests/jax/compare.py."""

from __future__ import annotations

import pytest

from parity.conformance.jax_zoo.plain import MODELS, stage_of

from .compare import assert_matches_jax_jit

BACKENDS = ("reference", "xla", "onnx", "inductor", "triton")


@pytest.fixture
def triton_interpreted(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


# CI runs every stage of every model on xla and a cell of each other backend that covers its
# hardest part (the gradients; the optax step on inductor); the whole cross-product, all
# measured passing (inductor's CNN gradients take ~110 s to compile on 2 cores), runs with -m matrix.
CI_SUBSET = {("xla", m, s) for m in MODELS for s in ("forward", "gradients", "optax_step")}
CI_SUBSET |= {("onnx", m, "gradients") for m in MODELS} | {("reference", "mlp", "gradients")}
CI_SUBSET |= {("inductor", "mlp", "gradients"), ("inductor", "mlp", "optax_step"), ("triton", "mlp", "gradients"),
              ("triton", "transformer_lm", "gradients")}
CELLS = [pytest.param(b, m, s, marks=() if (b, m, s) in CI_SUBSET else pytest.mark.matrix)
         for b in BACKENDS for m in sorted(MODELS) for s in ("forward", "gradients", "optax_step")]


@pytest.mark.usefixtures("triton_interpreted")
@pytest.mark.parametrize("backend,model_name,stage", CELLS)
def test_matches_jax_jit(backend, model_name, stage):
    model = MODELS[model_name]()
    fun, args = stage_of(model, stage)
    assert_matches_jax_jit(fun, args, backend, f"{model_name} {stage}")
