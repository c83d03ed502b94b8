"""Tiny models in plain jax.numpy for the JAX frontend's tests and ``parity bench --jax``: an MLP,
a CNN (convolutions, max- and average-pooling) and a causal transformer LM (embedding lookup, attention, layer
norm, GELU), each with a loss, its inputs and an optax step. Random weights, tiny shapes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import jax
import jax.numpy as jnp
from jax import lax


@dataclass(frozen=True)
class Model:
    name: str
    loss: Callable  # loss(params, batch) -> scalar
    forward: Callable  # forward(params, batch) -> outputs
    params: Any
    batch: Any


def _normal(key, shape, scale=0.5):
    return scale * jax.random.normal(key, shape, jnp.float32)


def mlp() -> Model:
    k = jax.random.split(jax.random.key(0), 6)
    params = {"w1": _normal(k[0], (6, 16)), "b1": _normal(k[1], (16,)), "w2": _normal(k[2], (16, 4)),
              "b2": _normal(k[3], (4,))}
    batch = {"x": _normal(k[4], (5, 6), 1.0), "y": jax.nn.one_hot(jnp.arange(5) % 4, 4)}

    def forward(p, b):
        h = jax.nn.relu(b["x"] @ p["w1"] + p["b1"])
        return jnp.tanh(h) @ p["w2"] + p["b2"]

    def loss(p, b):
        return -(jax.nn.log_softmax(forward(p, b)) * b["y"]).sum(-1).mean()

    return Model("mlp", loss, forward, params, batch)


def cnn() -> Model:
    k = jax.random.split(jax.random.key(1), 5)
    params = {"c1": _normal(k[0], (3, 3, 2, 4)), "c2": _normal(k[1], (3, 3, 4, 4)), "w": _normal(k[2], (16, 3))}
    batch = {"x": _normal(k[3], (2, 8, 8, 2), 1.0), "y": jax.nn.one_hot(jnp.array([0, 2]), 3)}

    def conv(x, w, stride):
        return lax.conv_general_dilated(x, w, (stride, stride), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def forward(p, b):
        h = jax.nn.relu(conv(b["x"], p["c1"], 1))
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")  # overlapping max-pool
        h = jax.nn.silu(conv(h, p["c2"], 2))
        h = lax.reduce_window(h, 0.0, lax.add, (1, 1, 1, 1), (1, 1, 1, 1), "VALID")
        return h.reshape(h.shape[0], -1) @ p["w"]

    def loss(p, b):
        return -(jax.nn.log_softmax(forward(p, b)) * b["y"]).sum(-1).mean()

    return Model("cnn", loss, forward, params, batch)


def transformer_lm(vocab=11, seq=6, dim=8, heads=2) -> Model:
    k = jax.random.split(jax.random.key(2), 8)
    params = {"embed": _normal(k[0], (vocab, dim)), "pos": _normal(k[1], (seq, dim)),
              "qkv": _normal(k[2], (dim, 3 * dim)), "out": _normal(k[3], (dim, dim)),
              "up": _normal(k[4], (dim, 4 * dim)), "down": _normal(k[5], (4 * dim, dim)),
              "ln_g": jnp.ones(dim), "ln_b": jnp.zeros(dim)}
    tokens = jax.random.randint(k[6], (2, seq + 1), 0, vocab)
    batch = {"tokens": tokens[:, :-1], "targets": jax.nn.one_hot(tokens[:, 1:], vocab)}

    def layer_norm(x, p):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) * lax.rsqrt(var + 1e-5) * p["ln_g"] + p["ln_b"]

    def forward(p, b):
        x = p["embed"][b["tokens"]] + p["pos"]  # gather; its gradient is a scatter-add
        batch_size = x.shape[0]
        q, kk, v = jnp.split(layer_norm(x, p) @ p["qkv"], 3, axis=-1)
        split = lambda t: t.reshape(batch_size, seq, heads, dim // heads).transpose(0, 2, 1, 3)  # noqa: E731
        scores = jnp.einsum("bhqd,bhkd->bhqk", split(q), split(kk)) / jnp.sqrt(dim // heads)
        causal = jnp.tril(jnp.ones((seq, seq), bool))
        attn = jax.nn.softmax(jnp.where(causal, scores, -1e9), axis=-1)
        mixed = jnp.einsum("bhqk,bhkd->bhqd", attn, split(v)).transpose(0, 2, 1, 3).reshape(batch_size, seq, dim)
        x = x + mixed @ p["out"]
        x = x + jax.nn.gelu(layer_norm(x, p) @ p["up"]) @ p["down"]
        return x @ p["embed"].T

    def loss(p, b):
        return -(jax.nn.log_softmax(forward(p, b)) * b["targets"]).sum(-1).mean()

    return Model("transformer_lm", loss, forward, params, batch)


MODELS = {"mlp": mlp, "cnn": cnn, "transformer_lm": transformer_lm}

STAGES = ("forward", "gradients", "optax_step")


def stage_of(model: Model, stage: str) -> tuple[Callable, tuple]:
    """The function and arguments of one stage: forward, value_and_grad of the loss, an optax step."""
    if stage == "forward":
        return model.forward, (model.params, model.batch)
    if stage == "gradients":
        return jax.value_and_grad(model.loss), (model.params, model.batch)
    import optax  # the extra parity[jax]
    optimizer = optax.adam(1e-2)

    def step(params, opt_state, batch):
        loss, grads = jax.value_and_grad(model.loss)(params, batch)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return step, (model.params, optimizer.init(model.params), model.batch)
