"""The xla backend claims ``loop`` and runs it rolled (one ``lax.scan``, a ``while``): results
equal the reference's bit for bit where the body's ops are exact per op (sums, products,
maxima, counters), and the unrolled form's where they are not; one step is compiled
whatever the length; products stay out of fused sums inside the body."""

import jax
import numpy as np
import pytest
from jax import lax

from parity.backends.xla import XlaBackend, export_stablehlo, lowering
from parity.backends.xla.backend import COMPILER_OPTIONS
from parity.backends.xla.symbolic_export import export_symbolic
from parity.frontend.executables import prepare
from parity.ir import DType, GraphBuilder, Symbol, evaluate, f32, f64, i32
from parity.ir.ops.control import row_type
from parity.ir.passes import decompose

B = Symbol("B")


def looped(make, operand_types, *, num_consts=0, num_carry=0, length=None, reverse=False):
    """A graph of one loop over inputs of ``operand_types``, its body ``make(builder, *params)``."""
    n_fixed = num_consts + num_carry
    xs = operand_types[n_fixed:]
    body = GraphBuilder("step")
    params = [body.input(t) for t in [*operand_types[:n_fixed], *(row_type(x) for x in xs)]]
    step = body.build(list(make(body, *params)))
    b = GraphBuilder("looped")
    inputs = [b.input(t) for t in operand_types]
    outs = b.loop(*inputs, body=step, length=xs[0].shape[0] if xs else length, num_consts=num_consts,
                  num_carry=num_carry, reverse=reverse)
    return b.build(list(outs) if isinstance(outs, tuple) else [outs])


def unrolled(graph):
    return decompose(graph, claimed=lambda op: False)[0]


def exact(runner, contract, graph, args):
    """The xla outputs, checked bit for bit against the reference interpreter's."""
    got, want = runner.both(graph, args)
    assert len(got) == len(want)
    for i, (a, w) in enumerate(zip(got, want)):
        contract.assert_exact(np.asarray(a), w, what=f"output {i}")
    return [np.asarray(a) for a in got]


def running_sum(b, total, x):
    new = b.add(total, x)
    return new, new


def normal(rng, shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


# -- the reference's results ----------------------------------------------------------------------


@pytest.mark.parametrize("reverse", [False, True])
def test_a_running_sum_equals_the_reference(runner, contract, reverse):
    rng = np.random.default_rng(0)
    g = looped(running_sum, [f32[4], f32[6, 4]], num_carry=1, reverse=reverse)
    exact(runner, contract, g, [normal(rng, 4), normal(rng, (6, 4))])


def test_reverse_runs_from_the_last_row_and_writes_row_i_at_i(runner, contract):
    g = looped(running_sum, [i32[1], i32[4, 1]], num_carry=1, reverse=True)
    final, ys = exact(runner, contract, g, [np.zeros(1, np.int32), np.array([[1], [2], [3], [4]], np.int32)])
    assert final.tolist() == [10] and ys[:, 0].tolist() == [10, 9, 7, 4]
    forward = looped(running_sum, [i32[1], i32[4, 1]], num_carry=1)
    _, ys = exact(runner, contract, forward, [np.zeros(1, np.int32), np.array([[1], [2], [3], [4]], np.int32)])
    assert ys[:, 0].tolist() == [1, 3, 6, 10]


def test_zero_steps_return_the_carries_and_empty_ys(runner, contract):
    g = looped(running_sum, [f64[3], f64[0, 3]], num_carry=1)
    init = np.array([1.5, -0.0, np.nan])
    final, ys = exact(runner, contract, g, [init, np.zeros((0, 3))])
    assert ys.shape == (0, 3) and ys.dtype == np.float64
    assert np.signbit(final[1]) and np.isnan(final[2])


def test_one_step(runner, contract):
    rng = np.random.default_rng(1)
    g = looped(running_sum, [f32[3], f32[1, 3]], num_carry=1)
    init, xs = normal(rng, 3), normal(rng, (1, 3))
    final, ys = exact(runner, contract, g, [init, xs])
    np.testing.assert_array_equal(ys, (init + xs[0])[None])


def test_carries_of_different_dtypes_keep_their_order(runner, contract):
    def step(b, m, count, wide, half, x):  # a max (f32), a counter (i32), an f64 sum, a bf16 sum
        return (b.max(m, x), b.add(count, b.constant(1, DType.int32)), b.add(wide, b.convert(x, dtype=f64)),
                b.add(half, b.convert(x, dtype=DType.bfloat16)), b.mul(x, x))

    g = looped(step, [f32[4], i32[()], f64[4], DType.bfloat16[4], f32[7, 4]], num_carry=4)
    rng = np.random.default_rng(2)
    args = [np.full(4, -np.inf, np.float32), np.array(5, np.int32), np.zeros(4), np.zeros(4, DType.bfloat16.numpy),
            normal(rng, (7, 4))]
    got = exact(runner, contract, g, args)
    assert got[1] == 12 and [a.dtype for a in got] == [np.float32, np.int32, np.float64, DType.bfloat16.numpy,
                                                       np.float32]


def test_carries_without_ys(runner, contract):
    def step(b, total, product, x):
        return b.add(total, x), b.mul(product, x)

    g = looped(step, [f32[5], f32[5], f32[4, 5]], num_carry=2)
    rng = np.random.default_rng(3)
    assert len(exact(runner, contract, g, [normal(rng, 5), normal(rng, 5), normal(rng, (4, 5))])) == 2


def test_a_map_without_carries_reads_its_consts(runner, contract):
    g = looped(lambda b, scale, x: (b.mul(scale, x),), [f32[4], f32[3, 4]], num_consts=1)
    rng = np.random.default_rng(4)
    (ys,) = exact(runner, contract, g, [normal(rng, 4), normal(rng, (3, 4))])
    assert ys.shape == (3, 4)


def test_a_loop_without_xs_counts_its_length(runner, contract):
    def step(b, h):  # h' = 2h + 1: 2**5 - 1 after five steps from 0
        return (b.add(b.add(h, h), b.constant(np.ones(2, np.int32))),)

    g = looped(step, [i32[2]], num_carry=1, length=5)
    (final,) = exact(runner, contract, g, [np.zeros(2, np.int32)])
    assert final.tolist() == [31, 31]


def test_a_loop_inside_a_body(runner, contract):
    inner = looped(running_sum, [f32[3], f32[2, 3]], num_carry=1)

    def step(b, total, x):  # each row's running sum over a 2-row block, added to the total
        block = b.reshape(b.concatenate(x, x, dimension=0), shape=(2, 3))
        final, _ = b.loop(total, block, body=inner.nodes[0].attrs["body"], length=2, num_carry=1)
        return final, final

    g = looped(step, [f32[3], f32[4, 3]], num_carry=1)
    rng = np.random.default_rng(5)
    exact(runner, contract, g, [normal(rng, 3), normal(rng, (4, 3))])


# -- bodies the decompose pass and the driver reach into ---------------------------------------------


def _activations(b, w, h, x):  # an RNN step with an unclaimed composite (gelu) and a claimed one (softmax)
    product = b.dot_general(h, w, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,), lhs_batch_dims=(),
                            rhs_batch_dims=())
    new = b.gelu(b.add(product, x))
    return new, b.softmax(new, axis=1)


