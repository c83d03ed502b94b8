"""Random draws compile with a lower Inductor inlining threshold (backends/inductor/backend.py):
Threefry's rounds re-read each value, and Inductor's default re-expands them at every use
(a 64-element random_bits took 59 s to compile; the random cells of ``parity conform --quick``
on inductor, 319.5 s before and 83.1 s after). Other graphs keep Inductor's defaults."""

from __future__ import annotations

import numpy as np
import torch

from parity.backends.inductor import LOWERINGS
from parity.backends.inductor.compiling import bit_mixing_settings
from parity.backends.inductor.context import U32_MASK
from parity.backends.inductor.lowering import to_fx
from parity.backends.registry import get_backend
from parity.ir import GraphBuilder, f32
from parity.ir.dtypes import DType
from parity.ir.interpreter import evaluate
from parity.ir.passes import decompose


def _fx(graph, shapes):
    graph, _ = decompose(graph, claimed=lambda op: op in LOWERINGS)
    return to_fx(graph, shapes).module


def test_a_random_draw_gets_the_lower_inlining_threshold_and_an_mlp_does_not():
    b = GraphBuilder()
    key = b.input(DType.uint32[2])
    draw = _fx(b.build([b.random_bits(key, shape=(64,))]), [(2,)])
    assert bit_mixing_settings(draw) == {"realize_opcount_threshold": 8}

    b = GraphBuilder()
    x = b.input(f32[4, 8])
    w = b.constant(np.ones((8, 3), np.float32))
    hidden = b.dot_general(x, w, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,), lhs_batch_dims=(), rhs_batch_dims=())
    mlp = _fx(b.build([b.tanh(hidden)]), [(4, 8)])
    assert bit_mixing_settings(mlp) == {}


def _masks(module) -> int:
    """The traced graph's u32 wrap masks: ``bitwise_and`` with the scalar 0xFFFFFFFF."""
    return sum(n.op == "call_function" and n.target is torch.ops.aten.bitwise_and.Scalar and n.args[1] == U32_MASK
               for n in module.graph.nodes)


def test_only_a_u32_result_that_can_leave_its_range_is_masked_and_the_draw_stays_exact():
    # Threefry's adds and left shifts wrap, so each is masked; its xors, ors, right shifts and
    # broadcasts keep u32 operands in range and are not (they were: twice the graph to compile).
    b = GraphBuilder()
    key = b.input(DType.uint32[2])
    graph = b.build([b.random_bits(key, shape=(64,))])
    expanded, _ = decompose(graph, claimed=lambda op: op in LOWERINGS)
    wrapping = sum(n.op in ("add", "shift_left") and n.outputs[0].type.dtype is DType.uint32 for n in expanded.nodes)
    module = to_fx(expanded, [(2,)]).module
    assert _masks(module) == wrapping == 57

    key_value = np.array([0x9E3779B9, 0xFFFFFFFF], np.uint32)  # carries and wraps in every round
    got = get_backend("inductor").compile(graph, device="cpu")(key_value)[0]
    np.testing.assert_array_equal(got, evaluate(graph, [key_value])[0])
