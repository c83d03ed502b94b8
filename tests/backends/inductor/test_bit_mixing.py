"""Random draws compile with a lower Inductor inlining threshold (backends/inductor/backend.py):
Threefry's rounds re-read each value, and Inductor's default re-expands them at every use
(a 64-element random_bits took 59 s to compile; the random cells of ``parity conform --quick``
on inductor, 319.5 s before and 83.1 s after). Other graphs keep Inductor's defaults."""

from __future__ import annotations

import numpy as np

from parity.backends.inductor import LOWERINGS
from parity.backends.inductor.backend import _bit_mixing_settings
from parity.backends.inductor.lowering import to_fx
from parity.ir import GraphBuilder, f32
from parity.ir.dtypes import DType
from parity.ir.passes import decompose


def _fx(graph, shapes):
    graph, _ = decompose(graph, claimed=lambda op: op in LOWERINGS)
    return to_fx(graph, shapes).module


def test_a_random_draw_gets_the_lower_inlining_threshold_and_an_mlp_does_not():
    b = GraphBuilder()
    key = b.input(DType.uint32[2])
    draw = _fx(b.build([b.random_bits(key, shape=(64,))]), [(2,)])
    assert _bit_mixing_settings(draw) == {"realize_opcount_threshold": 8}

    b = GraphBuilder()
    x = b.input(f32[4, 8])
    w = b.constant(np.ones((8, 3), np.float32))
    hidden = b.dot_general(x, w, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,), lhs_batch_dims=(), rhs_batch_dims=())
    mlp = _fx(b.build([b.tanh(hidden)]), [(4, 8)])
    assert _bit_mixing_settings(mlp) == {}
