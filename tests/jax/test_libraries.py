"""Programs written with Flax NNX, Flax Linen and Equinox through parity.jax.jit, against
jax.jit by the rule of tests/jax/compare.py. Each skips, saying why, where the library is absent."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from .compare import assert_matches_jax_jit


def _check(fun, args, backend):
    assert_matches_jax_jit(fun, args, backend, getattr(fun, "__name__", "the program"))


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


def _nnx_cnn(nnx):
    class CNN(nnx.Module):
        def __init__(self, rngs):
            self.conv1 = nnx.Conv(3, 8, (3, 3), rngs=rngs)
            self.bn = nnx.BatchNorm(8, use_running_average=True, rngs=rngs)  # eval-mode statistics
            self.conv2 = nnx.Conv(8, 8, (3, 3), strides=2, rngs=rngs)
            self.head = nnx.Linear(8 * 2 * 2, 10, rngs=rngs)

        def __call__(self, x):
            x = nnx.max_pool(nnx.relu(self.bn(self.conv1(x))), (2, 2), (1, 1), "SAME")
            x = nnx.avg_pool(nnx.relu(self.conv2(x)), (2, 2), (2, 2))
            return self.head(x.reshape(x.shape[0], -1))

    model = CNN(nnx.Rngs(0))
    model.bn.mean[...] = 0.1 * jnp.arange(8.0)  # statistics other than the initial 0 and 1
    model.bn.var[...] = 0.5 + 0.25 * jnp.arange(8.0)
    return model, jax.random.normal(jax.random.key(6), (2, 8, 8, 3)), jnp.array([1, 7])


def _nnx_transformer(nnx):
    class Block(nnx.Module):
        def __init__(self, rngs, dim=16, vocab=32):
            self.embed = nnx.Embed(vocab, dim, rngs=rngs)
            self.ln1, self.ln2 = nnx.LayerNorm(dim, rngs=rngs), nnx.LayerNorm(dim, rngs=rngs)
            self.attn = nnx.MultiHeadAttention(num_heads=2, in_features=dim, decode=False, rngs=rngs)
            self.mlp = nnx.Linear(dim, dim, rngs=rngs)

        def __call__(self, tokens):
            x = self.embed(tokens)
            x = x + self.attn(self.ln1(x), mask=nnx.make_causal_mask(tokens))
            x = x + self.mlp(nnx.gelu(self.ln2(x)))
            return self.embed.attend(x)

    tokens = jax.random.randint(jax.random.key(7), (2, 7), 0, 32)
    return Block(nnx.Rngs(0)), tokens[:, :-1], tokens[:, 1:]


@pytest.mark.parametrize("make", [_nnx_cnn, _nnx_transformer], ids=["cnn", "transformer"])
def test_a_flax_nnx_adamw_training_step_translates_whole_and_matches_jax_jit(make):
    """Every primitive of a Flax NNX training step (integer-label cross-entropy, AdamW) has a rule,
    and the step matches jax.jit."""
    nnx = pytest.importorskip("flax.nnx", reason="Flax NNX is not installed (pip install 'parity[jax]')")
    optax = pytest.importorskip("optax", reason="optax is not installed (pip install 'parity[jax]')")
    from parity.frontend.jax.compat import primitives_used, trace
    from parity.frontend.jax.rules import translated_primitives

    model, x, y = make(nnx)
    graphdef, params, rest = nnx.split(model, nnx.Param, ...)
    tx = optax.adamw(1e-2)

    def step(params, opt_state, x, y):
        def loss(p):
            logits = nnx.merge(graphdef, p, rest)(x)
            return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

        value, grads = jax.value_and_grad(loss)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, value

    args = (params, tx.init(params), x, y)
    leaves, tree = jax.tree_util.tree_flatten(args)
    used = primitives_used(trace(lambda *ls: step(*jax.tree_util.tree_unflatten(tree, ls)), leaves).body)
    assert len(used) >= 30 and used <= set(translated_primitives()), sorted(used - set(translated_primitives()))
    _check(step, args, "xla")
