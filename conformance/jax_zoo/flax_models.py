"""The JAX model zoo of issue 37 (tests/jax/test_zoo.py, ``parity bench --jax``): tiny Flax NNX and
Flax Linen models with random weights, each with a forward pass and a loss that return the model's new state (batch statistics, RNG counts).

- NNX ``cnn_bn_dropout``: convolutions, BatchNorm in train mode (statistics updated and
  returned), Dropout drawing its mask from the model's ``nnx.Rngs``, max- and average-pooling;
- NNX ``vit``: patch embedding, class token, position embedding, a pre-norm encoder block;
- NNX ``convnext``: a ConvNeXt block (patchify stem, depthwise convolution, LayerNorm, inverted
  MLP, layer scale), whose training needs a grouped convolution's weight gradient;
- NNX ``vae``: the reparameterisation draws normals from the model's ``nnx.Rngs`` (through
  ``erf_inv``), a Bernoulli decoder, the KL term;
- NNX ``lstm``: ``nnx.RNN`` over an ``nnx.LSTMCell`` (an ``nnx.scan``);
- Linen ``transformer``: a causal transformer LM with attention and residual Dropout, its
  dropout key passed to ``apply``.

Attention has no biases: the key projection's bias has an analytically zero gradient (softmax
ignores a constant added to every score), rounding noise that Adam's step turns into ±lr.

Dropout rates are NumPy float32 scalars and normals are drawn as float32: the float64 oracle
(tests/jax/compare.py) runs under x64, where a Python-float rate would draw a float64 uniform
from other bits, a different mask.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


@dataclass(frozen=True)
class ZooModel:
    """``forward(params, state, batch) -> (outputs, new_state)``;
    ``value_and_grad(params, state, batch) -> (loss, new_state, grads)``, the gradients those of
    the loss with respect to ``params``."""

    name: str
    forward: Callable
    value_and_grad: Callable
    params: Any
    state: Any
    batch: Any


def _nnx_model(nnx, name, module, batch, outputs_and_loss) -> ZooModel:
    """A ZooModel from an NNX module: ``outputs_and_loss(module, batch) -> (outputs, loss)``.
    The gradients are nnx.value_and_grad's, which lets the loss update the module's state
    (jax.value_and_grad of a function that merges and mutates a module is refused by Flax 0.12)."""
    graphdef, params, state = nnx.split(module, nnx.Param, ...)

    def forward(p, s, b):
        model = nnx.merge(graphdef, p, s)
        outputs, _ = outputs_and_loss(model, b)
        return outputs, nnx.split(model, nnx.Param, ...)[2]

    def value_and_grad(p, s, b):
        model = nnx.merge(graphdef, p, s)
        loss, grads = nnx.value_and_grad(lambda m: outputs_and_loss(m, b)[1])(model)
        return loss, nnx.split(model, nnx.Param, ...)[2], grads

    return ZooModel(name, forward, value_and_grad, params, state, batch)


def _cross_entropy(logits, labels):
    import optax

    return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()


def nnx_cnn_bn_dropout() -> ZooModel:
    from flax import nnx

    class CNN(nnx.Module):
        def __init__(self, rngs):
            self.conv1 = nnx.Conv(3, 6, (3, 3), rngs=rngs)
            self.bn = nnx.BatchNorm(6, momentum=0.9, rngs=rngs)  # train mode: batch statistics
            self.drop = nnx.Dropout(np.float32(0.25), rngs=rngs)
            self.conv2 = nnx.Conv(6, 8, (3, 3), strides=2, rngs=rngs)
            self.head = nnx.Linear(8 * 2 * 2, 5, rngs=rngs)

        def __call__(self, x):
            x = nnx.max_pool(nnx.relu(self.bn(self.conv1(x))), (2, 2), (1, 1), "SAME")
            x = nnx.avg_pool(nnx.relu(self.conv2(self.drop(x))), (2, 2), (2, 2))
            return self.head(x.reshape(x.shape[0], -1))

    batch = {"x": jax.random.normal(jax.random.key(10), (3, 8, 8, 3)), "y": jnp.array([1, 4, 0])}

    def outputs_and_loss(model, b):
        logits = model(b["x"])
        return logits, _cross_entropy(logits, b["y"])

    return _nnx_model(nnx, "nnx_cnn_bn_dropout", CNN(nnx.Rngs(0, dropout=1)), batch, outputs_and_loss)


def nnx_vit(image=8, patch=4, dim=16, heads=2, classes=5) -> ZooModel:
    from flax import nnx

    class ViT(nnx.Module):
        def __init__(self, rngs):
            self.patches = nnx.Conv(3, dim, (patch, patch), strides=patch, padding="VALID", rngs=rngs)
            n = (image // patch) ** 2
            self.cls = nnx.Param(0.02 * jax.random.normal(rngs.params(), (1, 1, dim)))
            self.pos = nnx.Param(0.02 * jax.random.normal(rngs.params(), (1, n + 1, dim)))
            self.ln1, self.ln2, self.ln_out = (nnx.LayerNorm(dim, rngs=rngs) for _ in range(3))
            self.attn = nnx.MultiHeadAttention(num_heads=heads, in_features=dim, decode=False, use_bias=False,
                                               rngs=rngs)
            self.up, self.down = nnx.Linear(dim, 2 * dim, rngs=rngs), nnx.Linear(2 * dim, dim, rngs=rngs)
            self.head = nnx.Linear(dim, classes, rngs=rngs)

        def __call__(self, images):
            x = self.patches(images)
            x = x.reshape(x.shape[0], -1, x.shape[-1])
            cls = jnp.broadcast_to(self.cls[...], (x.shape[0], 1, x.shape[-1]))
            x = jnp.concatenate([cls, x], axis=1) + self.pos[...]
            x = x + self.attn(self.ln1(x))
            x = x + self.down(nnx.gelu(self.up(self.ln2(x))))
            return self.head(self.ln_out(x[:, 0]))

    batch = {"x": jax.random.normal(jax.random.key(11), (2, image, image, 3)), "y": jnp.array([3, 1])}

    def outputs_and_loss(model, b):
        logits = model(b["x"])
        return logits, _cross_entropy(logits, b["y"])

    return _nnx_model(nnx, "nnx_vit", ViT(nnx.Rngs(0)), batch, outputs_and_loss)


def nnx_convnext(image=8, dim=8, classes=5) -> ZooModel:
    """A ConvNeXt stage: patchify stem, then a block of a depthwise 3×3 convolution (its weight
    gradient is a convolution with ``batch_group_count``), LayerNorm, an inverted MLP and a
    layer-scaled residual; global average pooling and a head."""
    from flax import nnx

    class ConvNeXt(nnx.Module):
        def __init__(self, rngs):
            self.stem = nnx.Conv(3, dim, (2, 2), strides=2, padding="VALID", rngs=rngs)
            self.depthwise = nnx.Conv(dim, dim, (3, 3), feature_group_count=dim, rngs=rngs)
            self.norm, self.norm_out = nnx.LayerNorm(dim, rngs=rngs), nnx.LayerNorm(dim, rngs=rngs)
            self.up, self.down = nnx.Linear(dim, 4 * dim, rngs=rngs), nnx.Linear(4 * dim, dim, rngs=rngs)
            self.scale = nnx.Param(jnp.full((dim,), 0.5))
            self.head = nnx.Linear(dim, classes, rngs=rngs)

        def __call__(self, images):
            x = self.stem(images)
            x = x + self.scale[...] * self.down(nnx.gelu(self.up(self.norm(self.depthwise(x)))))
            return self.head(self.norm_out(x.mean(axis=(1, 2))))

    batch = {"x": jax.random.normal(jax.random.key(13), (2, image, image, 3)), "y": jnp.array([4, 0])}

    def outputs_and_loss(model, b):
        logits = model(b["x"])
        return logits, _cross_entropy(logits, b["y"])

    return _nnx_model(nnx, "nnx_convnext", ConvNeXt(nnx.Rngs(0)), batch, outputs_and_loss)


def nnx_vae(features=12, hidden=16, latent=4) -> ZooModel:
    from flax import nnx

    class VAE(nnx.Module):
        def __init__(self, rngs):
            self.enc = nnx.Linear(features, hidden, rngs=rngs)
            self.mean, self.log_var = nnx.Linear(hidden, latent, rngs=rngs), nnx.Linear(hidden, latent, rngs=rngs)
            self.dec1, self.dec2 = nnx.Linear(latent, hidden, rngs=rngs), nnx.Linear(hidden, features, rngs=rngs)
            self.rngs = nnx.Rngs(noise=2)

        def __call__(self, x):
            h = nnx.relu(self.enc(x))
            mean, log_var = self.mean(h), self.log_var(h)
            eps = jax.random.normal(self.rngs.noise(), mean.shape, jnp.float32)  # the reparameterisation
            z = mean + jnp.exp(0.5 * log_var) * eps
            return self.dec2(nnx.relu(self.dec1(z))), mean, log_var

    batch = {"x": (jax.random.uniform(jax.random.key(12), (3, features)) > 0.5).astype(jnp.float32)}

    def outputs_and_loss(model, b):
        import optax

        logits, mean, log_var = model(b["x"])
        reconstruction = optax.sigmoid_binary_cross_entropy(logits, b["x"]).sum(-1)
        kl = -0.5 * jnp.sum(1 + log_var - mean**2 - jnp.exp(log_var), axis=-1)
        return (logits, mean, log_var), jnp.mean(reconstruction + kl)

    return _nnx_model(nnx, "nnx_vae", VAE(nnx.Rngs(0)), batch, outputs_and_loss)


def nnx_lstm(features=3, hidden=8, steps=5) -> ZooModel:
    from flax import nnx

    class Sequence(nnx.Module):
        def __init__(self, rngs):
            self.rnn = nnx.RNN(nnx.LSTMCell(features, hidden, rngs=rngs))  # an nnx.scan over the steps
            self.head = nnx.Linear(hidden, 1, rngs=rngs)

        def __call__(self, x, carry):
            return self.head(self.rnn(x, initial_carry=carry))[..., 0]

    k = jax.random.split(jax.random.key(13))
    batch = {"x": jax.random.normal(k[0], (2, steps, features)), "y": jax.random.normal(k[1], (2, steps)),
             "carry": (jnp.zeros((2, hidden)), jnp.zeros((2, hidden)))}  # an input: float64 in the oracle run

    def outputs_and_loss(model, b):
        predictions = model(b["x"], b["carry"])
        return predictions, jnp.mean((predictions - b["y"]) ** 2)

    return _nnx_model(nnx, "nnx_lstm", Sequence(nnx.Rngs(0)), batch, outputs_and_loss)


def linen_transformer(vocab=13, seq=6, dim=16, heads=2) -> ZooModel:
    import flax.linen as nn

    class Block(nn.Module):
        @nn.compact
        def __call__(self, x, mask):
            attention = nn.MultiHeadDotProductAttention(num_heads=heads, deterministic=True, use_bias=False)
            x = x + nn.Dropout(np.float32(0.1), deterministic=False)(attention(nn.LayerNorm()(x), mask=mask))
            h = nn.Dense(dim)(nn.gelu(nn.Dense(2 * dim)(nn.LayerNorm()(x))))
            return x + nn.Dropout(np.float32(0.1), deterministic=False)(h)

    class LM(nn.Module):
        @nn.compact
        def __call__(self, tokens):
            embed = nn.Embed(vocab, dim)
            x = embed(tokens) + self.param("pos", nn.initializers.normal(0.02), (seq, dim))
            x = Block()(x, nn.make_causal_mask(tokens))
            return embed.attend(nn.LayerNorm()(x))

    tokens = jax.random.randint(jax.random.key(14), (2, seq + 1), 0, vocab)
    batch = {"tokens": tokens[:, :-1], "targets": tokens[:, 1:], "dropout": jax.random.key(15)}
    model = LM()
    params = model.init({"params": jax.random.key(16), "dropout": jax.random.key(17)}, batch["tokens"])

    def forward(p, s, b):
        return model.apply(p, b["tokens"], rngs={"dropout": b["dropout"]}), s

    def loss(p, b):
        return _cross_entropy(model.apply(p, b["tokens"], rngs={"dropout": b["dropout"]}), b["targets"])

    def value_and_grad(p, s, b):
        value, grads = jax.value_and_grad(loss)(p, b)
        return value, s, grads

    return ZooModel("linen_transformer", forward, value_and_grad, params, {}, batch)


ZOO = {make.__name__: make for make in (nnx_cnn_bn_dropout, nnx_vit, nnx_convnext, nnx_vae, nnx_lstm,
                                        linen_transformer)}


def stage_of(model: ZooModel, stage: str) -> tuple[Callable, tuple]:
    """The function and arguments of one stage: forward, value_and_grad, an optax AdamW step."""
    if stage == "forward":
        return model.forward, (model.params, model.state, model.batch)
    if stage == "gradients":
        return model.value_and_grad, (model.params, model.state, model.batch)
    import optax  # the extra parity[jax]

    optimizer = optax.adamw(1e-2)

    def step(params, opt_state, state, batch):
        loss, state, grads = model.value_and_grad(params, state, batch)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, state, loss

    return step, (model.params, optimizer.init(model.params), model.state, model.batch)
