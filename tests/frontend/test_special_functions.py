"""torch.lgamma and torch.digamma in compiled code: torch.distributions' log-densities that use
them (Gamma, Beta, StudentT, Poisson, Dirichlet) and their gradients, which need digamma, match
eager; a float64 operand is refused at the user's line with the reason and the way out."""

from __future__ import annotations

import pytest
import torch
import torch.distributions as D

import parity
from parity.frontend.errors import UnsupportedAtenOp


def log_densities(concentration, x):
    return (D.Gamma(concentration, 2.0).log_prob(x)
            + D.Beta(concentration, concentration + 1.0).log_prob(x / 8.0)
            + D.StudentT(3.0, x, concentration).log_prob(x * 2.0)
            + D.Poisson(concentration).log_prob(torch.floor(x * 3.0))
            + D.Dirichlet(concentration).log_prob(torch.softmax(x, -1)).unsqueeze(-1))


@pytest.mark.parametrize("backend", ["onnx", "reference"])
def test_distributions_log_densities_and_their_gradients_match_eager(backend):
    concentration = (torch.rand(6, 4, generator=torch.Generator().manual_seed(0)) * 3 + 0.2).requires_grad_()
    x = torch.rand(6, 4, generator=torch.Generator().manual_seed(1)) * 5 + 0.1
    want = log_densities(concentration, x)
    (want_grad,) = torch.autograd.grad(want.sum(), concentration)
    got = parity.compile(log_densities, backend=backend, strict=True)(concentration, x)
    (got_grad,) = torch.autograd.grad(got.sum(), concentration)
    torch.testing.assert_close(got, want, rtol=2e-6, atol=2e-6)
    torch.testing.assert_close(got_grad, want_grad, rtol=2e-5, atol=2e-5)  # digamma's: torch's is ~3 ULP off


def test_a_float64_lgamma_is_refused_with_why_and_what_to_do():
    def loss(x):
        return torch.lgamma(x).sum()

    with pytest.raises(UnsupportedAtenOp) as caught:
        parity.compile(loss, backend="onnx", strict=True)(torch.rand(5, dtype=torch.float64) + 0.5)
    message = str(caught.value)
    assert "aten.lgamma" in message and "test_special_functions.py" in message
    assert "lgamma of float64" in message and "compute lgamma in float32" in message
