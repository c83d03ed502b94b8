"""Symbolic graphs end to end in the IR: constraints recorded and checked at bind time,
the text format with assumptions, and the reference interpreter at several sizes."""

import numpy as np
import pytest

from parity.ir import GraphBuilder, Symbol, TypeRuleError, evaluate, f32, f64, parse
from parity.ir.constraints import Constraint
from parity.ir.interpreter import InterpreterError
from parity.ir.shapes import ShapeBindings, ShapeError, graph_constraints

B, S, N, C = Symbol("B"), Symbol("S"), Symbol("N"), Symbol("C")
HEADS, DIM = 4, 8


def attention_graph():
    """Multi-head self-attention without weights: x [B,S,32] -> [B,S,32], sizes B*4, S."""
    b = GraphBuilder("attention")
    x = b.input(f64[B, S, HEADS * DIM])
    heads = b.transpose(b.reshape(x, shape=(B, S, HEADS, DIM)), permutation=(0, 2, 1, 3))
    q = b.reshape(heads, shape=(B * HEADS, S, DIM))
    scores = b.dot_general(q, q, lhs_contracting_dims=(2,), rhs_contracting_dims=(2,),
                           lhs_batch_dims=(0,), rhs_batch_dims=(0,))
    assert scores.type == f64[B * HEADS, S, S]
    top = b.reduce_max(scores, axes=(2,))
    shifted = b.sub(scores, b.broadcast_in_dim(top, shape=(B * HEADS, S, S), broadcast_dimensions=(0, 1)))
    weights = b.exp(shifted)
    total = b.reduce_sum(weights, axes=(2,))
    probs = b.div(weights, b.broadcast_in_dim(total, shape=(B * HEADS, S, S), broadcast_dimensions=(0, 1)))
    out = b.dot_general(probs, q, lhs_contracting_dims=(2,), rhs_contracting_dims=(1,),
                        lhs_batch_dims=(0,), rhs_batch_dims=(0,))
    merged = b.transpose(b.reshape(out, shape=(B, HEADS, S, DIM)), permutation=(0, 2, 1, 3))
    return b.build([b.reshape(merged, shape=(B, S, HEADS * DIM))])


def attention_numpy(x):
    batch, seq, _ = x.shape
    q = x.reshape(batch, seq, HEADS, DIM).transpose(0, 2, 1, 3)
    scores = q @ q.transpose(0, 1, 3, 2)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return (p @ q).transpose(0, 2, 1, 3).reshape(batch, seq, HEADS * DIM)


@pytest.mark.parametrize("batch, seq", [(1, 1), (2, 7), (7, 33), (33, 2)])
def test_the_interpreter_runs_one_symbolic_graph_at_every_size(batch, seq):
    g = attention_graph()
    assert graph_constraints(g) == []  # every size fits: nothing to check at run time
    x = np.random.default_rng(batch * 100 + seq).standard_normal((batch, seq, HEADS * DIM))
    (got,) = evaluate(g, [x])
    np.testing.assert_allclose(got, attention_numpy(x), rtol=1e-12, atol=1e-12)


def test_symbolic_graph_text_round_trips():
    g = attention_graph()
    assert "f64[B*4,S,S]" in str(g) and "shape=[B*4, S, 8]" in str(g)
    assert parse(str(g)) == g