def test_a_body_with_composites_is_expanded_for_xla_and_equals_the_unrolled_loop():
    backend = XlaBackend()
    g = looped(_activations, [f32[4, 4], f32[3, 4], f32[6, 3, 4]], num_consts=1, num_carry=1)
    prepared = prepare(g, backend)
    assert [n.op for n in prepared.nodes] == ["loop"]  # claimed: kept whole
    body_ops = prepared.nodes[0].attrs["body"].op_counts()
    assert "gelu" not in body_ops and "erf" in body_ops and "softmax" in body_ops  # xla claims softmax only
    rng = np.random.default_rng(6)
    args = [normal(rng, (4, 4)) * 0.5, normal(rng, (3, 4)), normal(rng, (6, 3, 4))]
    rolled = backend.compile(prepared, "cpu")(*args)
    flat = backend.compile(prepare(unrolled(g), backend), "cpu")(*args)
    for got, want, ref in zip(rolled, flat, evaluate(g, args)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        np.testing.assert_allclose(np.asarray(got), ref, rtol=2e-6, atol=1e-7)


def test_an_expanded_softmax_in_a_body_still_runs():
    # The plain-max proof (composites.with_plain_maxes) looks at the top graph only; a body holding
    # the decomposed softmax pattern is lowered with the NaN-checking max, as it was unrolled.
    def step(b, h, x):
        new = b.add(h, x)
        return new, b.softmax(new, axis=0)

    g = looped(step, [f32[5], f32[3, 5]], num_carry=1)
    expanded = decompose(g, claimed=lambda op: op == "loop")[0]
    assert "reduce_max" in expanded.nodes[0].attrs["body"].op_counts()
    args = [np.array([0, 1, np.nan, -np.inf, 2], np.float32), np.ones((3, 5), np.float32)]
    got = XlaBackend().compile(expanded, "cpu")(*args)
    want = XlaBackend().compile(unrolled(g), "cpu")(*args)
    for a, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(w))
    assert np.isnan(np.asarray(got[1])).all()


