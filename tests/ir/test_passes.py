"""Graph passes: each changes what it should, reports `changed` honestly, keeps results, and verifies."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parity.ir import (
    OP_TABLE,
    DType,
    Graph,
    GraphBuilder,
    Group,
    Kind,
    OpDef,
    ParityError,
    SourceLoc,
    VerifyError,
    evaluate,
    f32,
    i32,
    u32,
    verify,
)
from parity.ir.opdef import Accuracy
from parity.ir.passes import PASSES, DecompositionError, cse, dce, decompose, fold_constants, run_pipeline

LOC = SourceLoc("model.py", 42, "forward")


# -- test-only ops: two results, a random draw, and composites (sound and broken) ---------------

def _same(types, attrs):
    return (types[0],)


def _composite(name, decompose_fn, groups=frozenset()):
    return OpDef(name=name, kind=Kind.COMPOSITE, operands=("x",), infer=_same, dtypes=(DType.float32,),
                 accuracy=Accuracy.COMPOSITE, decompose=decompose_fn, groups=groups)


TEST_OPS = (
    OpDef(name="test_floor_ceil", kind=Kind.PRIMITIVE, operands=("x",), infer=lambda t, a: (t[0], t[0]),
          dtypes=(DType.float32,), accuracy=Accuracy.EXACT, num_results=2,
          reference=lambda ctx, x: (np.floor(x), np.ceil(x))),
    OpDef(name="test_draw", kind=Kind.PRIMITIVE, operands=("x",), infer=_same, dtypes=(DType.float32,),
          accuracy=Accuracy.EXACT, groups=frozenset({Group.RANDOM}), reference=lambda ctx, x: x),
    # softplus = log1p(exp(x)); outer = tanh(softplus(x)): a composite built from a composite.
    _composite("test_softplus", lambda b, attrs, x: b.log1p(b.exp(x))),
    _composite("test_outer", lambda b, attrs, x: b.tanh(b.test_softplus(x))),
    _composite("test_loop", lambda b, attrs, x: b.test_loop(x)),
    _composite("test_wrong_type", lambda b, attrs, x: b.constant(np.zeros(3, np.float64))),
    _composite("test_foreign", lambda b, attrs, x: b.exp(GraphBuilder().input(f32[4]))),
    _composite("test_stray", lambda b, attrs, x: GraphBuilder().input(f32[4])),
)


@pytest.fixture(autouse=True)
def test_ops(monkeypatch):
    for opdef in TEST_OPS:
        monkeypatch.setitem(OP_TABLE, opdef.name, opdef)


def apply(p, graph: Graph, expect_changed: bool) -> Graph:
    """Run one pass; check `changed`, verify the result, and check the input was not mutated."""
    before = graph.to_text()
    new, changed = p(graph)
    assert changed is expect_changed
    assert graph.to_text() == before
    if not changed:
        assert new is graph
    verify(new)
    return new


def same_results(a: Graph, b: Graph, inputs) -> None:
    """Both graphs give bit-identical outputs (NaN payloads and -0.0 included)."""
    for x, y in zip(evaluate(a, inputs), evaluate(b, inputs), strict=True):
        assert (x.dtype, x.shape, x.tobytes()) == (y.dtype, y.shape, y.tobytes())


X4 = [np.array([-np.inf, -0.0, 0.5, np.nan], np.float32)]


# -- dce ----------------------------------------------------------------------------------------

def test_dce_removes_unused_chains_and_keeps_inputs():
    b = GraphBuilder("g")
    x = b.input(f32[4])
    b.input(i32[2])  # an input nothing reads: dce keeps it
    dead = b.log1p(b.exp(x))
    b.constant(np.ones(3, np.float32))
    with b.location(LOC):
        y = b.tanh(x)
    b.exp(dead)
    g = b.build([y])
    out = apply(dce, g, True)
    assert out.op_counts() == {"tanh": 1}
    assert out.input_types == [f32[4], i32[2]]
    assert out.nodes[0].loc == LOC
    same_results(g, out, X4 + [np.zeros(2, np.int32)])
    apply(dce, out, False)


def test_dce_keeps_multi_result_node_when_one_result_is_used():
    b = GraphBuilder()
    x = b.input(f32[4])
    lo, hi = b.test_floor_ceil(x)
    g = b.build([hi])
    assert apply(dce, g, False) is g


# -- cse ----------------------------------------------------------------------------------------

def test_cse_merges_repeats_and_then_their_users_in_one_run():
    b = GraphBuilder()
    x = b.input(f32[4])
    t1, t2 = b.tanh(x), b.tanh(x)
    y = b.add(b.exp(t1), b.exp(t2))
    g = b.build([y, t2])
    out = apply(cse, g, True)
    assert out.op_counts() == {"tanh": 1, "exp": 1, "add": 1}
    assert out.nodes[2].inputs == (out.nodes[1].outputs[0], out.nodes[1].outputs[0])
    assert out.outputs[1] is out.nodes[0].outputs[0]
    same_results(g, out, X4)
    apply(cse, out, False)


@pytest.mark.parametrize(
    "first, second, merged",
    [
        (np.array([0.0], np.float32), np.array([-0.0], np.float32), False),  # == but different bits
        (np.array([np.nan], np.float32), np.array([np.nan], np.float32), True),  # != but identical
        (np.array([1.0], np.float32), np.array([1.0], np.float16), False),
        (np.array([1, 2], np.int32), np.array([[1, 2]], np.int32), False),
        (np.arange(40, dtype=np.int32), np.arange(40, dtype=np.int32), True),
    ],
)
def test_cse_compares_array_attributes_exactly(first, second, merged):
    b = GraphBuilder()
    g = b.build([b.constant(first), b.constant(second)])
    out = apply(cse, g, merged)
    assert len(out.nodes) == (1 if merged else 2)


def test_cse_compares_other_attributes():
    b = GraphBuilder()
    a = b.iota(dtype=i32, shape=(2, 3), dimension=0)
    c = b.iota(dtype=i32, shape=(2, 3), dimension=1)
    d = b.iota(dtype=i32, shape=(2, 3), dimension=1)
    out = apply(cse, b.build([a, c, d]), True)
    assert [n.attrs["dimension"] for n in out.nodes] == [0, 1]


def test_cse_never_merges_random_ops_but_merges_their_equal_users():
    b = GraphBuilder()
    x = b.input(f32[4])
    r1, r2 = b.test_draw(x), b.test_draw(x)
    g = b.build([r1, r2, b.exp(x), b.exp(x)])
    out = apply(cse, g, True)
    assert out.op_counts() == {"test_draw": 2, "exp": 1}
    b = GraphBuilder()
    key = b.input(u32[2])
    g = b.build([b.random_bits(key, shape=(3,)), b.random_bits(key, shape=(3,))])
    assert apply(cse, g, False) is g


def test_cse_merges_multi_result_nodes():
    b = GraphBuilder()
    x = b.input(f32[4])
    lo1, hi1 = b.test_floor_ceil(x)
    lo2, hi2 = b.test_floor_ceil(x)
    g = b.build([lo1, hi2])
    out = apply(cse, g, True)
    assert out.outputs == list(out.nodes[0].outputs)
    same_results(g, out, X4)


# -- constant folding -------------------------------------------------------------------------

def test_fold_evaluates_constant_chains_with_the_interpreter():
    b = GraphBuilder()
    x = b.input(f32[4])
    c = b.constant(X4[0])
    with b.location(LOC):
        t = b.tanh(b.exp(c))
    y = b.add(x, t)
    g = b.build([y, t])
    out = apply(fold_constants, g, True)
    assert out.op_counts() == {"constant": 3, "add": 1}  # the old constants are left for dce
    folded = out.nodes[2]
    assert folded.loc == LOC
    # Rounded to f32 after each op, as the interpreter does at run time.
    expected = np.tanh(np.exp(X4[0].astype(np.float64)).astype(np.float32).astype(np.float64)).astype(np.float32)
    assert folded.attrs["value"].tobytes() == expected.tobytes()
    assert folded.attrs["value"].tobytes() == evaluate(g, X4)[1].tobytes()
    assert out.nodes[3].inputs[1] is folded.outputs[0]
    same_results(g, out, X4)
    out = apply(dce, out, True)
    assert out.op_counts() == {"constant": 1, "add": 1}
    apply(fold_constants, out, False)


def test_fold_keeps_special_values_and_rounds_once_to_the_result_dtype():
    values = np.array([-0.0, np.inf, -np.inf, np.nan, 11.1, 1e-7], np.float16)
    b = GraphBuilder()
    g = b.build([b.sqrt(b.constant(values)), b.exp(b.constant(values))])
    out = apply(fold_constants, g, True)
    same_results(g, out, [])
    sqrt = out.outputs[0].producer.attrs["value"]
    assert sqrt.dtype == np.float16
    assert np.signbit(sqrt[0]) and sqrt[0] == 0 and sqrt[1] == np.inf and np.isnan(sqrt[2:4]).all()
    assert sqrt[4] == np.float16(np.sqrt(np.float64(np.float16(11.1))))


def test_fold_leaves_non_constant_operands_iota_and_huge_results_alone():
    b = GraphBuilder()
    x = b.input(f32[4])
    g = b.build([b.exp(x), b.iota(dtype=f32, shape=(4,)), b.exp(b.iota(dtype=f32, shape=(4,)))])
    assert apply(fold_constants, g, False) is g
    b = GraphBuilder()
    big = b.constant(np.zeros(10, np.float32))
    g = b.build([b.exp(big)])
    assert apply(functools.partial(fold_constants, max_elements=9), g, False) is g
    assert apply(functools.partial(fold_constants, max_elements=10), g, True).op_counts() == {"constant": 2}


def test_fold_multi_result_and_composite_nodes():
    b = GraphBuilder()
    c = b.constant(np.array([-1.5, 2.25], np.float32))
    lo, hi = b.test_floor_ceil(c)
    s = b.test_softplus(c)
    g = b.build([lo, hi, s])
    out = apply(fold_constants, g, True)
    assert out.op_counts() == {"constant": 4}
    assert [v.producer.attrs["value"].tolist() for v in out.outputs[:2]] == [[-2.0, 2.0], [-1.0, 3.0]]
    same_results(g, out, [])


# -- decompose ----------------------------------------------------------------------------------

def test_decompose_expands_recursively_and_keeps_the_location():
    b = GraphBuilder()
    x = b.input(f32[4])
    with b.location(LOC):
        y = b.test_outer(x)
    z = b.exp(y)
    g = b.build([z])
    out = apply(functools.partial(decompose, claimed=lambda op: False), g, True)
    assert [n.op for n in out.nodes] == ["exp", "log1p", "tanh", "exp"]
    assert [n.loc for n in out.nodes] == [LOC, LOC, LOC, None]
    same_results(g, out, X4)
    apply(functools.partial(decompose, claimed=lambda op: False), out, False)


def test_decompose_stops_at_claimed_composites():
    b = GraphBuilder()
    x = b.input(f32[4])
    g = b.build([b.test_outer(x)])
    out = apply(functools.partial(decompose, claimed={"test_softplus"}.__contains__), g, True)
    assert [n.op for n in out.nodes] == ["test_softplus", "tanh"]
    assert apply(functools.partial(decompose, claimed=lambda op: True), g, False) is g


def test_decompose_real_composites_to_primitives():
    b = GraphBuilder()
    x = b.input(f32[2, 3])
    g = b.build([b.softmax(b.relu(x), axis=1)])
    out = apply(functools.partial(decompose, claimed=lambda op: False), g, True)
    assert all(OP_TABLE[n.op].kind is Kind.PRIMITIVE for n in out.nodes)
    same_results(g, out, [np.array([[1.0, -2.0, 3.0], [np.inf, 0.0, -0.0]], np.float32)])


@pytest.mark.parametrize(
    "op, message",
    [
        ("test_loop", "decomposition of test_loop recurses: test_loop -> test_loop (at model.py:42 in forward)"),
        ("test_wrong_type", "decomposition of test_wrong_type returns (f64[3]), its type rule says (f32[4])"),
        ("test_foreign", "decomposition of test_foreign reads a value it did not build (in its exp node); "
                         "build everything on the given builder"),
        ("test_stray", "decomposition of test_stray returns a value it did not build"),
    ],
)
def test_broken_decompositions_are_named(op, message):
    b = GraphBuilder()
    x = b.input(f32[4])
    with b.location(LOC):
        y = b.op(op, x)
    with pytest.raises(DecompositionError) as info:
        decompose(b.build([y]), claimed=lambda name: False)
    assert str(info.value) == message


# -- pipeline -----------------------------------------------------------------------------------

def test_registry_lists_the_argument_free_passes():
    assert PASSES == {"fold_constants": fold_constants, "cse": cse, "dce": dce}


def test_pipeline_runs_to_a_fixed_point():
    b = GraphBuilder("m")
    x = b.input(f32[4])
    two = b.constant(np.full(4, 2.0, np.float32))
    scale = b.exp(b.log1p(two))  # folds to a constant
    with b.location(LOC):
        s1, s2 = b.test_softplus(x), b.test_softplus(x)  # decompose, then cse merges them
    b.tanh(s1)  # dead
    y = b.mul(b.add(s1, s2), scale)
    g = b.build([y])
    passes = [functools.partial(decompose, claimed=lambda op: False), *PASSES.values()]
    out, changed = run_pipeline(g, passes)
    assert changed is True
    assert [n.op for n in out.nodes] == ["constant", "exp", "log1p", "add", "mul"]
    assert [n.loc for n in out.nodes[1:3]] == [LOC, LOC]
    same_results(g, out, X4)
    again, changed = run_pipeline(out, passes)
    assert (again, changed) == (out, False)


def test_pipeline_names_the_pass_that_broke_the_graph():
    def broken(graph):  # drops the first node
        if not graph.nodes:
            return graph, False
        return Graph(graph.name, graph.inputs, graph.nodes[1:], graph.outputs), True

    b = GraphBuilder("g")
    x = b.input(f32[4])
    g = b.build([b.tanh(b.exp(x))])
    with pytest.raises(VerifyError) as info:
        run_pipeline(g, [dce, broken])
    assert str(info.value).startswith("after pass broken: @g: node 0 (tanh): operand 0 is not defined")
    assert run_pipeline(g, [broken], verify=False)[0].nodes == []  # unverified, the broken graph goes through
    with pytest.raises(VerifyError) as info:
        run_pipeline(Graph("bad", [x], g.nodes[1:], g.outputs), [dce])
    assert str(info.value).startswith("before the first pass: @bad: node 0 (tanh)")


def test_pipeline_detects_passes_that_never_settle():
    def liar(graph):
        return graph, True

    b = GraphBuilder()
    g = b.build([b.input(f32[1])])
    with pytest.raises(ParityError, match=r"passes \[dce, liar\] still change the graph after 3 rounds"):
        run_pipeline(g, [dce, liar], max_rounds=3)


# -- random graphs: the standard pipeline never changes a result -------------------------------

UNARY = ("exp", "tanh", "log1p", "sin", "sqrt", "relu", "test_softplus", "test_outer", "test_draw")
SPECIALS = st.sampled_from([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, 1e-45, 3e38])


@st.composite
def pipeline_graphs(draw):
    rng = draw(st.randoms(use_true_random=False))
    b = GraphBuilder("r")
    values = [b.input(f32[3]) for _ in range(draw(st.integers(1, 2)))]
    for _ in range(draw(st.integers(1, 12))):
        kind = rng.choice(["unary", "binary", "constant", "softmax"])
        with b.location(SourceLoc("gen.py", len(b.nodes))):
            if kind == "constant":
                values.append(b.constant(np.array(draw(st.lists(SPECIALS, min_size=3, max_size=3)), np.float32)))
            elif kind == "binary":
                values.append(b.op(rng.choice(["add", "mul", "max"]), rng.choice(values), rng.choice(values)))
            elif kind == "softmax":
                values.append(b.softmax(rng.choice(values), axis=0))
            else:
                values.append(b.op(rng.choice(UNARY), rng.choice(values)))
    return b.build(rng.sample(values, rng.randint(1, min(3, len(values)))))


@settings(max_examples=150, deadline=None)
@given(pipeline_graphs(), st.lists(SPECIALS, min_size=6, max_size=6))
def test_pipeline_keeps_results_bit_for_bit(graph, data):
    inputs = [np.array(data[3 * k: 3 * k + 3], np.float32) for k in range(len(graph.inputs))]
    passes = [functools.partial(decompose, claimed={"test_outer"}.__contains__), *PASSES.values()]
    out, _ = run_pipeline(graph, passes)
    assert all(OP_TABLE[n.op].kind is Kind.PRIMITIVE or n.op == "test_outer" for n in out.nodes)
    assert all(n.loc is not None for n in out.nodes)
    same_results(graph, out, inputs)
