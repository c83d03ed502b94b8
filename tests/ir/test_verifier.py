"""The verifier: one test per kind of malformed graph, built by hand to break one invariant."""

from __future__ import annotations

import numpy as np
import pytest

from parity.ir import (
    OP_TABLE,
    AttrKind,
    AttrSpec,
    DType,
    Graph,
    GraphBuilder,
    Kind,
    Node,
    OpDef,
    SourceLoc,
    Value,
    VerifyError,
    f16,
    f32,
    i32,
    verify,
)
from parity.ir.opdef import Accuracy


def chain():
    """x -> exp -> tanh -> log1p, each node with a location; returns (builder, x, [e, t, l])."""
    b = GraphBuilder("chain")
    x = b.input(f32[4])
    with b.location(SourceLoc("model.py", 7, "forward")):
        e = b.exp(x)
        t = b.tanh(e)
        lg = b.log1p(t)
    return b, x, [e, t, lg]


def verify_error(graph: Graph) -> str:
    with pytest.raises(VerifyError) as info:
        verify(graph)
    return str(info.value)


def one_node_error(op: str, inputs, attrs, out_types, loc=None) -> str:
    """The verifier's message for a graph of a single hand-built node."""
    node = Node(op, inputs, attrs, out_types, loc)
    graph_inputs = [v for v in dict.fromkeys(inputs) if v.producer is None]
    return verify_error(Graph("g", graph_inputs, [node], [node.outputs[0]]))


def test_well_formed_graphs_pass():
    b, x, (e, t, lg) = chain()
    c = b.constant(np.array([1.0, -0.0], np.float32))
    io = b.iota(dtype=i32, shape=(2, 3), dimension=1)
    verify(b.build([lg, e, c, io, x]))
    verify(Graph("empty", [], [], []))


def test_operand_used_before_its_definition():
    b, x, (e, t, lg) = chain()
    nodes = b.nodes
    message = verify_error(Graph("chain", [x], [nodes[1], nodes[0], nodes[2]], [lg]))
    assert message.splitlines()[0] == (
        "@chain: node 0 (tanh) at model.py:7 in forward: operand 0 is not defined before this node: "
        "its producer is node 1 (exp), which comes later; nodes must be in topological order")
    assert message.splitlines()[1:] == [
        "   graph @chain(%0: f32[4]) -> (f32[4]) {",
        '>>   %1: f32[4] = tanh(%2) loc("model.py", 7, "forward")',
        '     %2: f32[4] = exp(%0) loc("model.py", 7, "forward")',
        '     %3: f32[4] = log1p(%1) loc("model.py", 7, "forward")',
        "     return %3",
        "   }",
    ]


def test_operand_from_another_graph():
    b, x, (e, t, lg) = chain()
    other = GraphBuilder("other")
    y = other.input(f32[4])
    stray = other.exp(y)
    node = b.make_node("tanh", [stray], {})
    message = verify_error(Graph("chain", [x], [*b.nodes, node], [node.outputs[0]]))
    assert ("node 3 (tanh): operand 0 is not defined before this node: its producer (exp) is not one of "
            "the graph's nodes") in message
    assert ">>   %4: f32[4] = tanh(%?)" in message
    node = b.make_node("tanh", [y], {})
    message = verify_error(Graph("chain", [x], [node], [node.outputs[0]]))
    assert "operand 0 is not defined before this node: it is not one of this graph's inputs" in message


def test_node_listed_twice_defines_its_values_twice():
    b, x, (e, t, lg) = chain()
    message = verify_error(Graph("chain", [x], [b.nodes[0], b.nodes[1], b.nodes[0], b.nodes[2]], [lg]))
    assert "@chain: node 0 (exp) appears more than once in the node list" in message


def test_result_value_shared_by_two_nodes():
    b, x, (e, t, lg) = chain()
    clone = Node("exp", [x], {}, [f32[4]])
    clone.outputs = b.nodes[0].outputs  # two nodes claiming one Value
    message = verify_error(Graph("chain", [x], [b.nodes[0], clone], [e]))
    assert ("node 1 (exp): result 0 (<Value f32[4] from exp>) does not point back to this node as result 0 "
            "(a Value shared with another node or graph?)") in message


def test_forged_value_pointing_at_a_node():
    b, x, (e, t, lg) = chain()
    forged = Value(f32[4], b.nodes[0], 0)  # claims to come from exp but is not exp's result
    message = verify_error(b.build([forged]))
    assert "output 0 (<Value f32[4] from exp>) is not defined in this graph: its producer is node 0" in message


def test_undefined_graph_output():
    b, x, (e, t, lg) = chain()
    message = verify_error(Graph("chain", [x], b.nodes[:2], [lg]))
    assert message.splitlines()[0] == (
        "@chain: output 0 (<Value f32[4] from log1p>) is not defined in this graph: its producer (log1p) is "
        "not one of the graph's nodes")
    assert ">>   return %?" in message
    message = verify_error(Graph("chain", [x], [], ["%1"]))
    assert message.splitlines() == [
        "@chain: output 0 ('%1') is not defined in this graph: it is a str, not a Value",
        "   graph @chain(%0: f32[4]) -> (?) {",
        ">>   return %?",
        "   }",
    ]


def test_unknown_op():
    message = one_node_error("frobnicate", [Value(f32[4])], {}, [f32[4]], SourceLoc("m.py", 3))
    assert "node 0 (frobnicate) at m.py:3: no op named 'frobnicate' in the op table" in message
    assert ">>   %1: f32[4] = frobnicate(%0)" in message


def test_wrong_operand_count():
    x = Value(f32[4])
    message = one_node_error("exp", [x, x], {}, [f32[4]])
    assert "node 0 (exp): exp: takes 1 operand(s) (x), got 2" in message


