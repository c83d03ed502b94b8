"""Sizes used as tensor values (frontend/context.py ``size_value``): ``torch.arange(n, n + 3)``
with a symbolic ``n``, and ``torch.sym_max`` of sizes (a sliding-window cache's offset)."""

import pytest
import torch

import parity


def _shifted_range(x):
    n = x.shape[0]
    return torch.arange(n, n + 3) + x.sum().long()


def _window_offset(x):
    # transformers' sliding-window cache: max(length - window + 1, 0), added to positions
    offset = max(x.shape[0] - 4 + 1, 0)
    return torch.arange(3) + offset


@pytest.mark.parametrize("fn", [_shifted_range, _window_offset])
@pytest.mark.parametrize("backend", ["reference", "onnx"])
def test_symbolic_sizes_as_values_match_eager_at_every_size(fn, backend):
    compiled = parity.compile(fn, backend=backend)
    first = torch.zeros(5)
    torch._dynamo.mark_dynamic(first, 0)
    for size in (5, 2, 9, 3, 4):  # the offset is 0 below the window, positive above
        x = first if size == 5 else torch.zeros(size)
        torch.testing.assert_close(compiled(x), fn(x), rtol=0, atol=0)


def test_size_value_of_an_expression_is_its_value_with_negative_terms():
    from parity.frontend.context import TranslationContext
    from parity.ir import GraphBuilder, Symbol, evaluate, f32

    class _Translator:  # a capture's translator: the graph computes its sizes
        b = GraphBuilder()
        sizes_as_inputs = False

    ctx = TranslationContext(_Translator(), node=None, name="test")
    S = Symbol("S")
    x = ctx.b.input(f32[S])
    value = ctx.size_value(S * S * 2 - S // 2 - 7)
    (got,) = evaluate(ctx.b.build([value]), [torch.zeros(5).numpy()])
    assert int(got) == 2 * 25 - 2 - 7
    assert x is not None


def _summed(x, y, z):
    # what torch emits for a sum of several sizes (Falcon's generate() has one)
    return torch.zeros(torch.sym_sum([x.shape[0], y.shape[0], z.shape[0]])) + 1


def test_sym_sum_of_sizes_is_a_size():
    compiled = parity.compile(_summed, backend="reference")
    first = [torch.zeros(n) for n in (2, 3, 4)]
    for t in first:
        torch._dynamo.mark_dynamic(t, 0)
    assert compiled(*first).shape == (9,)
    assert compiled(torch.zeros(5), torch.zeros(6), torch.zeros(7)).shape == (18,)
