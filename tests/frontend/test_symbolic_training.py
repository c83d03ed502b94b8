"""Gradients under dynamic=True through selects and slices of symbolic dims: the backward
graph's sizes may come only from integer arguments (its one tensor input is a scalar), so
an empty i8[0, *sizes] input carries them (frontend/translate.py's size carrier)."""

import pytest
import torch
from torch._dynamo.utils import counters

import parity

CASES = {
    "last token": lambda x: (x[:, -1] * 2).sum(),  # select_backward from the end: a pad of seq - 1
    "first row": lambda x: (x[0] * 2).sum(),
    "second token": lambda x: (x[:, 1] * 3).sum(),
    "tail": lambda x: (x[:, 2:] ** 2).sum(),  # slice_scatter from 2 of a symbolic size
}


@pytest.mark.parametrize("backend", ["reference", "onnx", "xla", "triton"])
@pytest.mark.parametrize("name", list(CASES))
def test_gradients_through_selects_of_symbolic_dims(backend, name):
    f = CASES[name]
    counters.clear()
    compiled = parity.compile(f, backend=backend, dynamic=True)
    # (no size that makes a sliced dim 1: Dynamo specializes derived sizes of 0 and 1 too)
    for batch, seq in [(2, 5), (3, 7), (5, 4)]:
        x = torch.randn(batch, seq, 4, requires_grad=True)
        compiled(x).backward()
        want = x.detach().clone().requires_grad_()
        f(want).backward()
        torch.testing.assert_close(x.grad, want.grad, rtol=0, atol=0)
    assert counters["stats"]["unique_graphs"] == 1  # one capture for every size


def test_the_backward_graph_gets_a_size_carrier_input(compiled_graphs):
    x = torch.randn(2, 5, 4, requires_grad=True)
    parity.compile(CASES["first row"], backend="reference", dynamic=True)(x).backward()
    backward = compiled_graphs[-1]
    assert [str(t) for t in backward.input_types][0] == "f32[]"
    carrier = backward.input_types[-1]  # batch, seq and the last dim (dynamic=True: all symbolic)
    assert carrier.dtype.short == "i8" and carrier.shape[0] == 0 and len(carrier.shape) == 4
