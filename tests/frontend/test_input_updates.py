"""Inputs updated in place (frontend/input_updates.py): a static cache's new value is computed
into the cache's own memory where the executable can (onnx), and nothing changes for the user."""

import pytest
import torch

import parity
from parity.backends.inductor.backend import InductorExecutable
from parity.backends.onnx.executable import OnnxExecutable
from parity.frontend import compiled_graph


@pytest.fixture
def in_place_runs(monkeypatch):
    """How many onnx calls wrote an output into its input's memory."""
    torch._dynamo.reset()
    compiled_graph.reset_caches()
    calls = []
    original = OnnxExecutable._run_in_place
    monkeypatch.setattr(OnnxExecutable, "_run_in_place", lambda self, *a: calls.append(1) or original(self, *a))
    yield calls
    torch._dynamo.reset()


class StaticCache(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("cache", torch.zeros(6, 4))

    def forward(self, x, position):
        self.cache.index_copy_(0, position, x)
        return self.cache.sum(0) * 2


def test_a_static_cache_is_updated_in_its_own_memory_as_eager_updates_it(in_place_runs):
    _steps_keep_the_cache_where_it_is_with_eagers_numbers("onnx")
    assert len(in_place_runs) >= 3


def _steps_keep_the_cache_where_it_is_with_eagers_numbers(backend: str) -> None:
    eager, module = StaticCache(), StaticCache()
    compiled = parity.compile(module, backend=backend)
    memory = module.cache.data_ptr()
    for step in range(4):
        x, position = torch.randn(1, 4), torch.tensor([step])
        assert torch.equal(compiled(x, position), eager(x, position))
        assert torch.equal(module.cache, eager.cache)
    assert module.cache.data_ptr() == memory


def test_a_value_read_after_the_update_from_the_old_input_is_the_old_value(in_place_runs):
    def step(cache, position, x):
        old = cache.clone()
        cache.index_copy_(0, position, x)
        return old * cache  # reads the cache before and after the update

    cache, position, x = torch.arange(24.0).reshape(6, 4), torch.tensor([2]), torch.full((1, 4), -1.0)
    want_cache = cache.clone()
    want = step(want_cache, position, x)
    assert torch.equal(parity.compile(step, backend="onnx")(cache, position, x), want)
    assert torch.equal(cache, want_cache)
    assert in_place_runs == []  # the Mul reads the old cache after the scatter: not written in place


def test_an_updated_input_also_returned_is_returned_as_a_tensor_of_its_own(in_place_runs):
    def step(cache, position, x):
        cache.index_copy_(0, position, x)
        return cache.clone()

    compiled = parity.compile(step, backend="onnx")
    cache = torch.zeros(6, 4)
    first = compiled(cache, torch.tensor([1]), torch.ones(1, 4))
    kept = first.clone()
    compiled(cache, torch.tensor([3]), torch.ones(1, 4))
    assert first.data_ptr() != cache.data_ptr() and torch.equal(first, kept)
    assert cache[:, 0].tolist() == [0, 1, 0, 1, 0, 0]
    assert in_place_runs  # the clone is an output of its own: the cache itself is written in place


def test_on_inductor_the_compiled_kernel_writes_the_cache_in_its_own_memory(monkeypatch):
    """InductorExecutable.in_place: the compiled graph ends in copy_(cache, new) and returns the
    cache itself (backends/inductor/in_place.py); the user's buffer holds eager's numbers."""
    torch._dynamo.reset()
    compiled_graph.reset_caches()
    variants = []
    original = InductorExecutable.in_place
    monkeypatch.setattr(InductorExecutable, "in_place", lambda self, pairs: variants.append(original(self, pairs))
                        or variants[-1])
    _steps_keep_the_cache_where_it_is_with_eagers_numbers("inductor")
    assert variants and all(v is not None and v._writes for v in variants)
    torch._dynamo.reset()
