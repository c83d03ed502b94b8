"""dot_general's rule: the ATen calls it traces to, beside its values."""

from __future__ import annotations

import numpy as np
import torch

from parity.backends.inductor.backend import InductorBackend
from parity.backends.inductor.composites import FUSED_ATTENTION_MIN_KEYS, declined
from parity.backends.inductor.lowering import LOWERINGS, to_fx
from parity.ir import GraphBuilder, Symbol, bf16, bool_, evaluate, f32
from parity.ir.passes import decompose

_LINEAR = {"lhs_contracting_dims": (1,), "rhs_contracting_dims": (1,), "lhs_batch_dims": (), "rhs_batch_dims": ()}


def _linear(rows: int):
    """x @ w^T + b, as the frontend writes a Linear: a dot_general, then an add of the bias."""
    b = GraphBuilder("linear")
    x, w, bias = b.input(f32[rows, 8]), b.input(f32[4, 8]), b.input(f32[4])
    product = b.dot_general(x, w, **_LINEAR)
    return b.build([b.add(product, b.broadcast_in_dim(bias, shape=(rows, 4), broadcast_dimensions=(1,)))])


def _source(node):
    """The node whose value ``node`` is, past reshapes to the same shape (Inductor drops them)."""
    while (node.target == torch.ops.aten.reshape.default
           and tuple(node.meta["val"].shape) == tuple(node.args[0].meta["val"].shape)):
        node = node.args[0]
    return node


def _calls(graph, shapes):
    return [n for n in to_fx(graph, shapes).module.graph.nodes if n.op == "call_function"]


def test_a_one_row_product_is_a_transposed_mm_whose_bias_add_stays_an_add():
    """Inductor turns a CPU bmm whose left side has one row into a multiply and a sum, and inlines
    the pointwise producer of that row into the sum once per output column (a batch-1 Linear after
    a GELU ran its erf 256 times per element: 14 ms a call, 0.3 ms on mm). It also fuses an add of
    mm's result into addmm, whose bias joins the accumulation (not the IR's rounding): the one row
    is (w @ x^T)^T, on mm, and no add takes mm's result itself. Two rows and more stay a bmm."""
    shapes = [(1, 8), (4, 8), (4,)]
    calls = _calls(_linear(1), shapes)
    targets = [n.target for n in calls]
    assert torch.ops.aten.mm.default in targets and torch.ops.aten.bmm.default not in targets
    adds = [n for n in calls if n.target == torch.ops.aten.add.Tensor]
    assert adds and not any(_source(a).target == torch.ops.aten.mm.default for n in adds for a in n.args
                            if isinstance(a, torch.fx.Node)), [n.args for n in adds]
    assert torch.ops.aten.bmm.default in [n.target for n in _calls(_linear(3), [(3, 8), (4, 8), (4,)])]

    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    fx = to_fx(_linear(1), shapes)
    got = fx.module(*map(torch.from_numpy, inputs), *fx.constants)[0].numpy()
    np.testing.assert_allclose(got, evaluate(_linear(1), inputs)[0], rtol=1e-6, atol=1e-6)


def _attention(keys, dtype=f32, queries=3):
    b = GraphBuilder("attend")
    q, k, v = b.input(dtype[1, 2, queries, 4]), b.input(dtype[1, 2, keys, 4]), b.input(dtype[1, 2, keys, 4])
    mask = b.input(bool_[1, 2, queries, keys])
    return b.build([b.scaled_dot_product_attention(q, k, v, mask, has_mask=True, causal=False, scale=0.25)])


def _calls_fused_attention(graph) -> bool:
    graph, _ = decompose(graph, claimed=lambda op: op in LOWERINGS, declined=declined)
    if not all(v.type.is_static for v in graph.inputs):
        return any(n.op == "scaled_dot_product_attention" for n in graph.nodes)
    targets = {str(n.target) for n in to_fx(graph, [v.type.shape for v in graph.inputs]).module.graph.nodes}
    return "aten._scaled_dot_product_flash_attention_for_cpu.default" in targets


def test_attention_over_many_keys_is_torchs_fused_kernel_with_the_irs_masked_rows():
    """The IR's scaled_dot_product_attention is claimed natively (composites.py) where the keys
    are many: Inductor's graph calls torch's fused CPU attention, and a query whose keys are all
    masked gets zeros."""
    graph = _attention(FUSED_ATTENTION_MIN_KEYS)
    assert _calls_fused_attention(graph)
    g = np.random.default_rng(2)
    arrays = [g.standard_normal(s).astype(np.float32) for s in ((1, 2, 3, 4), (1, 2, 512, 4), (1, 2, 512, 4))]
    keep = g.random((1, 2, 3, 512)) < 0.6
    keep[0, 1, 2] = False  # a query with nothing to attend to
    (got,) = InductorBackend().compile(graph, "cpu")(*arrays, keep)
    (want,) = evaluate(graph, [*arrays, keep])
    assert np.all(got[0, 1, 2].numpy() == 0)
    np.testing.assert_allclose(got.numpy(), want, rtol=2e-6, atol=1e-6)  # (the contract: parity conform)


def test_attention_over_few_keys_a_symbolic_count_or_in_bfloat16_is_decomposed():
    assert not _calls_fused_attention(_attention(FUSED_ATTENTION_MIN_KEYS - 1))
    assert not _calls_fused_attention(_attention(Symbol("S")))
    assert not _calls_fused_attention(_attention(FUSED_ATTENTION_MIN_KEYS, bf16))
