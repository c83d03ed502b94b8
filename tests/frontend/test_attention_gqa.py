"""Grouped-query attention (fewer key/value heads than query heads) through the fused
CPU attention ops, forward and backward, and in a whole-graph capture (export)."""

import pytest
import torch
import torch.nn.functional as F

import parity
from parity.frontend.capture import capture_program


def _attend(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)


def _inputs():
    g = torch.Generator().manual_seed(0)
    return [torch.randn(2, h, 8, 8, generator=g, requires_grad=True) for h in (4, 2, 2)]


@pytest.mark.parametrize("backend", ["reference", "xla"])
def test_gqa_forward_and_gradients_match_eager(backend):
    torch._dynamo.reset()
    q, k, v = _inputs()
    out = parity.compile(_attend, backend=backend)(q, k, v)
    grads = torch.autograd.grad(out.pow(2).sum(), (q, k, v))
    expected = _attend(q, k, v)
    expected_grads = torch.autograd.grad(expected.pow(2).sum(), (q, k, v))
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)
    for got, want in zip(grads, expected_grads):
        assert got.shape == want.shape
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_gqa_captures_whole_and_runs_on_the_interpreter():
    class Attend(torch.nn.Module):
        def forward(self, q, k, v):
            return _attend(q, k, v)

    q, k, v = (t.detach() for t in _inputs())
    program = capture_program(Attend(), q, k, v)
    (out,) = program.run(q, k, v)
    torch.testing.assert_close(out, _attend(q, k, v), rtol=1e-5, atol=1e-5)
