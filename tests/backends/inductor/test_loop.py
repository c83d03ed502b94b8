"""``loop`` on inductor: one ``while_loop`` higher-order op, its body compiled once.

Results equal the reference interpreter's bit for bit where the body's ops round exactly
(adds, products, integer arithmetic), and the loop unrolled on inductor bit for bit where
they do not (tanh, gelu, softmax: each op keeps its lowering inside the body). The generated
code has as many kernels at 64 steps as at 8. A loop the claim's predicate declines is
unrolled and still correct."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from parity.backends.inductor import control
from parity.backends.inductor.compiling import in_fresh_thread, inductor_compile
from parity.backends.inductor.control import examples_for
from parity.backends.inductor.lowering import CLAIM_PREDICATES, LOWERINGS, declined, to_fx
from parity.ir import GraphBuilder, c64, evaluate, f32, i32
from parity.ir.dtypes import DType
from parity.ir.passes import decompose

RNG = np.random.default_rng(7)


@pytest.fixture(autouse=True)
def rolled_at_any_size(monkeypatch, request):
    """The cases here are small loops, which the backend unrolls by default (ROLLED_PAST_NODES):
    every test but the threshold's own runs them rolled."""
    if "default_threshold" not in request.node.name:
        monkeypatch.setattr(control, "ROLLED_PAST_NODES", 0)


def _data(t):
    shape, dtype = tuple(t.shape), t.dtype.numpy
    if np.issubdtype(dtype, np.integer):
        return RNG.integers(-5, 6, shape).astype(dtype)
    if np.issubdtype(dtype, np.complexfloating):
        return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def _run(backend, graph):
    """(inductor's results, the reference's results, the inputs) for random inputs of ``graph``;
    the inputs are left as they were (the loop's carries start from copies)."""
    args = [_data(v.type) for v in graph.inputs]
    before = [a.copy() for a in args]
    got = [r.numpy() for r in backend.compile(graph, "cpu")(*args)]
    for a, b in zip(args, before):
        np.testing.assert_array_equal(a, b)
    return got, [np.asarray(w) for w in evaluate(graph, args)], args


