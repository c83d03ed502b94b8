"""Symbolic dims on the Triton backend: one kernel set per graph, sizes as kernel
arguments (backends/triton/symbolic.py), and the per-shape fallback for the ops that
cannot take them, counted through ``TritonBackend.generations``."""

from __future__ import annotations

import ast

import numpy as np
import pytest

from parity.backends.triton import TritonBackend, TritonOptions, symbolic
from parity.backends.triton.program import module_source
from parity.backends.triton.schedule import Options, Scheduler
from parity.ir import DType, GraphBuilder, Symbol, evaluate, f32
from parity.ir.errors import ParityError

from .conftest import graph_of, oracle, to_numpy

B, S = Symbol("B"), Symbol("S")
SIZES = [(1, 1), (2, 7), (7, 33), (33, 2)]


@pytest.fixture
def fresh(tmp_path) -> TritonBackend:
    """A backend of its own, so its generation count starts at 0."""
    return TritonBackend(TritonOptions(interpret=True, cache_dir=tmp_path))


def _chain_graph():
    # an elementwise chain, a reduction over the (static) last axis and reshapes
    b = GraphBuilder("chain")
    x, bias = b.input(f32[B, S, 32]), b.input(f32[32])
    y = b.tanh(b.add(b.mul(x, x), b.broadcast_in_dim(bias, shape=(B, S, 32), broadcast_dimensions=(2,))))
    total = b.reduce_sum(y, axes=(2,))
    flat = b.reshape(b.exp(y), shape=(B * S, 32))
    turned = b.transpose(b.reshape(y, shape=(B, S * 32)), permutation=(1, 0))
    return b.build([total, flat, turned])


def _small_ints(rng, shape):
    """Float operands whose products and sums are exact in float32: dots then match the
    reference whatever their accumulation order (tiles depend on the sizes)."""
    return rng.integers(-3, 4, size=shape).astype(np.float32)


def _check(exe, graph, inputs):
    got = exe(*inputs)
    want = evaluate(graph, inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(to_numpy(g), w, rtol=2e-6, atol=2e-6)


def test_one_kernel_set_serves_every_size(fresh):
    graph = _chain_graph()
    exe = fresh.compile(graph, "cpu")
    assert exe.generic and exe.fallback is None
    assert fresh.generations == 1  # generated at compile time, before any call
    sources = dict(exe.kernel_sources)
    bias = np.linspace(-1, 1, 32).astype(np.float32)
    for i, (batch, seq) in enumerate(SIZES):
        x = np.random.default_rng(i).normal(size=(batch, seq, 32)).astype(np.float32)
        _check(exe, graph, [x, bias])
    assert fresh.generations == 1
    assert exe.kernel_sources == sources
    for source in sources.values():
        assert "@triton.jit(do_not_specialize=" in source and "size_B" in source


def test_expression_dims_are_kernel_arguments(fresh):
    # an input dim that is an expression (S*2) and a reshape that splits it
    graph = graph_of(lambda b, x: b.reshape(b.neg(x), shape=(B, S, 2)), f32[B, S * 2])
    exe = fresh.compile(graph, "cpu")
    assert exe.generic
    for i, (batch, seq) in enumerate(SIZES):
        _check(exe, graph, [np.random.default_rng(i).normal(size=(batch, seq * 2)).astype(np.float32)])
    assert fresh.generations == 1


def test_static_graphs_take_no_size_arguments(fresh):
    graph = graph_of(lambda b, x: b.reduce_sum(b.tanh(x), axes=(1,)), f32[3, 32])
    exe = fresh.compile(graph, "cpu")
    assert not exe.generic and exe.fallback is None
    assert "size_" not in exe.source and "do_not_specialize" not in exe.source
    assert "def run(inputs, constants, device):" in exe.source


@pytest.mark.parametrize("batch_dims", [False, True], ids=["linear", "batched"])
def test_dots_take_symbolic_extents(fresh, batch_dims):
    # a linear layer over B*S rows with a bias and gelu epilogue, or a batched [B,S,8] @ [B,8,S]
    if batch_dims:
        graph = graph_of(lambda b, x, y: b.dot_general(x, y, lhs_contracting_dims=(2,), rhs_contracting_dims=(1,),
                                                       lhs_batch_dims=(0,), rhs_batch_dims=(0,)),
                         f32[B, S, 8], f32[B, 8, S])
    else:
        def linear(b, x, w, bias):
            y = b.dot_general(b.reshape(x, shape=(B * S, 8)), w, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,),
                              lhs_batch_dims=(), rhs_batch_dims=())
            return b.tanh(b.add(y, b.broadcast_in_dim(bias, shape=(B * S, 3), broadcast_dimensions=(1,))))
        graph = graph_of(linear, f32[B, S, 8], f32[8, 3], f32[3])
    exe = fresh.compile(graph, "cpu")
    assert exe.generic
    rng = np.random.default_rng(3)
    for batch, seq in SIZES:
        x = _small_ints(rng, (batch, seq, 8))
        rest = [_small_ints(rng, (batch, 8, seq))] if batch_dims else [_small_ints(rng, (8, 3)), _small_ints(rng, (3,))]
        _check(exe, graph, [x, *rest])
    assert fresh.generations == 1