def halves():
    """x [N] -> x[:N//2] and a reshape to [N//3, 3] (needs N divisible by 3)."""
    b = GraphBuilder("halves")
    x = b.input(f32[N])
    lo = b.slice(x, start_indices=(0,), limit_indices=(N // 2,), strides=(1,))
    return b.build([lo, b.reshape(x, shape=(N // 3, 3))])


def test_constraints_say_what_the_graph_relies_on():
    assert [str(c) for c in graph_constraints(halves())] == ["N must be divisible by 3 (reshape)"]
    b = GraphBuilder("g")
    x, y = b.input(f32[B, 6]), b.input(f32[C])
    b.reshape(x, shape=(C, 3))
    b.broadcast_in_dim(y, shape=(B, 4), broadcast_dimensions=(0,))
    b.concatenate(b.input(f32[B, 2]), b.input(f32[C, S]), dimension=0)
    b.pad(y, b.constant(0.0, f32), edge_padding_low=(-3,), edge_padding_high=(0,), interior_padding=(0,))
    g = b.build([x])
    assert [str(c) for c in graph_constraints(g)] == [
        "B*6 must equal C*3 (reshape)",
        "C must be 1 or B (broadcasting) (broadcast_in_dim)",
        "S must equal 2 (concatenate)",
        "C-3 must be >= 0 (pad)",
    ]


@pytest.mark.parametrize("n, message", [
    (7, "@halves: reshape: N must be divisible by 3, but N = 7"),
    (4, "@halves: reshape: N must be divisible by 3, but N = 4"),
])
def test_a_size_the_graph_cannot_take_is_an_error_not_a_wrong_result(n, message):
    with pytest.raises(InterpreterError) as info:
        evaluate(halves(), [np.zeros(n, np.float32)])
    assert str(info.value) == message
    with pytest.raises(ShapeError) as info:
        ShapeBindings().bind_inputs(halves(), [(n,)])
    assert str(info.value) == message


def test_sizes_that_fit_run():
    x = np.arange(6, dtype=np.float32)
    lo, rows = evaluate(halves(), [x])
    np.testing.assert_array_equal(lo, x[:3])
    np.testing.assert_array_equal(rows, x.reshape(2, 3))


def test_broadcast_and_equality_constraints_checked_with_values():
    b = GraphBuilder("g")
    y = b.input(f32[C])
    g = b.build([b.broadcast_in_dim(y, shape=(B, 4), broadcast_dimensions=(0,)), b.input(f32[B])])
    assert evaluate(g, [np.ones(1, np.float32), np.ones(3, np.float32)])[0].shape == (3, 4)
    with pytest.raises(InterpreterError, match=r"C must be 1 or B \(broadcasting\), but B = 3, C = 2"):
        evaluate(g, [np.ones(2, np.float32), np.ones(3, np.float32)])


def test_assumptions_print_parse_and_are_checked():
    b = GraphBuilder("g")
    x = b.input(f32[S, 2])
    b.assume(">=", S, 2, "model.py:3")
    b.assume("divisible", S, 8)
    b.assume("==", S * 2, C * 4)
    g = b.build([b.reshape(x, shape=(S * 2,)), b.input(f32[C])])
    text = str(g)
    assert '  assume S >= 2 "model.py:3"\n  assume divisible(S, 8)\n  assume S*2 == C*4\n' in text
    assert parse(text) == g and parse(text).assumptions == g.assumptions
    assert g.content_hash() != b.build([x]).content_hash()
    evaluate(g, [np.zeros((8, 2), np.float32), np.zeros(4, np.float32)])
    with pytest.raises(InterpreterError, match="model.py:3: S must be >= 2, but S = 1"):
        evaluate(g, [np.zeros((1, 2), np.float32), np.zeros(4, np.float32)])
    with pytest.raises(InterpreterError, match="S must be divisible by 8, but S = 4"):
        evaluate(g, [np.zeros((4, 2), np.float32), np.zeros(2, np.float32)])


def test_passes_keep_the_assumptions():
    from parity.ir.passes import PASSES, run_pipeline

    b = GraphBuilder("g")
    x = b.input(f32[S])
    b.assume("divisible", S, 8)
    g = b.build([b.add(b.exp(x), b.exp(x))])
    lowered, _ = run_pipeline(g, list(PASSES.values()))
    assert lowered.assumptions == g.assumptions and len(lowered.nodes) < len(g.nodes)


def test_an_equality_assumption_on_one_mod_is_a_divisibility():
    assert str(Constraint("==", N % 4, 0)) == "N must be divisible by 4"
    assert str(Constraint("==", (N // 4) * 4, N)) == "N must be divisible by 4"
    with pytest.raises(ValueError, match="constraint kind '<' is not one of"):
        Constraint("<", N, 3)


def test_input_dims_that_are_expressions_are_checked_or_solved():
    bindings = ShapeBindings()
    assert bindings.bind(f32[B * 4 + 1, 2], (13, 2), "x") == f32[13, 2]
    assert bindings.sizes == {"B": 3}
    bindings.bind(f32[B, B * S], (3, 12), "y")
    assert bindings.sizes == {"B": 3, "S": 4}
    with pytest.raises(ShapeError, match=r"z: dimension B\*2 is 7 here, but B = 3 makes it 6"):
        bindings.bind(f32[B * 2], (7,), "z")
    with pytest.raises(ShapeError, match=r"dimension C\*4 is 6 here; no size of C gives that"):
        ShapeBindings().bind(f32[C * 4], (6,), "w")
    b = GraphBuilder("g")
    g = b.build([b.input(f32[B * C])])
    with pytest.raises(ShapeError, match=r"input 0 of @g: dimension B\*C is 6 here, but no input gives B, C"):
        ShapeBindings().bind_inputs(g, [(6,)])


def test_resolving_expressions():
    bindings = ShapeBindings({"B": 3})
    assert bindings.resolve(f32[B * 4, S // 2]) == f32[12, S // 2]
    assert bindings.resolve_attrs({"shape": (B * 4, B // 2)}) == {"shape": (12, 1)}
    assert bindings.unbound(f32[B * S, C + S]) == ["S", "C"]
    with pytest.raises(ShapeError, match="dimension S has no size"):
        bindings.resolve_attr(B * S, strict=True)


@pytest.mark.parametrize("lhs, rhs, message", [
    (f32[B * 4, 2], f32[2, B * 3], "expected B*4, got B*3"),
    (f32[B, 2], f32[2, C], "expected B, got C"),
])
def test_dot_general_contraction_sizes_print_both_expressions(lhs, rhs, message):
    b = GraphBuilder()
    dims = dict(lhs_contracting_dims=(0,), rhs_contracting_dims=(1,), lhs_batch_dims=(), rhs_batch_dims=())
    with pytest.raises(TypeRuleError) as info:
        b.dot_general(b.input(lhs), b.input(rhs), **dims)
    assert message in str(info.value)
    assert b.dot_general(b.input(lhs), b.input(f32[2, lhs.shape[0]]), **dims).type == f32[2, 2]


def test_the_verifier_checks_expression_types():
    from parity.ir import Graph, Node, VerifyError, verify

    verify(attention_graph())
    b = GraphBuilder("g")
    x = b.input(f32[B * 4, S])
    wrong = Node("exp", [x], {}, [f32[B * 3, S]])
    with pytest.raises(VerifyError, match=r"result types \(f32\[B\*3,S\]\) differ from what the type rule infers "
                                          r"\(f32\[B\*4,S\]\)"):
        verify(Graph("g", [x], [wrong], wrong.outputs))
    flat = b.reshape(x, shape=(B * S * 4,))
    verify(b.build([flat]))
