"""Custom ops of widely used libraries (frontend/aten/custom_ops.py) against their own eager code."""

import pytest
import torch

import parity

transformers_moe = pytest.importorskip("transformers.integrations.moe")


@pytest.mark.parametrize("backend", ["reference", "xla"])
def test_transformers_grouped_mm_fallback_forward_and_backward(backend):
    torch._dynamo.reset()
    op = torch.ops.transformers.grouped_mm_fallback

    def experts(x, w, offs):
        return op(x, w, offs) * 1.5

    g = torch.Generator().manual_seed(0)
    x = torch.randn(7, 5, generator=g, requires_grad=True)
    w = torch.randn(4, 5, 3, generator=g, requires_grad=True)
    offs = torch.tensor([2, 2, 5, 6], dtype=torch.int32)  # expert 1 gets no rows; row 6 is past the end
    out = parity.compile(experts, backend=backend)(x, w, offs)
    weights = torch.randn(out.shape, generator=g)
    (out * weights).sum().backward()
    x2, w2 = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    expected = experts(x2, w2, offs)
    (expected * weights).sum().backward()
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(x.grad, x2.grad, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(w.grad, w2.grad, rtol=1e-5, atol=1e-6)
    assert out[6].abs().sum() == 0 and w.grad[1].abs().sum() == 0  # unrouted row, expert without rows
