"""Tiny IR graphs for the diff tests: each a few nodes, with one node of each fault class."""

import numpy as np

from parity.ir import GraphBuilder, f32, i32


def mixed():
    """x[4,8] → exp → transpose → dot with w → gather rows → tanh → reduce_sum; every fault
    class has a node to land on (exp: few_ulp, flushed_value; transpose, gather: wrong_index;
    dot_general, reduce_sum: dropped_term)."""
    b = GraphBuilder("mixed")
    x, w, idx = b.input(f32[4, 8]), b.input(f32[4, 3]), b.input(i32[2, 3])
    e = b.exp(x)
    t = b.op("transpose", e, permutation=[1, 0])
    d = b.op("dot_general", t, w, lhs_contracting_dims=[1], rhs_contracting_dims=[0], lhs_batch_dims=[],
             rhs_batch_dims=[])
    g = b.op("gather", d, idx, axis=0)
    h = b.tanh(g)
    s = b.op("reduce_sum", h, axes=[1])
    graph = b.build([s])
    rng = np.random.default_rng(0)
    arrays = [rng.uniform(-1, 1, (4, 8)).astype(np.float32), rng.uniform(-1, 1, (4, 3)).astype(np.float32),
              np.array([[1, 5, 2], [7, 0, 3]], np.int32)]
    return graph, arrays


def cancelling():
    """(x + 4096) - 4096, then ×1000: every node meets its contract, the result is far off the
    oracle (pure ill-conditioning of the computation, no backend fault)."""
    b = GraphBuilder("cancelling")
    x = b.input(f32[16])
    big = b.op("broadcast_in_dim", b.constant(np.float32(4096.0)), shape=[16], broadcast_dimensions=[])
    thousand = b.op("broadcast_in_dim", b.constant(np.float32(1000.0)), shape=[16], broadcast_dimensions=[])
    y = b.mul(b.sub(b.add(x, big), big), thousand)
    graph = b.build([b.exp(b.op("reduce_sum", y, axes=[0]))])
    return graph, [np.linspace(1e-3, 2e-3, 16).astype(np.float32)]


def chain(n: int, size: int):
    """n elementwise nodes on f32[size]: activations n·size·4 bytes, live set two tensors."""
    b = GraphBuilder("chain")
    v = b.input(f32[size])
    for k in range(n):
        v = b.tanh(v) if k % 2 else b.exp(b.neg(v)) if k % 3 == 0 else b.sin(v)
    return b.build([v]), [np.linspace(-1, 1, size).astype(np.float32)]