def test_operand_type_rejected_by_type_rule():
    message = one_node_error("exp", [Value(i32[4])], {}, [i32[4]])
    assert "node 0 (exp): the type rule rejects this node: exp (operand 0): dtype i32 is not accepted" in message


def test_result_type_differs_from_type_rule():
    x = Value(f32[4])
    message = one_node_error("exp", [x], {}, [f16[4]])
    assert "node 0 (exp): result types (f16[4]) differ from what the type rule infers (f32[4])" in message
    message = one_node_error("exp", [x], {}, [f32[4], f32[4]])
    assert "result types (f32[4], f32[4]) differ from what the type rule infers (f32[4])" in message


IOTA = {"dtype": DType.int32, "shape": (2, 3), "dimension": 1}


@pytest.mark.parametrize(
    "attrs, message",
    [
        ({"dtype": DType.int32, "shape": (2, 3)},
         "attributes ['dtype', 'shape'] are not normalized; expected exactly ['dtype', 'shape', 'dimension']"),
        ({"dimension": 1, "dtype": DType.int32, "shape": (2, 3)},
         "attributes ['dimension', 'dtype', 'shape'] are not normalized; expected exactly "
         "['dtype', 'shape', 'dimension'] in that order"),
        ({**IOTA, "shape": [2, 3]}, "attribute 'shape' = [2, 3] is not normalized; expected (2, 3)"),
        ({**IOTA, "dimension": np.int64(1)}, "attribute 'dimension' = np.int64(1) is not normalized; expected 1"),
        ({**IOTA, "dtype": "i32"}, "attribute 'dtype' = 'i32' is not normalized; expected DType.int32"),
        ({**IOTA, "dimension": 1.0}, "invalid attributes: iota (attribute 'dimension'): expected a value of "
                                     "kind int, got 1.0"),
        ({**IOTA, "axis": 0}, "invalid attributes: iota: unknown attribute(s) ['axis']"),
        ({**IOTA, "dimension": 7}, "the type rule rejects this node: iota (attribute 'dimension'): dimension 7"),
    ],
)
def test_attributes_not_normalized_or_invalid(attrs, message):
    got = one_node_error("iota", [], attrs, [i32[2, 3]])
    assert f"node 0 (iota): {message}" in got


def test_writeable_array_attribute():
    value = np.array([1.0, 2.0], np.float32)
    message = one_node_error("constant", [], {"value": value}, [f32[2]])
    assert "node 0 (constant): array attribute 'value' is writeable; normalized arrays are read-only" in message
    assert value.flags.writeable  # verifying does not freeze the caller's array


SCALE_OP = OpDef(
    name="test_scale", kind=Kind.PRIMITIVE, operands=("x",), infer=lambda types, attrs: (types[0],),
    dtypes=(DType.float32,), accuracy=Accuracy.EXACT, attrs=(AttrSpec("factor", AttrKind.FLOAT, 1.0),),
    reference=lambda ctx, x: x * ctx.attrs["factor"],
)


def test_float_attributes_compare_by_type_and_bits(monkeypatch):
    monkeypatch.setitem(OP_TABLE, SCALE_OP.name, SCALE_OP)
    x = Value(f32[2])
    for factor in (float("nan"), -0.0, float("inf")):  # nan != nan, yet nan is normalized
        node = Node("test_scale", [x], {"factor": factor}, [f32[2]])
        verify(Graph("g", [x], [node], [node.outputs[0]]))
    message = one_node_error("test_scale", [x], {"factor": 2}, [f32[2]])  # == 2.0, but not normalized
    assert "node 0 (test_scale): attribute 'factor' = 2 is not normalized; expected 2.0" in message


def test_duplicate_and_non_fresh_inputs():
    b, x, (e, t, lg) = chain()
    message = verify_error(Graph("chain", [x, x], b.nodes, [lg]))
    assert message.splitlines()[0] == "@chain: input 1 (<Value f32[4] from input>) is listed twice among the graph inputs"
    assert message.splitlines()[1] == ">> graph @chain(%0: f32[4], %0: f32[4]) -> (f32[4]) {"
    message = verify_error(Graph("chain", [x, e], b.nodes, [lg]))
    assert "input 1 (<Value f32[4] from exp>) is the result of a node, not a fresh graph input" in message
    assert "input 0 is a str, not a Value" in verify_error(Graph("g", ["x"], [], []))


def test_not_a_node():
    b, x, (e, t, lg) = chain()
    message = verify_error(Graph("chain", [x], [b.nodes[0], "tanh"], [e]))
    assert "node 1 is a str, not a Node" in message
    assert "(the graph cannot be printed:" in message


def test_context_is_a_window_around_the_node():
    b = GraphBuilder("long")
    v = b.input(f32[2])
    for _ in range(10):
        v = b.exp(v)
    bad = Node("exp", [v], {}, [f16[2]])
    nodes = b.nodes[:5] + [bad] + b.nodes[5:]
    lines = verify_error(Graph("long", b.inputs, nodes, [v])).splitlines()
    assert lines[0].startswith("@long: node 5 (exp): operand 0 is not defined before this node")
    assert lines[1] == "   ..."
    assert lines[2:9] == [
        "     %3: f32[2] = exp(%2)",
        "     %4: f32[2] = exp(%3)",
        "     %5: f32[2] = exp(%4)",
        ">>   %6: f16[2] = exp(%11)",
        "     %7: f32[2] = exp(%5)",
        "     %8: f32[2] = exp(%7)",
        "     %9: f32[2] = exp(%8)",
    ]
    assert lines[9] == "   ..."
    assert len(lines) == 10
