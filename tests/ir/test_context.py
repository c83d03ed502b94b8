"""NodeContext: the one base of what a rule sees; the reference's context extends it."""

import dataclasses

import numpy as np
import pytest

from parity.ir import OP_TABLE, GraphBuilder, NodeContext, ReferenceContext, Symbol, evaluate, f32


def test_reference_context_is_a_node_context_with_the_oracle_flag():
    ctx = ReferenceContext({"axes": (0,)}, (f32[2, 3],), (f32[3],))
    assert isinstance(ctx, NodeContext) and ctx.oracle is False
    assert ctx.out == f32[3]
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.attrs = {}


def test_a_reference_sees_a_reference_context_with_symbols_bound(monkeypatch):
    seen = []
    exp = OP_TABLE["exp"]

    def spy(ctx, x):
        seen.append(ctx)
        return exp.reference(ctx, x)

    monkeypatch.setitem(OP_TABLE, "exp", dataclasses.replace(exp, reference=spy))
    b = GraphBuilder()
    x = b.input(f32[Symbol("N")])
    evaluate(b.build([b.exp(x)]), [np.zeros(4, np.float32)], oracle=True)
    (ctx,) = seen
    assert type(ctx) is ReferenceContext and ctx.oracle is True
    assert (ctx.in_types, ctx.out_types) == ((f32[4],), (f32[4],))
