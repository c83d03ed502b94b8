"""Random draws at sizes that change: dropout, rand_like and randn_like in a graph captured with
a symbolic batch draw the same threefry bits as the static graph of each size (the counter is
the element's flat index), so one capture serves every batch size and the numbers are those of
dynamic=False under the same seed, bit for bit (ir/ops/random.py)."""

import warnings

import pytest
import torch
from torch._dynamo.utils import counters

import parity
from parity.backends.registry import get_backend
from parity.frontend.graph_breaks import GraphBreakWarning

BATCHES = (2, 3, 5)


def _dropout_mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Dropout(0.5), torch.nn.Linear(8, 2))


def _noisy(x):
    return x + torch.rand_like(x) * torch.randn_like(x)


def _same_bits_as_static(fn, backend, make_input):
    """fn compiled with the default (automatic dynamic) against dynamic=False, under the same
    seed at each batch size: the outputs (and gradients, for a module) equal bit for bit."""
    if "cpu" not in get_backend(backend).available_devices():
        pytest.skip(f"backend {backend!r} has no CPU device in this process (triton: TRITON_INTERPRET=1)")
    torch._dynamo.reset()
    counters.clear()
    dynamic = parity.compile(fn, backend=backend, cache_dir=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", GraphBreakWarning)  # a per-shape fallback would warn
        outputs = []
        for batch in BATCHES:
            x = make_input(batch)
            torch.manual_seed(batch)
            outputs.append(dynamic(x))
    assert counters["stats"]["unique_graphs"] == 2  # the first size static, then one symbolic capture
    torch._dynamo.reset()
    static = parity.compile(fn, backend=backend, cache_dir=False, dynamic=False)
    for batch, got in zip(BATCHES, outputs):
        x = make_input(batch)
        torch.manual_seed(batch)
        torch.testing.assert_close(got, static(x), rtol=0, atol=0)


@pytest.mark.parametrize("backend", ["onnx", pytest.param("reference", marks=pytest.mark.matrix),
                                     pytest.param("xla", marks=pytest.mark.matrix),
                                     pytest.param("triton", marks=pytest.mark.matrix),
                                     pytest.param("inductor", marks=pytest.mark.matrix)])
def test_dropout_at_a_batch_that_changes_draws_the_static_graphs_bits(backend):
    _same_bits_as_static(_dropout_mlp(), backend, lambda batch: torch.ones(batch, 8))


def test_uniform_and_normal_draws_at_a_symbolic_batch_equal_the_static_ones():
    _same_bits_as_static(_noisy, "onnx", lambda batch: torch.zeros(batch, 6))


def _dropped_sum(x):
    return torch.nn.functional.dropout(x, 0.5, training=True).sum()


def test_dropout_s_gradient_at_a_symbolic_batch_uses_the_forward_s_mask():
    torch._dynamo.reset()
    compiled = parity.compile(_dropped_sum, backend="onnx", cache_dir=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", GraphBreakWarning)
        for batch in (20, 30, 50):
            x = torch.ones(batch, 8, requires_grad=True)
            out = compiled(x)
            out.backward()
            assert set(x.grad.unique().tolist()) == {0.0, 2.0}  # kept elements scale by 1 / (1 - p)
            assert out.item() == x.grad.sum().item()  # the same elements kept forward and backward
