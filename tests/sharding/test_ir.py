"""Sharding as IR data: Mesh, PartitionSpec, sharding_constraint, text format, verifier, passes."""

from __future__ import annotations

import numpy as np
import pytest

from parity.ir import GraphBuilder, ParseError, TypeRuleError, VerifyError, evaluate, f32, i8, parse, verify
from parity.ir.passes import cse, dce, decompose
from parity.ir.sharding import GraphSharding, Mesh, PartitionSpec, ShardingError, spec_problem
from parity.ir.types import Symbol, TensorType

MESH = Mesh({"data": 4, "model": 2})


def sharded_graph():
    b = GraphBuilder("step")
    x, w = b.input(f32[8, 16]), b.input(f32[16, 4])
    y = b.dot_general(x, w, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,), lhs_batch_dims=(),
                      rhs_batch_dims=())
    z = b.sharding_constraint(b.tanh(y), spec=("data", "model"))
    return b.build([z, y]).with_sharding(GraphSharding(MESH, [("data",), None], [PartitionSpec(), None]))


TEXT = """graph @step(%0: f32[8,16] sharding[data], %1: f32[16,4]) -> (f32[8,4] sharding[], f32[8,4]) \
mesh[data=4, model=2] {
  %2: f32[8,4] = dot_general(%0, %1) {lhs_contracting_dims=[1], rhs_contracting_dims=[0], lhs_batch_dims=[], \
rhs_batch_dims=[]}
  %3: f32[8,4] = tanh(%2)
  %4: f32[8,4] = sharding_constraint(%3) {spec=[data, model]}
  return %4, %2
}"""


# -- Mesh and PartitionSpec ------------------------------------------------------------------


def test_mesh_keeps_axis_order_and_counts_devices():
    assert MESH.names == ("data", "model") and MESH.shape == (4, 2) and MESH.num_devices == 8
    assert str(Mesh([("model", 2), ("data", 4)])) == "[model=2, data=4]"
    assert MESH.size("model") == 2 and Mesh({"x": 1}).num_devices == 1


@pytest.mark.parametrize("axes, message", [
    ({}, "at least one axis"),
    ({"data": 0}, "sizes are ints >= 1"),
    ({"data": 2.0}, "sizes are ints >= 1"),
    ({"data": True}, "sizes are ints >= 1"),
    ({"_": 2}, "identifier other than '_'"),
    ({"9x": 2}, "identifier"),
    ([("a", 2), ("a", 2)], "named twice"),
])
def test_mesh_rejects(axes, message):
    with pytest.raises(ShardingError, match=message):
        Mesh(axes)


def test_spec_entries_and_canonical_text():
    assert PartitionSpec("data", None).dims == (("data",),)  # trailing replicated dims dropped
    assert PartitionSpec("data", None) == PartitionSpec("data") == PartitionSpec.of(("data", None))
    assert str(PartitionSpec(None, ("data", "model"))) == "[_, (data, model)]"
    assert str(PartitionSpec()) == str(PartitionSpec(None, None)) == "[]"
    assert PartitionSpec(None, ("data", "model")).entries() == (None, ("data", "model"))
    for text in ("[data, _]", "[_, (data, model), model2]", "[]", "[(a)]", " [ a ,_ ] "):
        spec = PartitionSpec.parse(text)
        assert PartitionSpec.parse(str(spec)) == spec
    assert PartitionSpec.parse("[(a)]") == PartitionSpec("a")


@pytest.mark.parametrize("text", ["data", "[data", "[data,]", "[,]", "[(data]", "[data] x", "[da-ta]", "[()]"])
def test_spec_parse_rejects(text):
    with pytest.raises(ShardingError):
        PartitionSpec.parse(text)


def test_spec_rejects_an_axis_used_twice():
    with pytest.raises(ShardingError, match="'data' is used twice"):
        PartitionSpec("data", ("model", "data"))
    with pytest.raises(ShardingError, match="entry is None, an axis name"):
        PartitionSpec(3)


