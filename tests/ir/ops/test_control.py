"""The loop op: its reference semantics against plain Python loops, the text format of its
body, the verifier and the passes looking inside it, and symbolic sizes in a body."""

from __future__ import annotations

import numpy as np
import pytest

from parity.ir import GraphBuilder, evaluate, f32, parse, verify
from parity.ir.dtypes import DType
from parity.ir.errors import TypeRuleError
from parity.ir.parser import ParseError
from parity.ir.passes import cse, decompose
from parity.ir.types import Symbol, tensor
from parity.ir.verifier import VerifyError

i32 = DType.int32


def _body(in_types, make, name="step"):
    b = GraphBuilder(name)
    outs = make(b, *[b.input(t) for t in in_types])
    return b.build(list(outs))


def _running_sum_body(n=3, dtype=f32):
    def make(b, total, x):
        new = b.add(total, x)
        return new, b.mul(new, new)
    return _body([dtype[n], dtype[n]], make)


def _loop_graph(body, operand_types, **attrs):
    b = GraphBuilder()
    params = [b.input(t) for t in operand_types]
    outs = b.loop(*params, body=body, **attrs)
    return b.build(list(outs) if isinstance(outs, tuple) else [outs])


@pytest.mark.parametrize("reverse", [False, True])
def test_a_running_sum_gives_the_final_carry_and_each_steps_row_at_its_own_position(reverse):
    rng = np.random.default_rng(0)
    init, xs = rng.standard_normal(3).astype(np.float32), rng.standard_normal((5, 3)).astype(np.float32)
    g = _loop_graph(_running_sum_body(), [f32[3], f32[5, 3]], length=5, num_carry=1, reverse=reverse)
    final, squares = evaluate(g, [init, xs])
    total, rows = init.copy(), np.zeros((5, 3), np.float32)
    for i in (range(4, -1, -1) if reverse else range(5)):
        total = (total + xs[i]).astype(np.float32)
        rows[i] = total * total
    np.testing.assert_array_equal(final, total)
    np.testing.assert_array_equal(squares, rows)


def test_zero_steps_give_back_the_carries_and_empty_ys():
    g = _loop_graph(_running_sum_body(), [f32[3], f32[0, 3]], length=0, num_carry=1)
    init = np.array([1.0, -2.0, 3.0], np.float32)
    final, ys = evaluate(g, [init, np.zeros((0, 3), np.float32)])
    np.testing.assert_array_equal(final, init)
    assert ys.shape == (0, 3) and ys.dtype == np.float32


def test_consts_carries_of_two_dtypes_and_no_xs():
    def make(b, scale, count, value):  # count += 1; value = value * scale
        return b.add(count, b.constant(1, i32)), b.mul(value, scale)
    body = _body([f32[2], i32[()], f32[2]], make)
    g = _loop_graph(body, [f32[2], i32[()], f32[2]], length=4, num_consts=1, num_carry=2)
    count, value = evaluate(g, [np.array([2.0, 0.5], np.float32), np.array(0, np.int32),
                                np.array([1.0, 1.0], np.float32)])
    assert count == 4
    np.testing.assert_array_equal(value, [16.0, 0.0625])


def test_a_loop_without_carries_maps_its_rows():
    body = _body([f32[2], f32[2]], lambda b, w, x: (b.mul(w, x),))
    g = _loop_graph(body, [f32[2], f32[3, 2]], length=3, num_consts=1)
    xs = np.arange(6, dtype=np.float32).reshape(3, 2)
    (ys,) = evaluate(g, [np.array([10.0, -1.0], np.float32), xs])
    np.testing.assert_array_equal(ys, xs * np.array([10.0, -1.0], np.float32))


def test_the_body_rounds_each_step_and_the_oracle_runs_it_in_float64():
    body = _running_sum_body(1, DType.float16)
    g = _loop_graph(body, [tensor(DType.float16, 1), tensor(DType.float16, 3, 1)], length=3, num_carry=1)
    init = np.array([2048.0], np.float16)
    xs = np.ones((3, 1), np.float16)
    native, _ = evaluate(g, [init, xs])
    oracle, _ = evaluate(g, [init, xs], oracle=True)
    assert native[0] == 2048.0  # 2048 + 1 rounds back to 2048 in float16, every step
    assert oracle[0] == 2051.0


def test_the_type_rule_names_what_does_not_fit():
    body = _running_sum_body()
    with pytest.raises(TypeRuleError, match=r"xs 0 is f32\[4,3\]"):
        _loop_graph(body, [f32[3], f32[4, 3]], length=5, num_carry=1)
    changes = _body([f32[3], f32[3]], lambda b, t, x: (b.convert(t, dtype=DType.float64), x))
    with pytest.raises(TypeRuleError, match="of other types than it takes"):
        _loop_graph(changes, [f32[3], f32[5, 3]], length=5, num_carry=1)


