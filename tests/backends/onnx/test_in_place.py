"""Outputs written into the memory of the input they update (backends/onnx/executable.py:
writable_inputs, OnnxExecutable.in_place): a static KV cache's scatter, computed in place."""

import numpy as np
import torch

from parity.backends.onnx.backend import OnnxBackend
from parity.backends.onnx.executable import writable_inputs
from parity.backends.onnx.lowering import to_model
from parity.ir import GraphBuilder, f32, i64


def _cache_step(*, read_old: bool = False):
    """out0 = cache with row ``at`` replaced by ``row``; out1 = a value read after the update
    (out0 * 2), or, with ``read_old``, a value of the cache before it (cache * out0: a node
    that must run after the scatter and reads the old cache)."""
    b = GraphBuilder()
    cache, at, row = b.input(f32[4, 3]), b.input(i64[1, 3]), b.input(f32[1, 3])
    new = b.scatter(cache, at, row, axis=0, reduce="replace")
    other = b.mul(cache, new) if read_old else b.add(new, new)
    return b.build([new, other])


def _inputs(k: int):
    cache = torch.arange(12, dtype=torch.float32).reshape(4, 3)
    return cache, torch.full((1, 3), k, dtype=torch.int64), torch.full((1, 3), -1.5 - k)


def test_a_scatter_into_an_input_nothing_else_reads_may_write_into_it():
    assert writable_inputs(to_model(_cache_step())) == {0: 0}
    assert writable_inputs(to_model(_cache_step(read_old=True))) == {}  # the Mul reads the old cache


def test_in_place_outputs_are_the_input_tensors_updated_like_the_plain_call():
    graph = _cache_step()
    plain = OnnxBackend().compile(graph, "cpu")
    run = plain.in_place({0: 0})
    assert run is not None
    cache = _inputs(0)[0]
    for k in (1, 3, 0, 3):  # one cache, bound once, updated call after call
        _, at, row = _inputs(k)
        want = plain(cache.clone(), at, row)
        out = run(cache, at, row)
        assert out[0] is cache and torch.equal(cache, torch.from_numpy(want[0]))
        assert np.array_equal(out[1], want[1])
    assert cache[:, 0].tolist() == [-1.5, -2.5, 6.0, -4.5]


def test_a_new_cache_tensor_is_bound_again_and_the_old_one_left_alone():
    run = OnnxBackend().compile(_cache_step(), "cpu").in_place({0: 0})
    first, at, row = _inputs(1)
    run(first, at, row)
    kept = first.clone()
    second = torch.zeros(4, 3)
    out = run(second, *_inputs(2)[1:])
    assert out[0] is second and torch.equal(first, kept)
    assert second[2].tolist() == [-3.5] * 3 and second.abs().sum() == 10.5


def test_an_input_that_is_not_a_plain_tensor_takes_the_ordinary_call():
    run = OnnxBackend().compile(_cache_step(), "cpu").in_place({0: 0})
    cache = np.arange(12, dtype=np.float32).reshape(4, 3)
    out = run(cache, *_inputs(1)[1:])
    assert isinstance(out[0], np.ndarray) and cache[1, 0] == 3.0  # the caller's array untouched
    assert out[0][1].tolist() == [-2.5] * 3
    strided = torch.arange(24, dtype=torch.float32).reshape(4, 6)[:, ::2]
    assert not isinstance(run(strided, *_inputs(1)[1:])[0], torch.Tensor)


def test_no_in_place_call_where_no_pair_is_writable():
    plain = OnnxBackend().compile(_cache_step(read_old=True), "cpu")
    assert plain.in_place({0: 0}) is None
    assert OnnxBackend().compile(_cache_step(), "cpu").in_place({1: 0}) is None  # out1 is no scatter
