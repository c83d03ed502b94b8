"""torch.linalg.matrix_exp (aten/matrix_exp.py), the default map of
``nn.utils.parametrizations.orthogonal`` (studies/torch_features_probe): forward and gradient
against a float64 run, at most twice eager float32's own distance from it, at norms that need no
squaring and many; and an orthogonal layer's training step against eager."""

import pytest
import torch

import parity

BACKENDS = ["reference", "onnx", "xla"]


def _no_worse_than_eager(got, a, fn):
    exact = fn(a.double())
    own = float((fn(a).double() - exact).abs().max())
    err = float((got.double() - exact).abs().max())
    assert err <= 2 * own + 1e-7 * float(exact.abs().max()), (err, own)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("scale,skew", [(0.0, False), (0.01, False), (1.0, False), (30.0, False), (300.0, True)])
def test_matrix_exp_forward_and_gradient_at_small_and_large_norms(backend, scale, skew):
    """A skew-symmetric matrix's exponential is a rotation (orthogonal's case): at norm ~3000 it
    takes 12 squarings, its entries stay within 1."""
    torch._dynamo.reset()
    gen = torch.Generator().manual_seed(int(scale * 100))
    a = torch.randn(3, 5, 5, generator=gen) * scale
    a = a - a.transpose(-1, -2) if skew else a
    w = torch.randn(3, 5, 5, generator=gen)
    ours = a.clone().requires_grad_()
    got = parity.compile(torch.linalg.matrix_exp, backend=backend, cache_dir=False)(ours)
    _no_worse_than_eager(got.detach(), a, torch.linalg.matrix_exp)
    (got * w).sum().backward()

    def grad(x):
        x = x.clone().requires_grad_()
        (torch.linalg.matrix_exp(x) * w.to(x.dtype)).sum().backward()
        return x.grad
    _no_worse_than_eager(ours.grad, a, grad)


def test_matrix_exp_in_float64_is_float64_close():
    torch._dynamo.reset()
    a = torch.randn(4, 4, dtype=torch.float64) * 3
    got = parity.compile(torch.linalg.matrix_exp, backend="reference", cache_dir=False)(a)
    torch.testing.assert_close(got, torch.linalg.matrix_exp(a), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("backend", ["onnx", "xla"])
def test_an_orthogonal_layer_trains_as_eager(backend):
    torch._dynamo.reset()
    torch.manual_seed(0)
    layer = torch.nn.utils.parametrizations.orthogonal(torch.nn.Linear(6, 6))
    twin = torch.nn.utils.parametrizations.orthogonal(torch.nn.Linear(6, 6))
    twin.load_state_dict(layer.state_dict())
    x = torch.randn(4, 6)
    parity.compile(layer, backend=backend, cache_dir=False)(x).tanh().sum().backward()
    twin(x).tanh().sum().backward()
    for (name, p), q in zip(layer.named_parameters(), twin.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5, msg=name)
