"""parity.compile(..., dynamic=True): one capture serves every batch and sequence length.

Dynamo's recompile count (torch._dynamo.utils.counters["stats"]["unique_graphs"]) and
parity's translations are asserted per backend. Size 1 is the one exception: Dynamo
specializes sizes 0 and 1 (its guards assume a dynamic size is >= 2), so the first call
with a dim of size 1 captures one more graph, static in that dim; later sizes >= 2 reuse
the dynamic one.
"""

import pytest
import torch
from torch import nn
from torch._dynamo.utils import counters

import parity
from parity.frontend import STATS
from parity.ir import DimExpr

SIZES = [(2, 7), (7, 33), (33, 2), (3, 5)]


def _layer():
    torch.manual_seed(0)
    return nn.TransformerEncoderLayer(32, 4, 64, batch_first=True).eval()


@pytest.mark.parametrize("backend", ["reference", "onnx", "xla", pytest.param("inductor", marks=pytest.mark.matrix)])
def test_one_capture_serves_every_batch_and_sequence(backend):
    counters.clear()
    layer = _layer()
    compiled = parity.compile(layer, backend=backend, dynamic=True)
    for batch, seq in SIZES:
        x = torch.randn(batch, seq, 32)
        torch.testing.assert_close(compiled(x), layer(x), rtol=1e-5, atol=2e-6)
    assert counters["stats"]["unique_graphs"] == 1  # no recapture after the first call
    assert STATS["translations"] == 2  # the forward and the backward graph, once each
    x = torch.randn(1, 1, 32)
    torch.testing.assert_close(compiled(x), layer(x), rtol=1e-5, atol=2e-6)
    assert counters["stats"]["unique_graphs"] == 2  # size 1: Dynamo's one specialization


def test_the_captured_graph_computes_sizes_from_the_dynamic_ones(compiled_graphs):
    parity.compile(_layer(), dynamic=True, backend="reference")(torch.randn(2, 7, 32))
    forward = compiled_graphs[0]
    (x,) = [v for v in forward.inputs if v.type.rank == 3]
    batch, seq = x.type.shape[:2]
    assert isinstance(batch, DimExpr) and isinstance(seq, DimExpr)
    assert f"f32[{batch * 4},{seq},8]" in str(forward)  # the heads, B*4 (printed in the IR's normal form)


def test_mark_dynamic_on_batch_and_sequence_also_captures_once():
    counters.clear()
    layer = _layer()
    compiled = parity.compile(layer, backend="onnx")
    for batch, seq in SIZES:
        x = torch.randn(batch, seq, 32)
        torch._dynamo.mark_dynamic(x, 0)
        torch._dynamo.mark_dynamic(x, 1)
        torch.testing.assert_close(compiled(x), layer(x), rtol=1e-5, atol=2e-6)
    assert counters["stats"]["unique_graphs"] == 1 and STATS["translations"] == 2