def test_spec_problem_checks_rank_axes_and_divisibility():
    assert spec_problem(PartitionSpec("data", "model"), f32[8, 4], MESH) is None
    assert spec_problem(PartitionSpec(("data", "model")), f32[16], MESH) is None
    assert "has rank 1" in spec_problem(PartitionSpec("data", "model"), f32[8], MESH)
    assert "does not have" in spec_problem(PartitionSpec("batch"), f32[8], MESH)
    assert "6 is not a multiple of 4" in spec_problem(PartitionSpec("data"), f32[6], MESH)
    assert "12 is not a multiple of 8" in spec_problem(PartitionSpec(("data", "model")), f32[12], MESH)
    # size-1 axes split nothing; empty dims divide; symbolic dims are checked once their size is known
    assert spec_problem(PartitionSpec("one"), f32[3], Mesh({"one": 1})) is None
    assert spec_problem(PartitionSpec("data"), f32[0], MESH) is None
    assert spec_problem(PartitionSpec("data"), TensorType(f32[1].dtype, (Symbol("B"),)), MESH) is None
    assert spec_problem(PartitionSpec("batch"), f32[8], None) is None  # no mesh: rank only


# -- the op --------------------------------------------------------------------------------


def test_sharding_constraint_is_the_identity_bit_for_bit():
    b = GraphBuilder()
    x = b.input(f32[4])
    g = b.build([b.sharding_constraint(x, spec=("data",))])
    values = np.array([np.nan, -0.0, np.inf, 1e-45], np.float32)
    (out,) = evaluate(g, [values])
    assert out.dtype == np.float32 and out.tobytes() == values.tobytes()
    (out,) = evaluate(g, [values], oracle=True)
    assert out.dtype == np.float64 and np.array_equal(out, values.astype(np.float64), equal_nan=True)
    b = GraphBuilder()
    n = b.input(i8[0, 3])
    assert evaluate(b.build([b.sharding_constraint(n, spec=(None, "m"))]), [np.zeros((0, 3), np.int8)])[0].shape \
        == (0, 3)


def test_sharding_constraint_type_rule_names_the_spec():
    b = GraphBuilder()
    x = b.input(f32[4])
    with pytest.raises(TypeRuleError, match=r"sharding_constraint \(attribute 'spec'\): .*has rank 1"):
        b.sharding_constraint(x, spec=("data", "model"))
    with pytest.raises(TypeRuleError, match="'data' is used twice"):
        b.sharding_constraint(x, spec=(("data", "data"),))
    with pytest.raises(TypeRuleError, match=r"\(attribute 'spec'\): expected a partition spec .*got 3"):
        b.sharding_constraint(x, spec=3)


def test_decompose_removes_it_and_keeps_graph_sharding():
    g = sharded_graph()
    expanded, changed = decompose(g, claimed=lambda op: False)
    assert changed and "sharding_constraint" not in expanded.op_counts()
    assert expanded.sharding == g.sharding
    kept, changed = decompose(g, claimed=lambda op: op == "sharding_constraint")
    assert not changed and kept is g
    for pass_ in (cse, dce):
        out, _ = pass_(g)
        assert out.sharding == g.sharding


# -- text format -------------------------------------------------------------------------


def test_prints_the_documented_text_and_parses_back():
    g = sharded_graph()
    verify(g)
    assert g.to_text(locations=False) == TEXT
    back = parse(TEXT)
    assert back == g and back.content_hash() == g.content_hash() and back.sharding == g.sharding


def test_sharding_changes_the_content_hash():
    g = sharded_graph()
    plain = g.with_sharding(None)
    other = g.with_sharding(GraphSharding(Mesh({"data": 8, "model": 2}), [("data",)], [PartitionSpec()]))
    assert len({g.content_hash(), plain.content_hash(), other.content_hash()}) == 3
    assert "mesh" not in plain.to_text() and plain.with_sharding(None) is plain