def test_the_body_prints_nested_and_parses_back_to_an_equal_graph():
    g = _loop_graph(_running_sum_body(), [f32[3], f32[5, 3]], length=5, num_carry=1, reverse=True)
    text = str(g)
    assert "body=graph @step(%0: f32[3], %1: f32[3])" in text
    assert "\n      %2: f32[3] = add(%0, %1)" in text  # the body's own numbering, indented under the node
    back = parse(text)
    assert back == g and back.content_hash() == g.content_hash()
    verify(back)


def test_a_different_body_is_a_different_graph():
    g = _loop_graph(_running_sum_body(), [f32[3], f32[5, 3]], length=5, num_carry=1)
    other_body = _body([f32[3], f32[3]], lambda b, t, x: (b.sub(t, x), b.mul(t, x)))
    h = _loop_graph(other_body, [f32[3], f32[5, 3]], length=5, num_carry=1)
    assert g.content_hash() != h.content_hash()


def test_a_body_cannot_read_the_enclosing_graphs_values():
    g = _loop_graph(_running_sum_body(), [f32[3], f32[5, 3]], length=5, num_carry=1)
    text = str(g).replace("add(%0, %1)", "add(%0, %5)")
    with pytest.raises(ParseError, match="%5 is not defined"):
        parse(text)


def test_the_verifier_checks_the_body():
    body = _running_sum_body()
    g = _loop_graph(body, [f32[3], f32[5, 3]], length=5, num_carry=1)
    body.nodes.reverse()  # the mul now reads the add's result before it is defined
    with pytest.raises(VerifyError, match="its body graph is broken"):
        verify(g)


def test_decompose_unrolls_an_unclaimed_loop_and_keeps_a_claimed_one_with_its_body_expanded():
    def make(b, t, x):
        new = b.add(t, b.softmax(x, axis=0))
        return new, new
    body = _body([f32[3], f32[3]], make)
    g = _loop_graph(body, [f32[3], f32[6, 3]], length=6, num_carry=1)
    arrays = [np.zeros(3, np.float32), np.random.default_rng(1).standard_normal((6, 3)).astype(np.float32)]
    expected = evaluate(g, arrays)

    unrolled, changed = decompose(g, claimed=lambda op: False)
    assert changed and "loop" not in unrolled.op_counts() and unrolled.op_counts()["add"] >= 6
    kept, changed = decompose(g, claimed=lambda op: op == "loop")
    assert changed and kept.op_counts() == {"loop": 1}
    inner = kept.nodes[0].attrs["body"]
    assert "softmax" not in inner.op_counts() and "exp" in inner.op_counts()
    verify(kept)
    for graph in (unrolled, kept):
        for got, want in zip(evaluate(graph, arrays), expected):
            np.testing.assert_array_equal(got, want)


def test_cse_merges_equal_loops_only():
    b = GraphBuilder()
    init, xs = b.input(f32[3]), b.input(f32[5, 3])
    first = b.loop(init, xs, body=_running_sum_body(), length=5, num_carry=1)
    second = b.loop(init, xs, body=_running_sum_body(), length=5, num_carry=1)
    other = b.loop(init, xs, body=_body([f32[3], f32[3]], lambda bb, t, x: (bb.sub(t, x), x)), length=5,
                   num_carry=1)
    g = b.build([*first, *second, *other])
    merged, changed = cse(g)
    assert changed and merged.op_counts() == {"loop": 2}


def test_a_body_with_symbolic_sizes_runs_at_the_sizes_its_operands_bind():
    batch = Symbol("B")

    def make(b, h, x):
        flat = b.reshape(b.add(h, x), shape=(batch * 2,))
        return b.add(h, x), flat
    body = _body([f32[batch, 2], f32[batch, 2]], make)
    g = _loop_graph(body, [f32[batch, 2], f32[4, batch, 2]], length=4, num_carry=1)
    assert str(g.output_types[1]) == "f32[4,B*2]"
    xs = np.arange(24, dtype=np.float32).reshape(4, 3, 2)
    final, flats = evaluate(g, [np.zeros((3, 2), np.float32), xs])
    np.testing.assert_array_equal(final, xs.sum(axis=0))
    np.testing.assert_array_equal(flats, np.cumsum(xs, axis=0).reshape(4, 6))
    unrolled, _ = decompose(g, claimed=lambda op: False)
    np.testing.assert_array_equal(evaluate(unrolled, [np.zeros((3, 2), np.float32), xs])[1], flats)


def test_a_body_that_is_not_a_graph_is_refused():
    b = GraphBuilder()
    init = b.input(f32[3])
    with pytest.raises(TypeRuleError, match="expected a value of kind graph"):
        b.loop(init, body="graph @step() -> () { return }", length=2, num_carry=1)