def test_a_symbolic_contraction_loops_to_its_run_time_length(fresh):
    graph = graph_of(lambda b, x, y: b.dot_general(x, y, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,),
                                                   lhs_batch_dims=(), rhs_batch_dims=()), f32[B, S * 40], f32[S * 40, 3])
    exe = fresh.compile(graph, "cpu")
    assert exe.generic and "for k0 in range(0, (size_S*40), 64):" in exe.source
    rng = np.random.default_rng(4)
    for batch, seq in SIZES:
        _check(exe, graph, [_small_ints(rng, (batch, seq * 40)), _small_ints(rng, (seq * 40, 3))])
    assert fresh.generations == 1



def test_a_static_result_contracted_over_a_symbolic_dim_gets_its_size(fresh):
    # a weight gradient's shape: [B, 5] x [B, 3] -> [5, 3], the grid static, the loop's length B per call
    graph = graph_of(lambda b, x, y: b.dot_general(x, y, lhs_contracting_dims=(0,), rhs_contracting_dims=(0,),
                                                   lhs_batch_dims=(), rhs_batch_dims=()), f32[B, 5], f32[B, 3])
    exe = fresh.compile(graph, "cpu")
    assert exe.generic and "size_B" in exe.source
    rng = np.random.default_rng(5)
    for batch in (1, 9, 70):
        _check(exe, graph, [_small_ints(rng, (batch, 5)), _small_ints(rng, (batch, 3))])
    assert fresh.generations == 1

def test_index_ops_read_symbolic_sizes(fresh):
    # slice to a symbolic limit, reverse and concatenate along S, iota, gather with
    # clamped indices along a symbolic axis, dynamic_slice/update with clamped starts
    def index_ops(b, x, i, start):
        tail = b.slice(x, start_indices=(0, 1), limit_indices=(B, S * 2), strides=(1, 1))
        both = b.concatenate(b.reverse(tail, dimensions=(1,)), x, dimension=1)
        ramp = b.iota(dtype=DType.float32, shape=(B, S * 4 - 1), dimension=1)
        picked = b.gather(x, i, axis=1)
        window = b.dynamic_slice(x, start, b.constant(np.int64(1)), slice_sizes=(B, 2))
        patched = b.dynamic_update_slice(x, b.neg(window), start, start)
        return b.add(both, ramp), picked, patched
    graph = graph_of(index_ops, f32[B, S * 2], DType.int32[B, 3], DType.int64[()])
    exe = fresh.compile(graph, "cpu")
    assert exe.generic
    rng = np.random.default_rng(6)
    for batch, seq in SIZES:
        x = rng.normal(size=(batch, seq * 2)).astype(np.float32)
        i = rng.integers(-2, seq * 2 + 2, size=(batch, 3)).astype(np.int32)
        _check(exe, graph, [x, i, np.int64(rng.integers(-1, 3))])
    assert fresh.generations == 1


def test_pads_and_windows_read_symbolic_sizes(fresh):
    # pads of symbolic axes; windows over a static axis (the IR allows only trivial
    # windows over symbolic dims) of a tensor with symbolic dims
    def pads_and_windows(b, x, y, fill):
        padded = b.pad(x, fill, edge_padding_low=(1, -1), edge_padding_high=(0, 2), interior_padding=(0, 1))
        pooled = b.reduce_window(y, kind="max", window_dimensions=(1, 1, 3), window_strides=(1, 1, 2),
                                 padding=((0, 0), (0, 0), (1, 1)), window_dilations=(1, 1, 2))
        summed = b.reduce_window(y, kind="sum", window_dimensions=(1, 1, 2), window_strides=(1, 1, 2),
                                 padding=((0, 0), (0, 0), (1, 0)), window_dilations=(1, 1, 1))
        return padded, pooled, summed
    graph = graph_of(pads_and_windows, f32[B, S * 2], f32[B, S, 7], f32[()])
    exe = fresh.compile(graph, "cpu")
    assert exe.generic
    rng = np.random.default_rng(7)
    for batch, seq in SIZES:
        x, y = _small_ints(rng, (batch, seq * 2)), _small_ints(rng, (batch, seq, 7))  # exact window sums
        _check(exe, graph, [x, y, np.float32(-5)])
    assert fresh.generations == 1


