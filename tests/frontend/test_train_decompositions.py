"""Decompositions frontend/aten_decompositions.py chooses for training graphs, checked to be exact.

- ``x ** 2`` and ``x ** 1`` (a squared loss and its backward) reach the IR as x·x and x:
  ONNX Runtime ran Pow(x, 1) through the generic powf (4.2 ms of the encoder_train backward).
- ``select_backward`` (the gradient of ``qkv[0]``) is a zero pad of the gradient instead of
  torch's ``where(arange == index, grad, 0)`` over the whole input.

Each is compared bit for bit (NaN positions, -0 included) with the graphs built with torch's
own decomposition, on the reference, onnx and xla backends, and the ops are counted in the IR.
"""

from __future__ import annotations

import collections

import pytest
import torch
from torch._decomp import core_aten_decompositions

import parity
from parity.frontend import aten_decompositions, pipeline

BACKENDS = ["reference", "onnx", "xla"]
POW = torch.ops.aten.pow.Tensor_Scalar
SELECT_BACKWARD = torch.ops.aten.select_backward.default
PARITY_TABLE = aten_decompositions.decomposition_table


def _torch_table():
    """The decomposition table without parity's rewrites (torch's own for these ops)."""
    table = PARITY_TABLE()
    core = core_aten_decompositions()
    for op in (POW, SELECT_BACKWARD):
        table.pop(op, None)
        if op in core:
            table[op] = core[op]
    return table


def _run(fn, inputs, backend, table=None):
    """(loss and input gradients, {kind: IR op counts}) of ``fn`` compiled on ``backend``."""
    graphs = {}
    original = pipeline.decomposition_table
    if table is not None:
        pipeline.decomposition_table = table
    try:
        torch._dynamo.reset()
        compiled = parity.compile(fn, backend=backend)
        compiled.session.on_compiled = lambda g, kind: graphs.__setitem__(kind, g)
        leaves = [t.clone().requires_grad_(t.is_floating_point()) for t in inputs]
        loss = compiled(*leaves)
        loss.backward()
    finally:
        pipeline.decomposition_table = original
    ops = {kind: collections.Counter(n.op for n in g.graph.nodes) for kind, g in graphs.items()}
    return [loss.detach()] + [t.grad for t in leaves if t.requires_grad], ops


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    return (torch.equal(a.isnan(), b.isnan()) and torch.equal(torch.nan_to_num(a), torch.nan_to_num(b))
            and torch.equal(torch.signbit(a), torch.signbit(b)))


def _squared_loss(x, w, target):
    return ((x @ w) - target).square().mean() + (x ** 2).sum() * 1e-3


def _special_values():
    x = torch.tensor([[0.0, -0.0, 1.5, -2.25], [float("inf"), float("-inf"), float("nan"), 3e38],
                      [1e-45, -1e-40, 7.0, -1.0]])
    g = torch.Generator().manual_seed(0)
    return x, torch.randn(4, 4, generator=g), torch.randn(3, 4, generator=g)


def _qkv_loss(x, w):
    # the encoder's pattern: one projection, split by select; -0 and a negative index included
    qkv = (x @ w).view(2, 3, 5).transpose(0, 1)
    q, k, v = qkv[0], qkv[1], qkv[-1]
    lone = x[:, 1] * -0.0  # a select whose gradient is all -0 and +0
    return (q * k).sum() + (v.square() * 0.5).sum() + lone.sum() + x.select(1, -1).sum()


def _qkv_inputs():
    g = torch.Generator().manual_seed(3)
    return torch.randn(2, 4, generator=g), torch.randn(4, 15, generator=g)


@pytest.mark.parametrize("backend", BACKENDS)
def test_square_and_its_backward_have_no_pow_and_the_same_bits(backend):
    got, ops = _run(_squared_loss, _special_values(), backend)
    assert set(ops) == {"forward", "backward"}
    assert all(c["pow"] == 0 for c in ops.values()), ops
    before, old_ops = _run(_squared_loss, _special_values(), backend, _torch_table)
    assert sum(c["pow"] for c in old_ops.values()) > 0
    assert all(_same_bits(a, b) for a, b in zip(got, before))


@pytest.mark.parametrize("backend", BACKENDS)
def test_select_backward_is_a_pad_with_the_same_bits(backend):
    got, ops = _run(_qkv_loss, _qkv_inputs(), backend)
    assert ops["backward"]["pad"] >= 4 and ops["backward"]["iota"] == 0, ops["backward"]
    before, old_ops = _run(_qkv_loss, _qkv_inputs(), backend, _torch_table)
    assert old_ops["backward"]["iota"] > 0 and old_ops["backward"]["pad"] == 0
    assert all(_same_bits(a, b) for a, b in zip(got, before))
    eager = [t.clone().requires_grad_(True) for t in _qkv_inputs()]
    _qkv_loss(*eager).backward()
    for a, b in zip(got[1:], [t.grad for t in eager]):
        torch.testing.assert_close(a, b)


def test_select_backward_with_symbolic_sizes_stays_whole_and_a_symbolic_index_keeps_torchs():
    # symbolic sizes: the op stays whole for the frontend's select_backward translation
    # (zeros of symbolic widths: tests/frontend/test_symbolic_training.py); a symbolic
    # index keeps torch's decomposition
    calls = []

    def fallback(*args):
        calls.append(args)
        return "torch's"

    class Sym:  # stands for a SymInt: anything that is not a plain int
        pass

    grad = torch.zeros(2, 3)
    assert aten_decompositions._select_backward_as_pad(grad, [Sym(), 2, 3], 0, 1, fallback=fallback) is NotImplemented
    assert aten_decompositions._select_backward_as_pad(grad, [4, 2, 3], 0, Sym(), fallback=fallback) == "torch's"
    assert len(calls) == 1
    padded = aten_decompositions._select_backward_as_pad(grad - 0.0 + 1, [4, 2, 3], 0, -1, fallback=fallback)
    assert padded.shape == (4, 2, 3) and padded[3].eq(1).all() and padded[:3].eq(0).all()


def test_other_exponents_and_integers_keep_pow():
    def f(x):
        return x ** 3 + x ** 0.5

    _, ops = _run(lambda x: f(x).sum(), [torch.rand(5) + 0.5], "reference")
    assert ops["forward"]["pow"] == 2
    torch._dynamo.reset()
    square = parity.compile(lambda x: x ** 2, backend="reference")
    x = torch.arange(-4, 5, dtype=torch.int32)
    assert torch.equal(square(x), x ** 2)
