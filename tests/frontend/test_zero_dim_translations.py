"""0-d tensors through scatter and topk, and gather/scatter with an empty index (found by
torch's OpInfo samples, issue #17): the translations built an axis-0 scatter / a transpose
of a rank-0 value / a gather whose empty index had another rank, and raised TranslationBug."""

import torch

import parity
from parity.frontend import compiled_graph


def _check(fn, *args):
    expected = fn(*args)
    got = parity.compile(fn, backend="reference")(*args)
    assert compiled_graph.STATS["translations"] >= 1
    for g, e in zip(got if isinstance(got, tuple) else (got,), expected if isinstance(expected, tuple) else (expected,)):
        torch.testing.assert_close(g, e, rtol=0, atol=0)


def test_scatter_of_a_0d_tensor():
    x, src, index = torch.tensor(1.5), torch.tensor(-2.25), torch.tensor(0)
    _check(lambda x, s: torch.scatter(x, 0, index, s), x, src)
    _check(lambda x, s: torch.scatter_add(x, 0, index, s), x, src)
    _check(lambda x: torch.scatter(x, 0, index, 4.0), x)


def test_topk_of_a_0d_tensor():
    _check(lambda x: torch.topk(x, 1), torch.tensor(3.5))


def test_max_with_dim_of_a_0d_tensor_backward():
    x = torch.tensor(0.75, requires_grad=True)
    fn = lambda x: torch.autograd.grad(torch.max(x, 0).values * 3.0, x)[0]  # noqa: E731
    expected = fn(x)
    got = torch.autograd.grad(parity.compile(lambda x: torch.max(x, 0).values * 3.0, backend="reference")(x), x)[0]
    torch.testing.assert_close(got, expected, rtol=0, atol=0)


def test_gather_and_scatter_with_an_empty_index():
    index = torch.zeros((2, 0), dtype=torch.int64)
    _check(lambda x: torch.gather(x, 0, index), torch.arange(5.0))
    _check(lambda x, s: torch.scatter_add(x, 0, index, s), torch.arange(5.0), torch.ones(2, 0))
    x = torch.arange(5.0, requires_grad=True)
    got = torch.autograd.grad(parity.compile(lambda x: torch.gather(x, 0, index).sum() + x.sum(), backend="reference")(x), x)[0]
    torch.testing.assert_close(got, torch.ones(5), rtol=0, atol=0)
