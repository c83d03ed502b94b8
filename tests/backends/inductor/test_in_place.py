"""Outputs computed into the input they update on inductor (backends/inductor/in_place.py,
InductorExecutable.in_place): a static KV cache's scatter writes one position into the cache."""

import re

import numpy as np
import torch

from parity.backends.inductor.backend import InductorBackend
from parity.backends.inductor.compiling import in_fresh_thread, inductor_compile
from parity.backends.inductor.in_place import writable_outputs, write_into_inputs
from parity.backends.inductor.lowering import to_fx
from parity.backends.reference import ReferenceBackend
from parity.ir import GraphBuilder, Symbol, f32, i64

CACHE = (1, 4, 64, 8)  # batch, heads, positions, head dim


def _cache_step(*, read_old: bool = False, positions=1):
    """out0 = the cache with ``positions`` positions along dim 2 replaced; out1 = a value read
    after the update (out0 * 2), or, with ``read_old``, one of the cache before it (cache * out0)."""
    b = GraphBuilder("step")
    cache, at = b.input(f32[CACHE]), b.input(i64[1, 4, positions, 8])
    new = b.input(f32[1, 4, positions, 8])
    updated = b.scatter(cache, at, new, axis=2, reduce="replace")
    other = b.mul(cache, updated) if read_old else b.add(updated, updated)
    return b.build([updated, other])


def _inputs(position: int, positions=1, seed=0):
    g = torch.Generator().manual_seed(seed)
    cache = torch.randn(CACHE, generator=g)
    at = torch.arange(position, position + positions).reshape(1, 1, positions, 1).expand(1, 4, positions, 8)
    return cache, at.contiguous(), torch.randn(1, 4, positions, 8, generator=g)


def _reference(graph, *tensors):
    return [np.asarray(r) for r in ReferenceBackend().compile(graph, "cpu")(*[t.numpy() for t in tensors])]


def test_only_scatters_into_an_input_are_offered():
    assert writable_outputs(_cache_step()) == {0: 0}
    b = GraphBuilder()
    x = b.input(f32[4])
    assert writable_outputs(b.build([b.neg(x), x])) == {}  # an input returned as it is is no update


def test_the_cache_is_updated_in_its_own_memory_with_the_plain_calls_numbers():
    backend = InductorBackend()
    plain = backend.compile(_cache_step(), "cpu")
    run = plain.in_place({0: 0})
    assert run is not None and backend.compile_count == 1  # the plain form was never compiled
    cache = _inputs(0)[0]
    memory = cache.data_ptr()
    for position in (3, 0, 63, 3):
        _, at, new = _inputs(position, seed=position)
        want = _reference(_cache_step(), cache.clone(), at, new)
        out = run(cache, at, new)
        assert out[0] is cache and cache.data_ptr() == memory
        assert np.array_equal(cache.numpy(), want[0]) and np.array_equal(out[1].numpy(), want[1])


def test_a_node_reading_the_old_cache_after_the_update_still_reads_the_old_values():
    graph = _cache_step(read_old=True)
    run = InductorBackend().compile(graph, "cpu").in_place({0: 0})
    cache, at, new = _inputs(5)
    want = _reference(graph, cache.clone(), at, new)
    out = run(cache, at, new)
    assert out[0] is cache
    assert np.array_equal(cache.numpy(), want[0]) and np.array_equal(out[1].numpy(), want[1])


def test_inductors_code_writes_the_positions_into_the_cache_and_allocates_no_new_cache():
    """Inductor's reinplacing pass turned copy_(cache, index_put(cache, ...)) into index_put_:
    the generated code has no buffer of the cache's size. Without the copy_ epilogue (the plain
    graph) it has one, and copies the whole cache into it."""
    b = GraphBuilder("step")
    cache, at, new = b.input(f32[CACHE]), b.input(i64[1, 4, 1, 8]), b.input(f32[1, 4, 1, 8])
    updated = b.scatter(cache, at, new, axis=2, reduce="replace")
    graph = b.build([updated, b.reduce_sum(updated, axes=(2,))])  # the other output: [1, 4, 8]

    def code(writes):
        fx = to_fx(graph, [CACHE, (1, 4, 1, 8), (1, 4, 1, 8)])
        write_into_inputs(fx.module, writes)
        run = in_fresh_thread(inductor_compile, fx.module, [*fx.examples, *fx.constants])
        cache, at, new = _inputs(7)
        run([cache, at, new, *fx.constants])  # the first call, through AOTAutograd's wrapper
        return run._inner.source_code

    allocates_a_cache = re.compile(r"empty_strided_\w+\(\(1, 4, 64, 8\)")
    assert not allocates_a_cache.search(code({0: 0}))
    assert allocates_a_cache.search(code({}))


def test_a_symbolic_number_of_positions_is_written_in_place_by_one_dynamic_kernel():
    b = GraphBuilder("prefill")
    s = Symbol("S")
    cache, at, new = b.input(f32[CACHE]), b.input(i64[1, 4, s, 8]), b.input(f32[1, 4, s, 8])
    updated = b.scatter(cache, at, new, axis=2, reduce="replace")
    graph = b.build([updated, b.reduce_sum(updated, axes=(3,))])
    backend = InductorBackend()
    run = backend.compile(graph, "cpu").in_place({0: 0})
    cache = _inputs(0)[0]
    for start, count in ((0, 5), (5, 3), (8, 6)):
        _, at, new = _inputs(start, count, seed=start)
        want = _reference(graph, cache.clone(), at, new)
        out = run(cache, at, new)
        assert out[0] is cache and np.array_equal(cache.numpy(), want[0])
        # a sum of 8 in another order: within recursive summation's bound, n·eps·sum|x|
        bound = 8 * np.finfo(np.float32).eps * np.abs(want[0]).sum(axis=3)
        assert np.all(np.abs(out[1].numpy() - want[1]) <= bound)
    assert backend.compile_count == 1


def test_an_input_that_is_not_contiguous_is_updated_in_a_copy_that_is_returned():
    run = InductorBackend().compile(_cache_step(), "cpu").in_place({0: 0})
    wide = torch.zeros(1, 4, 64, 16)
    cache = wide[..., :8]  # a view with a row stride of 16
    _, at, new = _inputs(2)
    out = run(cache, at, new)
    assert out[0] is not cache and torch.equal(out[0][0, :, 2], new[0, :, 0])
    assert wide.abs().sum() == 0  # the caller's tensor is the caller's to write back (AOTAutograd does)


def test_a_scatter_into_a_broadcast_value_writes_every_row():
    """Inductor's index_put into an expanded operand wrote every row into its one element
    (torch 2.13; torch.compile of the same index_put too): the rule lays it out densely first."""
    b = GraphBuilder("fresh_cache")
    at, new = b.input(i64[1, 4, 5, 8]), b.input(f32[1, 4, 5, 8])
    zeros = b.broadcast_in_dim(b.constant(np.array(0.0, np.float32)), shape=CACHE, broadcast_dimensions=())
    graph = b.build([b.scatter(zeros, at, new, axis=2, reduce="replace")])
    _, at, new = _inputs(10, 5)
    (got,) = InductorBackend().compile(graph, "cpu")(at, new)
    np.testing.assert_array_equal(got.numpy(), _reference(graph, at, new)[0])
    assert torch.count_nonzero(got) == new.numel()
