"""Symbolic graphs on the onnx backend: sizes that are expressions of the dynamic ones
(N*2, N//3, N+3) are computed at run time, printed as dim_params, and one session serves
every size; a size the graph cannot take is parity's error, not ORT's."""

import numpy as np
import pytest

from parity.backends.onnx.lowering import to_model
from parity.backends.registry import get_backend
from parity.ir import DType, GraphBuilder, ParityError, Symbol, TensorType, evaluate, f32

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


def test_sizes_met_before_give_their_own_shapes_and_a_bad_size_stays_an_error():
    # output shapes are remembered per input shapes (a decode loop meets each once per token)
    g = expressions()
    run = get_backend("onnx").compile(g, "cpu")
    for n, m in [(6, 5), (3, 1), (6, 5), (9, 2), (3, 1)]:
        x = np.random.default_rng(n * m).standard_normal((n, m)).astype(np.float32)
        assert [o.shape for o in run(x)] == [o.shape for o in evaluate(g, [x])]
        for _ in range(2):
            with pytest.raises(ParityError, match=r"N must be divisible by 3, but N = 7"):
                run(np.zeros((7, m), np.float32))


def _odd_positions():
    """An input whose only dim is an expression, B*2 + 1: B is read by solving it."""
    B = Symbol("B")
    b = GraphBuilder("odd")
    x = b.input(f32[B * 2 + 1])
    return b.build([b.reshape(b.slice(x, start_indices=(1,), limit_indices=(B * 2 + 1,), strides=(2,)),
                              shape=(B, 1))])


@pytest.mark.parametrize("backend", ["onnx", "xla", "triton", "reference"])
def test_a_symbol_that_appears_only_in_a_linear_input_dim_is_solved(backend):
    executable = get_backend(backend).compile(_odd_positions())
    for n in (3, 7, 11):
        x = np.arange(n, dtype=np.float32)
        (got,) = executable(x)
        np.testing.assert_array_equal(got, x[1::2].reshape(-1, 1))
        np.testing.assert_array_equal(got, evaluate(_odd_positions(), [x])[0])


def test_a_symbol_no_input_dim_gives_is_refused_by_name():
    B = Symbol("B")
    b = GraphBuilder("square")
    x = b.input(f32[B * B])
    graph = b.build([b.reshape(x, shape=(B, B))])
    with pytest.raises(ParityError, match=r"cannot read the size of B: no graph input has a dim that is B or linear"):
        get_backend("onnx").compile(graph)


def test_a_size_read_inside_a_branch_is_read_again_outside():
    """Emitter.if_: a symbol's Shape node emitted inside a branch exists only there, so the
    outer graph reads the symbol again (it would otherwise name a value it cannot see)."""
    import onnx

    from parity.backends.onnx.emitter import Emitter, value_info

    em = Emitter()
    x = em.input("x", f32[Symbol("B"), 2])
    cond = em.op("IsNaN", em.op("ReduceSum", x, keepdims=0))
    picked = em.if_(cond, lambda: em.op("Reshape", x, em.shape([Symbol("B"), 2])), lambda: x, f32[Symbol("B"), 2])
    out = em.op("Reshape", picked, em.shape([Symbol("B"), 2]))
    em.nodes.append(onnx.helper.make_node("Identity", [out], ["y"]))
    graph = onnx.helper.make_graph(em.nodes, "g", em.inputs, [value_info("y", f32[Symbol("B"), 2])],
                                   initializer=em.initializers)
    onnx.checker.check_model(onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 28)]),
                             full_check=True)
    assert [n.op_type for n in em.nodes].count("Shape") == 1  # the outer one; the branch has its own


def pooled(kind, dtype):
    """x [N, 5, 6] -> windows 2x3 over the last two dims, padded, strided: N only passes through."""
    b = GraphBuilder("pooled")
    x = b.input(TensorType(dtype, (N, 5, 6)))
    return b.build([b.reduce_window(x, kind=kind, window_dimensions=(1, 2, 3), window_strides=(1, 2, 1),
                                    window_dilations=(1, 1, 2), padding=((0, 0), (1, 0), (0, 2)))])


@pytest.mark.parametrize("kind, dtype", [("max", DType.float32), ("sum", DType.float32), ("sum", DType.int32),
                                         ("max", DType.int8)])
def test_windows_over_static_dims_serve_every_size_of_a_symbolic_batch(kind, dtype):
    g = pooled(kind, dtype)
    run = get_backend("onnx").compile(g, "cpu")
    for n in (1, 4, 3):
        x = np.round(np.random.default_rng(n).standard_normal((n, 5, 6)) * 50).astype(dtype.numpy)
        if dtype.is_float:
            x[0, 1, 2] = np.nan  # propagates to the windows holding it (ORT's ReduceMax alone skips NaN)
        (got,), (want,) = run(x), evaluate(g, [x])
        np.testing.assert_array_equal(got, want)  # max is exact, and so are sums of whole numbers
        assert got.shape == (n, 3, 4)



S = Symbol("S")


def repeat_heads():
    """A grouped-query attention's repeat_kv on a cache of symbolic length S: x [1, 2, S, 8]
    -> [1, 2, 1, S, 8] -> broadcast [1, 2, 2, S, 8] -> [1, 4, S, 8], and back down to [2, S, 8]."""
    b = GraphBuilder("repeat_heads")
    x = b.input(f32[1, 2, S, 8])
    one = b.reshape(x, shape=(1, 2, 1, S, 8))
    wide = b.broadcast_in_dim(one, shape=(1, 2, 2, S, 8), broadcast_dimensions=(0, 1, 2, 3, 4))
    heads = b.reshape(wide, shape=(1, 4, S, 8))
    return b.build([heads, b.reshape(b.exp(x), shape=(2, S, 8)), b.reshape(b.exp(x), shape=(2, S * 8))])


@pytest.mark.parametrize("s", [0, 1, 5])
def test_reshapes_and_broadcasts_of_a_symbolic_size_read_no_shapes_at_run_time(s):
    g = repeat_heads()
    ops = [n.op_type for n in to_model(g).graph.node]
    # inserting or dropping 1s, one inferable symbolic size, and an Expand over dims x already has
    assert "Shape" not in ops and "Concat" not in ops, ops
    assert {"Unsqueeze", "Squeeze"} <= set(ops), ops
    x = np.random.default_rng(s).standard_normal((1, 2, s, 8)).astype(np.float32)
    heads, *flats = get_backend("onnx").compile(g, "cpu")(x)
    want_heads, *want_flats = evaluate(g, [x])
    assert heads.shape == want_heads.shape and heads.tobytes() == want_heads.tobytes()
    for got, want in zip(flats, want_flats):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)


def test_a_reshape_of_an_unsqueeze_is_one_reshape():
    b = GraphBuilder("chain")
    x = b.input(f32[S, 8])
    y = b.reshape(b.reshape(x, shape=(S, 1, 8)), shape=(S * 8,))
    g = b.build([b.exp(y)])
    ops = [n.op_type for n in to_model(g).graph.node]
    assert ops == ["Reshape", "Exp"], ops
    x = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
    np.testing.assert_allclose(get_backend("onnx").compile(g, "cpu")(x)[0], evaluate(g, [x])[0], rtol=1e-6, atol=0)
