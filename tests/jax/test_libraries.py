"""Programs written with Flax NNX, Flax Linen and Equinox through parity.jax.jit, against
jax.jit by the rule of tests/jax/compare.py. Each skips, saying why, where the library is absent."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

import parity.jax

from .compare import float64_run, mismatches


def _check(fun, args, backend):
    got = parity.jax.jit(fun, backend=backend)(*args)
    problems = mismatches(got, jax.jit(fun)(*args), float64_run(fun, *args))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("backend", ["xla", "onnx"])
def test_flax_nnx_mlp_with_layer_norm_gradients(backend):
    nnx = pytest.importorskip("flax.nnx", reason="Flax NNX is not installed (pip install 'parity[jax]')")

    class MLP(nnx.Module):
        def __init__(self, rngs):
            self.up = nnx.Linear(6, 16, rngs=rngs)
            self.norm = nnx.LayerNorm(16, rngs=rngs)
            self.down = nnx.Linear(16, 3, rngs=rngs)

        def __call__(self, x):
            return self.down(nnx.gelu(self.norm(self.up(x))))

    graphdef, state = nnx.split(MLP(nnx.Rngs(0)))

    def loss(state, x):
        return jnp.mean(nnx.merge(graphdef, state)(x) ** 2)

    _check(jax.value_and_grad(loss), (state, jax.random.normal(jax.random.key(1), (4, 6))), backend)


def test_flax_linen_cnn_gradients():
    nn = pytest.importorskip("flax.linen", reason="Flax Linen is not installed (pip install 'parity[jax]')")

    class CNN(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.relu(nn.Conv(4, (3, 3), strides=2)(x))
            x = nn.max_pool(x, (2, 2), strides=(2, 2))
            return nn.Dense(2)(x.reshape(x.shape[0], -1))

    x = jax.random.normal(jax.random.key(2), (2, 8, 8, 3))
    model = CNN()
    params = model.init(jax.random.key(3), x)

    def loss(params, x):
        return jnp.mean(model.apply(params, x) ** 2)

    _check(jax.value_and_grad(loss), (params, x), "xla")


def test_equinox_mlp_gradients():
    eqx = pytest.importorskip("equinox", reason="Equinox is not installed (pip install 'parity[jax]')")
    model = eqx.nn.MLP(5, 2, width_size=8, depth=2, key=jax.random.key(4))
    params, static = eqx.partition(model, eqx.is_array)

    def loss(params, x):
        return jnp.mean(jax.vmap(eqx.combine(params, static))(x) ** 2)

    _check(jax.value_and_grad(loss), (params, jax.random.normal(jax.random.key(5), (3, 5))), "xla")