@pytest.mark.parametrize("text, message, column", [
    # the column is the token the message is about: the '{' after the results, '[' of a mesh or spec
    ("graph @f(%0: f32[4] sharding[d]) -> (f32[4]) {\n  return %0\n}", "no mesh", 46),
    ("graph @f(%0: f32[4]) -> (f32[4]) mesh[d=0] {\n  return %0\n}", "sizes are ints >= 1", 38),
    ("graph @f(%0: f32[4]) -> (f32[4]) mesh[d=2, d=2] {\n  return %0\n}", "named twice", 38),
    ("graph @f(%0: f32[4] sharding[d, d]) -> (f32[4]) mesh[d=2] {\n  return %0\n}", "used twice", 29),
    ("graph @f(%0: f32[4] sharding[d,]) -> (f32[4]) mesh[d=2] {\n  return %0\n}", "does not read", 29),
    ("graph @f(%0: f32[4] sharding[d) -> (f32[4]) mesh[d=2] {\n  return %0\n}", "unexpected '-'", 29),
    ("graph @f(%0: f32[4]) -> (f32[4]) mesh {\n  return %0\n}", "a mesh like", 39),
    ("graph @f(%0: f32[4]) -> (f32[4]) meh[d=2] {\n  return %0\n}", "'mesh' or '{'", 34),
])
def test_parse_errors_point_at_the_sharding(text, message, column):
    with pytest.raises(ParseError, match=message) as info:
        parse(text)
    assert info.value.line == 1 and info.value.column == column


def test_parse_reads_a_constraint_with_a_multi_axis_dim():
    g = parse("graph @f(%0: f32[8]) -> (f32[8]) mesh[a=2, b=4] {\n"
              "  %1: f32[8] = sharding_constraint(%0) {spec=[(b, a)]}\n  return %1\n}")
    verify(g)
    assert g.nodes[0].attrs["spec"] == PartitionSpec(("b", "a"))


# -- verifier ------------------------------------------------------------------------------


def _verify_error(graph) -> str:
    with pytest.raises(VerifyError) as info:
        verify(graph)
    return str(info.value)


def test_verifier_checks_header_specs_against_the_mesh():
    g = sharded_graph()
    message = _verify_error(g.with_sharding(GraphSharding(MESH, [None, (None, ("data", "model"))])))
    assert "input 1: dimension 1 (size 4) is split over data×model = 8 devices" in message
    assert ">> graph @step" in message
    message = _verify_error(g.with_sharding(GraphSharding(MESH, [], [None, ("batch",)])))
    assert "output 1: the spec [batch] names axis 'batch'" in message
    broken = g.with_sharding(None)
    broken.sharding = GraphSharding(MESH, [None], [None, None])  # one spec short (not padded)
    assert "1 input spec(s) for 2 input(s)" in _verify_error(broken)


def test_verifier_checks_constraints_against_the_mesh():
    g = sharded_graph()
    message = _verify_error(g.with_sharding(None))
    assert "sharding_constraint" in message and "needs a device mesh, and the graph has none" in message
    assert ">>   %4: f32[8,4] = sharding_constraint(%3)" in message
    message = _verify_error(g.with_sharding(GraphSharding(Mesh({"data": 4, "model": 3}))))
    assert "dimension 1 (size 4) is split over model = 3 devices" in message
    message = _verify_error(g.with_sharding(GraphSharding(Mesh({"data": 4}))))
    assert "names axis 'model', which the mesh [data=4] does not have" in message


def test_the_text_example_of_docs_sharding_md_parses_and_verifies():
    from pathlib import Path

    doc = (Path(__file__).parents[2] / "docs" / "sharding.md").read_text()
    (block,) = [b.split("\n", 1)[1] for b in doc.split("```")[1::2] if b.startswith("\ngraph @") or
                b.split("\n", 1)[1].startswith("graph @")]
    graph = parse(block)
    verify(graph)
    assert graph.to_text() == block.strip()
    assert str(graph.sharding.mesh) == "[data=4, model=2]" and graph.sharding.inputs[0] == PartitionSpec("data")
