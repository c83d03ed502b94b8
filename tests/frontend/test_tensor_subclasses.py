"""Tensor subclasses users pass to a compiled function (studies/torch_features_probe): a plain
subclass computes as its data does and comes back as the subclass, as under torch.compile;
forward and gradients against eager."""

import pytest
import torch

import parity


class Tagged(torch.Tensor):
    """A subclass that adds only Python behaviour (a tag), as users write them."""


def _model(x, w):
    return torch.tanh(x @ w) * 2 + x.sum()


@pytest.mark.parametrize("backend", ["onnx", "xla", "reference"])
def test_a_plain_subclass_argument_runs_and_comes_back_as_the_subclass(backend):
    torch._dynamo.reset()
    x, w = torch.randn(4, 8).as_subclass(Tagged), torch.randn(8, 8)
    got = parity.compile(_model, backend=backend, cache_dir=False)(x, w)
    expected = torch.compile(_model, backend="eager")(x, w)
    assert type(got) is type(expected) is Tagged
    torch.testing.assert_close(got.as_subclass(torch.Tensor), _model(x, w).as_subclass(torch.Tensor),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", ["onnx", "reference"])
def test_a_plain_subclass_that_requires_grad_gets_eager_gradients(backend):
    torch._dynamo.reset()
    data, w = torch.randn(4, 8), torch.randn(8, 8)
    ours = data.clone().as_subclass(Tagged).requires_grad_()
    theirs = data.clone().as_subclass(Tagged).requires_grad_()
    parity.compile(_model, backend=backend, cache_dir=False)(ours, w).square().sum().backward()
    _model(theirs, w).square().sum().backward()
    torch.testing.assert_close(ours.grad.as_subclass(torch.Tensor), theirs.grad.as_subclass(torch.Tensor),
                               rtol=1e-5, atol=1e-6)


def test_parameters_and_plain_tensors_are_passed_as_they_are():
    """The wrapper is only for graphs with a subclass argument: none for parameters or plain tensors."""
    from parity.frontend.tensor_subclasses import plain_subclass_positions

    seen = []

    def backend(gm, example_inputs):
        seen.append(plain_subclass_positions(gm))
        return gm.forward

    torch._dynamo.reset()
    p = torch.nn.Parameter(torch.randn(3))
    torch.compile(lambda a, b, c: a * b + c, backend=backend)(p, torch.randn(3), torch.ones(3).as_subclass(Tagged))
    assert seen == [(2,)]
