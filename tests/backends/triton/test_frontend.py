"""End to end through the PyTorch frontend: a small module's forward and its gradients
(the backward graph runs as generated kernels too) match eager."""

from __future__ import annotations

import torch

import parity


class _Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = torch.nn.Linear(8, 16)
        self.norm = torch.nn.LayerNorm(16)
        self.out = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.out(torch.softmax(self.norm(torch.nn.functional.gelu(self.inner(x))), -1))


def test_forward_and_gradients_match_eager():
    torch.manual_seed(0)
    model, x = _Block(), torch.randn(4, 8)
    compiled = parity.compile(model, backend="triton")
    got = compiled(x)
    got.square().sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    want = model(x)
    want.square().sum().backward()
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
    for g, p in zip(grads, model.parameters()):
        torch.testing.assert_close(g, p.grad, rtol=1e-5, atol=1e-6)


def _spectral(x, w):
    s = torch.fft.rfft(x)
    return torch.fft.irfft(s * w, n=x.shape[-1]), s.abs(), torch.exp(s / 8).angle()


def test_complex_code_runs_on_triton_with_gradients():
    # complex values as float pairs, the FFTs as extern torch calls; strict: nothing falls back
    torch.manual_seed(0)
    x, w = torch.randn(3, 16, requires_grad=True), torch.randn(9, dtype=torch.complex64)
    got = parity.compile(_spectral, backend="triton", strict=True)(x, w)
    got[0].square().sum().backward()
    grad, x.grad = x.grad.clone(), None
    want = _spectral(x, w)
    want[0].square().sum().backward()
    for g, e in zip(got, want):
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(grad, x.grad, rtol=1e-5, atol=1e-5)
