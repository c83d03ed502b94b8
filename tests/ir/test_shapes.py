"""ShapeBindings: one size per symbol, checked where concrete shapes meet types."""

import numpy as np
import pytest

from parity.ir import GraphBuilder, ParityError, Symbol, evaluate, f32, i32
from parity.ir.interpreter import InterpreterError
from parity.ir.shapes import ShapeBindings, ShapeError

B, N = Symbol("B"), Symbol("N")


def _graph():
    b = GraphBuilder("g")
    x, y = b.input(f32[B, 2]), b.input(f32[B])
    return b.build([x, y])


def test_bind_returns_the_concrete_type_and_remembers_each_symbol():
    bindings = ShapeBindings()
    assert bindings.bind(f32[B, 2], (3, 2), "x") == f32[3, 2]
    assert bindings.sizes == {"B": 3}
    assert bindings.bind(f32[B], np.zeros(3).shape, "y") == f32[3]


@pytest.mark.parametrize("shapes, message", [
    ([(3, 2), (4,)], "input 1 of @g: dimension B is 4 here but 3 in an earlier input"),
    ([(3, 5), (3,)], r"input 0 of @g has shape [3, 5], expected f32[B,2]"),
    ([(3,), (3,)], r"input 0 of @g has shape [3], expected f32[B,2]"),
])
def test_bind_inputs_names_the_input_the_graph_and_both_sizes(shapes, message):
    with pytest.raises(ShapeError) as info:
        ShapeBindings().bind_inputs(_graph(), shapes)
    assert str(info.value) == message


def test_the_error_class_is_the_callers():
    with pytest.raises(InterpreterError, match="dimension B is 4 here but 3"):
        ShapeBindings({"B": 3}, error=InterpreterError).bind(f32[B], (4,), "x")
    assert issubclass(ShapeError, ParityError)


def test_bind_unchecked_binds_new_symbols_only():
    bindings = ShapeBindings({"B": 3})
    bindings.bind_unchecked(f32[B, N], (5, 7))
    assert bindings.sizes == {"B": 3, "N": 7}


def test_resolve_types_and_attributes():
    bindings = ShapeBindings({"B": 3})
    assert bindings.resolve(f32[B, N]) == f32[3, N]
    assert bindings.resolve(i32[2]) == i32[2]
    assert bindings.resolve_attrs({"shape": (B, 4), "axis": 1, "nested": ((B, N),)}) == {
        "shape": (3, 4), "axis": 1, "nested": ((3, N),)}
    assert bindings.unbound(f32[N, B, N]) == ["N"]


def test_strict_resolution_names_the_unbound_dimension():
    with pytest.raises(ShapeError, match="dimension N has no size: no input binds it"):
        ShapeBindings({"B": 3}).resolve_attrs({"shape": (B, N)}, strict=True)


def test_the_interpreter_binds_through_it():
    g = _graph()
    with pytest.raises(InterpreterError, match="input 1 of @g: dimension B is 4 here but 3 in an earlier input"):
        evaluate(g, [np.zeros((3, 2), np.float32), np.zeros(4, np.float32)])
    with pytest.raises(InterpreterError, match=r"input 0 of @g has shape \[3\], expected f32\[B,2\]"):
        evaluate(g, [np.zeros(3, np.float32), np.zeros(3, np.float32)])
