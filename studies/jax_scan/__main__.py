"""How long does unrolling a 64-step scan cost? A tanh RNN (hidden 32, input 16, batch 4), its
loss and value_and_grad, through parity.jax.jit on each backend: trace + translate time, first
call (compile + run), steady call; jax.jit as the anchor. Run from the repository root: python -m studies.jax_scan [backend ...]"""

from __future__ import annotations

import statistics
import sys
import time

import jax
import jax.numpy as jnp
from jax import lax

import parity.jax
from parity.frontend.jax.compat import trace
from parity.frontend.jax.translate import jaxpr_to_ir

STEPS, HIDDEN, FEATURES, BATCH = 64, 32, 16, 4


def loss(params, xs):
    def step(h, x):
        h = jnp.tanh(x @ params["wx"] + h @ params["wh"] + params["b"])
        return h, h

    _, hs = lax.scan(step, jnp.zeros((BATCH, HIDDEN)), xs)
    return (hs ** 2).mean()


def timed(fun, *args):
    start = time.perf_counter()
    jax.block_until_ready(fun(*args))
    first = time.perf_counter() - start
    runs = []
    for _ in range(5):
        start = time.perf_counter()
        jax.block_until_ready(fun(*args))
        runs.append(time.perf_counter() - start)
    return first, statistics.median(runs)


def main(backends):
    k = jax.random.split(jax.random.key(0), 3)
    params = {"wx": 0.3 * jax.random.normal(k[0], (FEATURES, HIDDEN)),
              "wh": 0.3 * jax.random.normal(k[1], (HIDDEN, HIDDEN)), "b": jnp.zeros(HIDDEN)}
    xs = jax.random.normal(k[2], (STEPS, BATCH, FEATURES))
    for name, fun in (("forward", loss), ("value_and_grad", jax.value_and_grad(loss))):
        leaves, tree = jax.tree_util.tree_flatten((params, xs))
        start = time.perf_counter()
        graph = jaxpr_to_ir(trace(lambda *ls: fun(*jax.tree_util.tree_unflatten(tree, ls)), leaves), name)
        capture = time.perf_counter() - start
        print(f"{name}: trace + translate {capture:.2f} s, {len(graph.nodes)} IR nodes")
        first, steady = timed(jax.jit(fun), params, xs)
        print(f"  jax.jit: first call {first:.2f} s, steady {steady * 1e3:.2f} ms")
        for backend in backends:
            first, steady = timed(parity.jax.jit(fun, backend=backend), params, xs)
            print(f"  {backend}: first call {first:.2f} s, steady {steady * 1e3:.2f} ms")


if __name__ == "__main__":
    main(sys.argv[1:] or ["xla", "onnx"])
