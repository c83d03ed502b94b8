"""Symbolic graphs on the xla backend: one executable per concrete shape, compiled on the
first call with that shape and cached (XLA compiles static shapes only; the graph is
captured once), and sizes the graph cannot take are an error before compiling."""

import numpy as np
import pytest

from parity.backends.xla.backend import XlaBackend
from parity.ir import GraphBuilder, ParityError, Symbol, evaluate, f32

N, M = Symbol("N"), Symbol("M")


def expressions():
    """x [N, M] -> (pairs [N//2, 2], padded and flattened [M*N+M*2-2])."""
    b = GraphBuilder("expressions")
    x = b.input(f32[N, M])
    column = b.slice(x, start_indices=(0, 0), limit_indices=(N, 1), strides=(1, 1))
    pairs = b.reshape(column, shape=(N // 2, 2))
    padded = b.pad(x, b.constant(0.5, f32), edge_padding_low=(1, 0), edge_padding_high=(1, -1),
                   interior_padding=(0, 0))
    flat = b.reshape(b.transpose(padded, permutation=(1, 0)), shape=((N + 2) * (M - 1),))
    return b.build([pairs, flat])


def test_one_compile_per_new_shape_and_none_for_a_shape_seen_before():
    backend = XlaBackend()
    g = expressions()
    run = backend.compile(g, "cpu")
    assert backend.compile_count == 0  # symbolic: nothing to compile before a call
    shapes = [(2, 1), (6, 5), (2, 1), (32, 7), (6, 5), (32, 7)]
    counts = []
    for n, m in shapes:
        x = np.random.default_rng(n).standard_normal((n, m)).astype(np.float32)
        for got, want in zip(run(x), evaluate(g, [x])):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)
        counts.append(backend.compile_count)
    assert counts == [1, 2, 2, 3, 3, 3]


def test_a_size_the_graph_cannot_take_is_named_before_compiling():
    backend = XlaBackend()
    run = backend.compile(expressions(), "cpu")
    with pytest.raises(ParityError, match=r"@expressions: reshape: N must be divisible by 2, but N = 7"):
        run(np.zeros((7, 2), np.float32))
    assert backend.compile_count == 0