def _assert_bitwise(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def _loop_graph(step, operands, **attrs):
    """A graph whose inputs are ``operands`` (types) and whose outputs are the loop's results."""
    b = GraphBuilder("outer")
    values = [b.input(t) for t in operands]
    results = b.loop(*values, body=step, **attrs)
    return b.build(list(results) if isinstance(results, tuple) else [results])


def running_sum(length: int, reverse: bool = False):
    body = GraphBuilder("step")
    total, x = body.input(f32[3]), body.input(f32[3])
    new = body.add(total, x)
    return _loop_graph(body.build([new, body.mul(new, x)]), [f32[3], f32[length, 3]], length=length,
                       num_carry=1, reverse=reverse)


def _rolled(graph) -> bool:
    """Whether the loop reached the traced ATen graph as a while_loop (not unrolled)."""
    graph = decompose(graph, claimed=lambda op: op in LOWERINGS, declined=declined)[0]  # as compile does
    fx = to_fx(graph, [tuple(v.type.shape) for v in graph.inputs])
    return any(n.target is torch.ops.higher_order.while_loop for n in fx.module.graph.nodes)


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
def test_a_running_sum_equals_the_reference_bit_for_bit(backend, reverse):
    graph = running_sum(6, reverse)
    assert _rolled(graph)
    got, want, (init, xs) = _run(backend, graph)
    _assert_bitwise(got, want)
    order = range(5, -1, -1) if reverse else range(6)
    total = init.copy()
    for i in order:  # the rows are read and written at their own positions
        total = total + xs[i]
        np.testing.assert_array_equal(got[1][i], total * xs[i])


def test_one_step(backend):
    graph = running_sum(1)
    assert _rolled(graph)
    _assert_bitwise(*_run(backend, graph)[:2])


def test_carries_of_different_dtypes_an_int32_counter_beside_a_float_carry(backend):
    body = GraphBuilder("step")
    scale, count, acc, x = body.input(f32[2]), body.input(i32[()]), body.input(f32[2]), body.input(f32[2])
    count2 = body.add(count, body.constant(np.int32(3)))
    acc2 = body.add(body.mul(acc, scale), x)
    graph = _loop_graph(body.build([count2, acc2, body.convert(count2, dtype=DType.float32)]),
                        [f32[2], i32[()], f32[2], f32[5, 2]], length=5, num_consts=1, num_carry=2)
    assert _rolled(graph)
    got, want, args = _run(backend, graph)
    _assert_bitwise(got, want)
    assert got[0] == args[1] + 15


def test_no_ys(backend):
    body = GraphBuilder("step")
    acc, x = body.input(i32[3]), body.input(i32[3])
    graph = _loop_graph(body.build([body.add(body.mul(acc, x), x)]), [i32[3], i32[4, 3]], length=4, num_carry=1)
    assert _rolled(graph)
    _assert_bitwise(*_run(backend, graph)[:2])


def test_no_carry(backend):
    body = GraphBuilder("step")
    w, x = body.input(f32[3]), body.input(f32[3])
    graph = _loop_graph(body.build([body.mul(w, x), body.max(w, x)]), [f32[3], f32[4, 3]], length=4, num_consts=1)
    assert _rolled(graph)
    _assert_bitwise(*_run(backend, graph)[:2])


def test_no_xs_with_a_constant_of_several_elements_in_the_body(backend):
    body = GraphBuilder("step")
    h = body.input(f32[3])
    new = body.add(body.mul(h, body.constant(np.array([0.5, -2.0, 1.0], np.float32))), body.constant(np.ones(3, np.float32)))
    graph = _loop_graph(body.build([new, h]), [f32[3]], length=7, num_carry=1, reverse=True)
    assert _rolled(graph)
    _assert_bitwise(*_run(backend, graph)[:2])


def test_a_carry_returned_unchanged_and_a_const_returned_as_a_carry(backend):
    body = GraphBuilder("step")
    c, a, b_ = body.input(f32[2, 3]), body.input(f32[2, 3]), body.input(f32[2, 3])
    graph = _loop_graph(body.build([c, body.add(a, b_), a]), [f32[2, 3], f32[2, 3], f32[2, 3]],
                        length=3, num_consts=1, num_carry=2)
    assert _rolled(graph)
    _assert_bitwise(*_run(backend, graph)[:2])


def _unrolled_on_inductor(backend, graph, args):
    return [r.numpy() for r in backend.compile(decompose(graph, claimed=lambda op: False)[0], "cpu")(*args)]


@pytest.mark.parametrize("composite", ["softmax", "gelu"])
def test_a_body_with_a_composite_equals_the_loop_unrolled_bit_for_bit(backend, composite):
    body = GraphBuilder("step")
    h, x = body.input(f32[4]), body.input(f32[4])
    pre = body.add(h, x)
    new = body.softmax(pre, axis=0) if composite == "softmax" else body.gelu(pre, approximate="none")
    graph = _loop_graph(body.build([new, body.tanh(new)]), [f32[4], f32[6, 4]], length=6, num_carry=1)
    assert _rolled(graph)
    got, want, args = _run(backend, graph)
    _assert_bitwise(got, _unrolled_on_inductor(backend, graph, args))
    for g, w in zip(got, want):  # the reference's transcendentals differ in the last place
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def _kernels(graph) -> int:
    """How many C++ kernels Inductor's output code for ``graph`` defines."""
    graph = decompose(graph, claimed=lambda op: op in LOWERINGS, declined=declined)[0]
    fx = to_fx(graph, [tuple(v.type.shape) for v in graph.inputs])
    examples = [*fx.examples, *fx.constants]
    run = in_fresh_thread(inductor_compile, fx.module, examples_for(fx.module, examples))
    run(list(examples))  # the first call, through AOTAutograd's wrapper
    from torch._inductor.codecache import PyCodeCache

    source = "\n".join(open(m.__file__).read() for m in PyCodeCache.modules)
    return source.count("cpp_fused_")


def test_the_code_is_rolled_as_many_kernels_at_64_steps_as_at_8():
    def lstm_like(length):
        body = GraphBuilder("step")
        w, h, x = body.input(f32[8]), body.input(f32[8]), body.input(f32[8])
        new = body.tanh(body.add(body.mul(h, w), x))
        return _loop_graph(body.build([new, body.logistic(new)]), [f32[8], f32[8], f32[length, 8]], length=length,
                           num_consts=1, num_carry=1)

    from torch._inductor.codecache import PyCodeCache

    PyCodeCache.cache_clear(purge=False)
    eight = _kernels(lstm_like(8))
    PyCodeCache.cache_clear(purge=False)
    sixty_four = _kernels(lstm_like(64))
    assert eight == sixty_four and eight > 0


def test_zero_steps_is_declined_and_unrolled(backend):
    graph = running_sum(0)
    assert CLAIM_PREDICATES["loop"](graph.nodes[0]) == "it has zero steps"
    assert not _rolled(decompose(graph, claimed=lambda op: True,
                                 declined=lambda n: CLAIM_PREDICATES["loop"](n) is not None)[0])
    _assert_bitwise(*_run(backend, graph)[:2])


def test_complex_values_are_declined_and_unrolled(backend):
    body = GraphBuilder("step")
    total, x = body.input(c64[2]), body.input(c64[2])
    new = body.add(total, x)
    graph = _loop_graph(body.build([new, new]), [c64[2], c64[3, 2]], length=3, num_carry=1)
    assert CLAIM_PREDICATES["loop"](graph.nodes[0]) == "it carries complex values"
    _assert_bitwise(*_run(backend, graph)[:2])


def test_a_body_with_an_op_the_backend_does_not_claim_is_declined():
    body = GraphBuilder("step")
    h, x = body.input(f32[2]), body.input(f32[2])
    graph = _loop_graph(body.build([body.rem(h, x)]), [f32[2], f32[3, 2]], length=3, num_carry=1)
    assert CLAIM_PREDICATES["loop"](graph.nodes[0]).startswith(
        "its body holds rem in f32: Inductor's fmod gives NaN for a subnormal divisor")


def test_a_nested_loop_runs(backend):
    inner = GraphBuilder("inner")
    acc, x = inner.input(f32[2]), inner.input(f32[2])
    inner_step = inner.build([inner.add(acc, x)])
    outer = GraphBuilder("outer_step")
    h, rows = outer.input(f32[2]), outer.input(f32[3, 2])
    summed = outer.loop(h, rows, body=inner_step, length=3, num_carry=1)
    graph = _loop_graph(outer.build([summed, summed]), [f32[2], f32[4, 3, 2]], length=4, num_carry=1)
    _assert_bitwise(*_run(backend, graph)[:2])


def test_a_32_step_lax_scan_rnn_from_jax_equals_jax_jit():
    import jax
    import jax.numpy as jnp
    from jax import lax

    import parity.jax

    def rnn(w, u, h0, xs):
        def step(h, x):
            h = jnp.tanh(h @ w + x @ u)
            return h, h * 2.0

        return lax.scan(step, h0, xs)

    keys = jax.random.split(jax.random.PRNGKey(0), 4)
    args = (jax.random.normal(keys[0], (16, 16)) * 0.3, jax.random.normal(keys[1], (8, 16)) * 0.3,
            jax.random.normal(keys[2], (16,)), jax.random.normal(keys[3], (32, 8)))
    got = jax.tree_util.tree_leaves(parity.jax.jit(rnn, backend="inductor")(*args))
    want = jax.tree_util.tree_leaves(jax.jit(rnn)(*args))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)


