"""decomposition(): a composite expanded into a checked graph of its own."""

import numpy as np
import pytest

from parity.ir import OP_TABLE, GraphBuilder, Kind, SourceLoc, evaluate, f32, f64
from parity.ir.expand import DecompositionError, decomposition
from parity.ir.opdef import Accuracy, OpDef
from parity.ir.ops.rules import unary

LOC = SourceLoc("model.py", 7, "forward")


def test_the_graph_takes_the_operand_types_and_gives_the_rule_types():
    g = decomposition("softmax", {"axis": 1}, [f32[2, 3]], loc=LOC)
    assert (g.name, g.input_types, g.output_types) == ("softmax", [f32[2, 3]], [f32[2, 3]])
    assert all(OP_TABLE[n.op].kind is Kind.PRIMITIVE for n in g.nodes)
    assert {n.loc for n in g.nodes} == {LOC}
    x = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]], np.float32)
    b = GraphBuilder()
    v = b.input(f32[2, 3])
    np.testing.assert_array_equal(evaluate(g, [x])[0], evaluate(b.build([b.softmax(v, axis=1)]), [x])[0])


def test_a_primitive_has_no_decomposition():
    with pytest.raises(DecompositionError, match="exp is a primitive, not a composite"):
        decomposition("exp", {}, [f32[2]])


def _composite(name, decompose):
    return OpDef(name=name, kind=Kind.COMPOSITE, operands=("x",), infer=unary(name, (f32,)), dtypes=(f32,),
                 accuracy=Accuracy.COMPOSITE, decompose=decompose)


@pytest.mark.parametrize("decompose, message", [
    (lambda b, attrs, x: b.constant(np.zeros(3, np.float64)),
     "decomposition of test_broken returns (f64[3]), its type rule says (f32[4])"),
    (lambda b, attrs, x: b.exp(GraphBuilder().input(f32[4])),
     "decomposition of test_broken reads a value it did not build (in its exp node); "
     "build everything on the given builder"),
    (lambda b, attrs, x: GraphBuilder().input(f32[4]), "decomposition of test_broken returns a value it did not build"),
])
def test_broken_decompositions_are_named(monkeypatch, decompose, message):
    monkeypatch.setitem(OP_TABLE, "test_broken", _composite("test_broken", decompose))
    with pytest.raises(DecompositionError) as info:
        decomposition("test_broken", {}, [f32[4]])
    assert str(info.value) == message


def test_declared_result_types_are_checked_when_given():
    with pytest.raises(DecompositionError, match=r"returns \(f32\[3\]\), its type rule says \(f64\[3\]\)"):
        decomposition("relu", {}, [f32[3]], out_types=[f64[3]])
