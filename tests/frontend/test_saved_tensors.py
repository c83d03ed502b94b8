"""The training partition saves inputs, not views of them (frontend/saved_tensors.py).

A linear layer's ``w.t()`` and a ``x.view(...)`` of an input are recomputed in the backward
from the saved input instead of written out by the forward graph. Checked: the forward IR
graph has fewer outputs and no transpose of the weight left to write, the backward the same
values bit for bit (NaN, ±0 and ±inf included) as AOTAutograd's default partition, and
graphs the activation-checkpointing path would refuse or alter are left to the default.
"""

from __future__ import annotations

import collections

import pytest
import torch
from torch._functorch.partitioners import default_partition
from torch.utils.checkpoint import CheckpointPolicy

import parity
from parity.frontend import pipeline, saved_tensors

BACKENDS = ["reference", "onnx", "xla"]


def _two_layers(x, w1, b1, w2, target):
    h = torch.nn.functional.linear(x.view(-1, 4), w1, b1).relu()
    return ((h @ w2.t()) - target.view(-1, 3)).square().mean()


def _inputs():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 4, generator=g)
    x[0, 0, :3] = torch.tensor([float("inf"), -0.0, float("nan")])
    return x, torch.randn(5, 4, generator=g), torch.randn(5, generator=g), torch.randn(3, 5, generator=g), \
        torch.randn(2, 3, 3, generator=g)


def _run(backend, partition):
    """(loss and gradients, {kind: IR graph}) of ``_two_layers`` compiled with ``partition``."""
    graphs = {}
    original = pipeline.PARTITION["fn"]
    pipeline.PARTITION["fn"] = partition
    try:
        torch._dynamo.reset()
        compiled = parity.compile(_two_layers, backend=backend)
        compiled.session.on_compiled = lambda g, kind: graphs.__setitem__(kind, g)
        leaves = [t.clone().requires_grad_(i in (1, 2, 3)) for i, t in enumerate(_inputs())]
        loss = compiled(*leaves)
        loss.backward()
    finally:
        pipeline.PARTITION["fn"] = original
    return [loss.detach()] + [t.grad for t in leaves if t.requires_grad], graphs


def _same_bits(a, b):
    return (torch.equal(a.isnan(), b.isnan()) and torch.equal(torch.nan_to_num(a), torch.nan_to_num(b))
            and torch.equal(torch.signbit(a), torch.signbit(b)))


def _computed_outputs(graph):
    inputs = set(graph.inputs)
    return [v for v in graph.outputs if v not in inputs]


@pytest.mark.parametrize("backend", BACKENDS)
def test_views_of_inputs_are_recomputed_not_saved(backend):
    got, graphs = _run(backend, saved_tensors.partition_recomputing_input_views)
    before, old_graphs = _run(backend, default_partition)
    assert got[0].isnan() and all(_same_bits(a, b) for a, b in zip(got, before))
    # default: the forward writes w2ᵀ (for h's gradient) and x.view(-1, 4) (for w1's) for the
    # backward (w1ᵀ is not needed: x takes no gradient); now neither
    ops = collections.Counter(n.op for n in graphs["forward"].graph.nodes)
    old_ops = collections.Counter(n.op for n in old_graphs["forward"].graph.nodes)
    assert len(_computed_outputs(old_graphs["forward"].graph)) - len(_computed_outputs(graphs["forward"].graph)) == 2
    assert ops["transpose"] <= old_ops["transpose"]
    computed = {n.outputs[0] for n in graphs["forward"].graph.nodes if n.op in ("transpose", "reshape")}
    assert not computed & set(_computed_outputs(graphs["forward"].graph))


def test_graphs_with_checkpoint_tags_keep_the_default_partition():
    def joint(primals_1, tangents_1):
        y = torch.ops.aten.t.default(primals_1)
        return torch.ops.aten.mm.default(y, tangents_1)

    gm = torch.fx.symbolic_trace(joint)
    assert [n.name for n in saved_tensors.input_views(gm.graph)] == ["t_default"]
    assert saved_tensors._recompute_is_safe(gm.graph)
    next(n for n in gm.graph.nodes if n.name == "mm_default").meta["recompute"] = CheckpointPolicy.MUST_SAVE
    assert saved_tensors._recompute_is_safe(gm.graph)
    next(n for n in gm.graph.nodes if n.name == "t_default").meta["recompute"] = CheckpointPolicy.PREFER_RECOMPUTE
    assert not saved_tensors._recompute_is_safe(gm.graph)  # the user's own checkpointing: untouched
