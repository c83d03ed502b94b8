"""The row maximum of an expanded softmax or attention is taken by XLA's NaN-dropping max
(composites.shift_only_maxes) only where that provably changes no output bit: each graph runs
on XLA with and without it (the NaN-checking combiner everywhere) and must agree bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from parity.backends.xla import XlaBackend, composites
from parity.backends.xla.composites import PLAIN_MAX, shift_only_maxes, with_plain_maxes
from parity.ir import DType, GraphBuilder, evaluate
from parity.ir.passes.decompose import decompose

f32 = DType.float32


def _attention(n_keys: int, *, mask: bool):
    """scaled_dot_product_attention over [2, 3, L, E], decomposed as the frontend hands it over."""
    b = GraphBuilder()
    q, k, v = b.input(f32[2, 3, 5, 8]), b.input(f32[2, 3, n_keys, 8]), b.input(f32[2, 3, n_keys, 4])
    m = b.input(f32[2, 3, 5, n_keys]) if mask else b.constant(True, DType.bool)
    out = b.scaled_dot_product_attention(q, k, v, m, has_mask=mask, scale=0.125)
    g = b.build([out])
    expanded, changed = decompose(g, lambda name: False)
    assert changed and "scaled_dot_product_attention" not in {n.op for n in expanded.nodes}
    return expanded


def _checking(g, inputs, monkeypatch, shift_only=lambda node, users, outputs: False):
    """``g`` on a fresh XLA backend whose analysis answers ``shift_only`` (default: never, so
    every float max is the NaN-checking one)."""
    with monkeypatch.context() as patch:
        patch.setattr(composites, "_shift_only", shift_only)
        return XlaBackend().compile(g, "cpu")(*inputs)


def _inputs(n_keys: int, mask: bool, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((2, 3, 5, 8)).astype(np.float32) * 4
    k = rng.standard_normal((2, 3, n_keys, 8)).astype(np.float32)
    v = rng.standard_normal((2, 3, n_keys, 4)).astype(np.float32)
    q[0, 0, 1, 3] = np.nan  # one query row: every score of it NaN
    k[0, 1, n_keys // 2, 0] = np.nan  # one key: a NaN in the middle of every row of head (0, 1)
    k[1, 2, n_keys - 1, 5] = np.inf  # +inf and NaN scores
    q[1, 1, 2] = 0.0  # a row of +0 scores (the max is a zero)
    q[1, 1, 3] = -0.0
    inputs = [q, k, v]
    if mask:
        m = rng.standard_normal((2, 3, 5, n_keys)).astype(np.float32)
        m[0, 2, 4] = -np.inf  # a fully masked row: the max is -inf, the output zeros
        m[1, 0, 0, 0] = np.nan  # a NaN from the mask, first key
        m[1, 0, 2, -1] = np.nan  # ... and last key
        m[1, 2, 1, :-1] = -np.inf  # all masked but one, which is +inf
        k[1, 2, n_keys - 1, :] = 1e30
        inputs.append(m)
    return inputs


@pytest.mark.parametrize("n_keys", [7, 33, 1031])
@pytest.mark.parametrize("mask", [False, True])
def test_attention_with_a_plain_max_equals_the_nan_checking_max_bit_for_bit(runner, contract, n_keys, mask,
                                                                            monkeypatch):
    g = _attention(n_keys, mask=mask)
    assert len(shift_only_maxes(g)) == 1
    inputs = _inputs(n_keys, mask)
    got = runner.run(g, inputs)[0]
    contract.assert_exact(got, _checking(g, inputs, monkeypatch)[0], what=f"attention, {n_keys} keys, mask={mask}")
    assert (np.isnan(got) == np.isnan(evaluate(g, inputs)[0])).all()
    assert np.isnan(got[0, 0, 1]).all() and np.isnan(got[0, 1]).all()  # the NaN rows stay NaN
    if mask:
        assert (got[0, 2, 4] == 0).all()


def _softmax_then(extra: str):
    """x → softmax decomposed by hand, with one more reader of an intermediate (a planted misuse)."""
    b = GraphBuilder()
    x = b.input(f32[6, 1031])
    m = b.reduce_max(x, axes=(1,))
    wide = b.broadcast_in_dim(m, shape=(6, 1031), broadcast_dimensions=(0,))
    e = b.exp(b.sub(x, wide))
    s = b.reduce_sum(e, axes=(1,))
    p = b.div(e, b.broadcast_in_dim(s, shape=(6, 1031), broadcast_dimensions=(0,)))
    extras = {"none": lambda: [], "max": lambda: [m], "exp": lambda: [e],
              "sum other axis": lambda: [b.reduce_sum(e, axes=(0,))]}
    return b.build([p, *extras[extra]()])


def _nan_rows():
    x = np.random.default_rng(1).standard_normal((6, 1031)).astype(np.float32) * 10
    x[0, 515] = np.nan
    x[1, [0, -1]] = [np.inf, np.nan]
    x[2, 7] = np.nan
    x[3, 1000] = np.nan
    x[4] = -0.0
    x[4, -1] = 0.0
    return x


def test_the_hand_written_softmax_is_recognised(runner, contract, monkeypatch):
    g = _softmax_then("none")
    assert [n.op for n in with_plain_maxes(g).nodes].count(PLAIN_MAX) == 1
    got = runner.run(g, [_nan_rows()])[0]
    contract.assert_exact(got, _checking(g, [_nan_rows()], monkeypatch)[0])
    assert (np.isnan(got) == np.isnan(evaluate(g, [_nan_rows()])[0])).all()


@pytest.mark.parametrize("extra", ["max", "exp", "sum other axis"])
def test_a_planted_reader_of_the_shift_is_refused_and_would_have_been_caught(runner, contract, extra, monkeypatch):
    """Each graph reads something the proof does not cover (the max itself, exp(x - m), a sum
    over other rows). The analysis refuses them; forcing the plain max onto them anyway (the
    planted fault) gives outputs that differ from the interpreter on the NaN rows, so the
    bit-for-bit checks above would catch a matcher that let such a pattern through."""
    g = _softmax_then(extra)
    assert shift_only_maxes(g) == []
    x = _nan_rows()
    want = _checking(g, [x], monkeypatch)
    for got, checked in zip(runner.run(g, [x]), want):  # refused: the same executable
        contract.assert_exact(got, checked)
    forced = _checking(g, [x], monkeypatch, lambda node, users, outputs: node.op == "reduce_max")
    assert (np.isnan(forced[0]) == np.isnan(want[0])).all()  # the softmax output keeps its NaN rows ...
    assert np.isnan(want[1]).sum() > np.isnan(forced[1]).sum()  # ... the planted extra reader loses NaN
