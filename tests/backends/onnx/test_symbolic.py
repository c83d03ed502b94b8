"""Symbolic graphs on the onnx backend: sizes that are expressions of the dynamic ones
(N*2, N//3, N+3) are computed at run time, printed as dim_params, and one session serves
every size; a size the graph cannot take is parity's error, not ORT's."""

import numpy as np
import pytest

from parity.backends.onnx.lowering import to_model
from parity.backends.registry import get_backend
from parity.ir import GraphBuilder, ParityError, Symbol, evaluate, f32

N, M = Symbol("N"), Symbol("M")


def expressions():
    """x [N, M] -> (rows [N//3, 3], head [N//2, M], both [N+N//2, M], flat [N*M])."""
    b = GraphBuilder("expressions")
    x = b.input(f32[N, M])
    column = b.slice(x, start_indices=(0, 0), limit_indices=(N, 1), strides=(1, 1))
    rows = b.reshape(column, shape=(N // 3, 3))
    head = b.slice(x, start_indices=(0, 0), limit_indices=(N // 2, M), strides=(1, 1))
    both = b.concatenate(x, head, dimension=0)
    flat = b.reshape(b.exp(x), shape=(N * M,))
    return b.build([rows, head, both, flat])


def test_dim_params_are_the_expressions():
    model = to_model(expressions())
    dims = [[d.dim_param or d.dim_value for d in o.type.tensor_type.shape.dim] for o in model.graph.output]
    assert dims == [["N//3", 3], ["N//2", "M"], ["N+N//2", "M"], ["M*N"]]  # names in sorted order


@pytest.mark.parametrize("n, m", [(3, 1), (6, 5), (9, 2), (33, 7)])
def test_one_session_serves_every_size(n, m):
    g = expressions()
    run = get_backend("onnx").compile(g, "cpu")
    x = np.random.default_rng(n).standard_normal((n, m)).astype(np.float32)
    for got, want in zip(run(x), evaluate(g, [x])):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)


def test_a_size_the_graph_cannot_take_is_named():
    run = get_backend("onnx").compile(expressions(), "cpu")
    with pytest.raises(ParityError, match=r"@expressions: reshape: N must be divisible by 3, but N = 7"):
        run(np.zeros((7, 2), np.float32))