def test_unlowered_nodes_looks_inside_bodies(monkeypatch):
    g = looped(lambda b, h, x: (b.tanh(b.add(h, x)),), [f32[2], f32[3, 2]], num_carry=1)
    assert lowering.unlowered_nodes(g) == []
    monkeypatch.delitem(lowering.LOWERINGS, "tanh")
    assert [n.op for n in lowering.unlowered_nodes(g)] == ["tanh"]


def test_loop_is_claimed_in_every_dtype_it_has():
    from parity.ir.ops import OP_TABLE

    assert XlaBackend().claims()["loop"].dtypes == frozenset(OP_TABLE["loop"].dtypes)


# -- symbolic sizes --------------------------------------------------------------------------------


def _scaled_sum(b, a, h, x):  # h' = a*h + x over rows of B
    new = b.add(b.mul(a, h), x)
    return new, b.mul(new, new)


def test_a_body_with_symbolic_dims_compiles_per_shape_and_equals_the_reference(runner, contract):
    g = looped(_scaled_sum, [f32[B, 4], f32[B, 4], f32[5, B, 4]], num_consts=1, num_carry=1)
    rng = np.random.default_rng(7)
    for rows in (1, 3):
        exact(runner, contract, g, [normal(rng, (rows, 4)), normal(rng, (rows, 4)), normal(rng, (5, rows, 4))])


def test_symbolic_export_keeps_the_loop_rolled_and_the_dims_symbolic():
    def step(b, floor, h, x):  # exact per op: export has no product guard (XLA may fuse FMAs there)
        new = b.add(b.max(floor, h), x)
        return new, new

    g = looped(step, [f32[B, 4], f32[B, 4], f32[5, B, 4]], num_consts=1, num_carry=1)
    exported = export_symbolic(g, {"B": "batch"})
    text = exported.mlir_module()
    assert "stablehlo.while" in text and "tensor<?x4xf32>" in text
    rng = np.random.default_rng(8)
    args = [normal(rng, (6, 4)), normal(rng, (6, 4)), normal(rng, (5, 6, 4))]
    for got, want in zip(exported.call(*args), evaluate(g, args)):
        np.testing.assert_array_equal(np.asarray(got), want)


# -- rolled ----------------------------------------------------------------------------------------


def _affine(length):
    return looped(_scaled_sum, [f32[4], f32[4], f32[length, 4]], num_consts=1, num_carry=1)


def test_the_loop_is_lowered_to_one_while_whatever_its_length():
    assert "stablehlo.while" in export_stablehlo(_affine(8))
    sizes = []
    for length in (8, 64):
        hlo = XlaBackend().compile(_affine(length), "cpu").hlo_text()
        assert hlo.count(" while(") == 1
        sizes.append(len(hlo))
    assert sizes[1] < 1.2 * sizes[0]  # unrolled, the 64-step module is ~90x the 8-step one's


# -- products kept out of fused sums inside the body -----------------------------------------------

N = 64


def _cancelling(rng, length):
    """a, rows x and rows z = fl(a*x): a*x - z is 0 with the product rounded, its rounding
    error under a fused multiply-add."""
    a, x = normal(rng, N), normal(rng, (length, N))
    return a, x, a * x


@pytest.mark.parametrize("length", [1, 3])
def test_a_product_summed_inside_the_body_is_rounded_first(runner, contract, length):
    g = looped(lambda b, a, x, z: (b.sub(b.mul(a, x), z),), [f32[N], f32[length, N], f32[length, N]],
               num_consts=1)
    args = _cancelling(np.random.default_rng(9), length)
    (ys,) = exact(runner, contract, g, list(args))
    assert not ys.any()


def test_a_product_the_body_returns_is_rounded_before_the_sum_after_the_loop(runner, contract):
    # XLA inlines a one-step while, so the product met the subtraction below in one fusion.
    b = GraphBuilder("returned")
    a, xs, z = b.input(f32[N]), b.input(f32[1, N]), b.input(f32[1, N])
    body = looped(lambda s, a, x: (s.mul(a, x),), [f32[N], f32[1, N]], num_consts=1).nodes[0].attrs["body"]
    ys = b.loop(a, xs, body=body, length=1, num_consts=1)
    g = b.build([b.sub(ys, z)])
    (diff,) = exact(runner, contract, g, list(_cancelling(np.random.default_rng(10), 1)))
    assert not diff.any()


def test_xla_alone_fuses_the_product_in_a_scan():
    # What the guard is for: jax.jit's scan of the same step returns the products' rounding errors.
    a, x, z = _cancelling(np.random.default_rng(9), 3)

    def scan(a, x, z):
        return lax.scan(lambda c, r: (c, a * r[0] - r[1]), 0, (x, z))[1]

    fused = jax.jit(scan).lower(a, x, z).compile(COMPILER_OPTIONS["cpu"])
    assert (np.asarray(fused(a, x, z)) != 0).mean() > 0.5