def _lstm_like(length: int):
    body = GraphBuilder("step")
    w, h, x = body.input(f32[8, 8]), body.input(f32[2, 8]), body.input(f32[2, 8])
    mixed = body.dot_general(h, w, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,), lhs_batch_dims=(),
                             rhs_batch_dims=())
    # scaled by 0.1 so that the recurrence contracts: a 1-ULP difference of tanh does not grow over the steps
    tenth = body.broadcast_in_dim(body.constant(0.1, DType.float32), shape=(2, 8), broadcast_dimensions=())
    new = body.tanh(body.add(body.mul(mixed, tenth), x))
    return _loop_graph(body.build([new, body.logistic(new)]), [f32[8, 8], f32[2, 8], f32[length, 2, 8]],
                       length=length, num_consts=1, num_carry=1)


def test_default_threshold_unrolls_a_short_loop_and_rolls_a_long_one(backend):
    """Under the measured threshold a loop that unrolls into few nodes is unrolled (the predicate
    says why), and one past it runs rolled; both give the reference's numbers."""
    short, long = _lstm_like(4), _lstm_like(64)  # under and over the threshold unrolled
    (short_node,), (long_node,) = short.nodes, long.nodes
    why = CLAIM_PREDICATES["loop"](short_node)
    assert why is not None and f"at most {control.ROLLED_PAST_NODES}: unrolled" in why
    assert CLAIM_PREDICATES["loop"](long_node) is None
    assert not _rolled(short) and _rolled(long)
    for graph in (short, long):
        got, want, _ = _run(backend, graph)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