def test_extern_ops_take_symbolic_sizes(fresh):
    # torch reads the sizes from the tensors; convolution's output shape comes from the sizes
    def externs(b, x, image, kernel):
        scanned = b.exp(b.cumsum(x, axis=1, reverse=False))
        ordered, _ = b.sort(b.neg(x), axis=1, descending=False)
        conv = b.convolution(image, kernel, window_strides=(1, 1), padding=((1, 1), (0, 0)), lhs_dilation=(1, 1),
                             rhs_dilation=(1, 1), feature_group_count=1)
        return scanned, ordered, b.tanh(conv)
    graph = graph_of(externs, f32[B, S], f32[B, 2, 5, 4], f32[3, 2, 3, 3])
    exe = fresh.compile(graph, "cpu")
    assert exe.generic and exe.externs_per_call == 3
    rng = np.random.default_rng(8)
    kernel = _small_ints(rng, (3, 2, 3, 3))
    for batch, seq in SIZES:
        _check(exe, graph, [_small_ints(rng, (batch, seq)), _small_ints(rng, (batch, 2, 5, 4)), kernel])
    assert fresh.generations == 1


def test_an_op_not_known_to_take_sizes_falls_back_per_shape(fresh, monkeypatch):
    # plant an op outside symbolic.py's tables (as a primitive added later would be):
    # its graphs get a module per concrete shape, counted, and stay correct
    monkeypatch.setattr(symbolic, "RUNTIME_SIZE_OPS", symbolic.RUNTIME_SIZE_OPS - {"transpose"})
    graph = graph_of(lambda b, x: b.exp(b.transpose(x, permutation=(1, 0))), f32[B, 8])
    exe = fresh.compile(graph, "cpu")
    assert not exe.generic and "transpose has symbolic dims" in exe.fallback
    assert fresh.generations == 0
    with pytest.raises(ParityError, match="call it once"):
        exe.plan  # noqa: B018
    for i, rows in enumerate((2, 5, 2)):
        _check(exe, graph, [np.random.default_rng(i).normal(size=(rows, 8)).astype(np.float32)])
    assert fresh.generations == 2  # one per new shape; the repeated shape reuses its module
    assert "specialized for f32[2,8]" in exe.explain()


@pytest.mark.parametrize("op", ["reduce_max", "reduce_sum", "argmax"])
def test_rows_of_symbolic_length_take_their_blocks_per_call(fresh, op):
    graph = graph_of(lambda b, x: b.op(op, b.exp(x), **({"axis": 1} if op == "argmax" else {"axes": (1,)})),
                     f32[B, S])
    exe = fresh.compile(graph, "cpu")
    assert exe.generic and "RBLOCK: tl.constexpr" in exe.source
    for i, (batch, seq) in enumerate([*SIZES, (3, 0)] if op != "argmax" else SIZES):
        _check(exe, graph, [np.random.default_rng(i).normal(size=(batch, seq)).astype(np.float32)])
    assert fresh.generations == 1


def test_attention_over_a_symbolic_sequence_is_one_kernel_set(fresh):
    # scores = q @ k^T * scale, softmax over S (a row of symbolic length), @ v
    def attention(b, q, k, v):
        scores = b.dot_general(q, k, lhs_contracting_dims=(2,), rhs_contracting_dims=(2,), lhs_batch_dims=(0,),
                               rhs_batch_dims=(0,))
        scale = b.broadcast_in_dim(b.constant(np.float32(0.25)), shape=(B, S, S), broadcast_dimensions=())
        weights = b.softmax(b.mul(scores, scale), axis=2)
        return b.dot_general(weights, v, lhs_contracting_dims=(2,), rhs_contracting_dims=(1,), lhs_batch_dims=(0,),
                             rhs_batch_dims=(0,))
    graph = graph_of(attention, f32[B, S, 16], f32[B, S, 16], f32[B, S, 16])
    exe = fresh.compile(graph, "cpu")
    assert exe.generic
    rng = np.random.default_rng(5)
    for batch, seq in SIZES:
        q, k, v = (_small_ints(rng, (batch, seq, 16)) for _ in range(3))
        got = to_numpy(exe(q, k, v)[0]).astype(np.float64)
        (want,) = oracle(graph, [q, k, v])
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(v).max())
    assert fresh.generations == 1


def test_cuda_source_for_a_symbolic_graph_is_valid_python():
    # no GPU needed: the CUDA module's text (libdevice, size arguments opting out of
    # Triton's value specialization) parses, and the host passes the sizes it reads
    plan = Scheduler(_chain_graph(), Options(), cuda=True).plan()
    source = module_source(plan, cuda=True)
    ast.parse(source)
    assert "from triton.language.extra import libdevice" in source
    assert "def run(inputs, constants, device, sizes):" in source
    assert "size_B = sizes['B']" in source and "size_S = sizes['S']" in source
    assert source.count("@triton.jit(do_not_specialize=['size_B', 'size_S'])") == plan.kernels_per_call
