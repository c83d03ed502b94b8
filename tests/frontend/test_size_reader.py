"""A size the compiled graph needs per call (a size value it takes as an input, a size it returns)
is read off the call's arguments by a function built once (frontend/compiled_graph.size_reader),
with the general evaluation's numbers for every form: sums of symbols times integers read
directly, products and quotients through the general walk."""

from __future__ import annotations

import itertools

import pytest
import torch

from parity.frontend.compiled_graph import _evaluate_size, size_reader
from parity.ir import Symbol

S, T = Symbol("s"), Symbol("t")
# s is dim 1 of argument 0 (a tensor); t is argument 2 (an int, as Dynamo passes a SymInt's value)
CARRIERS = {"s": (0, 1), "t": (2, None)}
FORMS = {
    "s": S, "s - 3": S - 3, "s + 1": S + 1, "64 - s": 64 - S, "2*s - t + 5": S * 2 - T + 5,
    "t": T, "-t": T * -1, "s*t": S * T, "s//2 + 1": S // 2 + 1, "t % 3": T % 3, "s*s - 1": S * S - 1,
}


@pytest.mark.parametrize("name", FORMS)
def test_the_reader_gives_the_general_evaluations_number(name):
    expr = FORMS[name]
    carriers = {k: v for k, v in CARRIERS.items() if k in {str(s) for s in (S, T)}}
    read = size_reader(expr, carriers)
    for s, t in itertools.product((1, 2, 7, 64, 65), (0, 3, 11)):
        args = [torch.zeros(2, s), "unused", t]
        assert read(args) == _evaluate_size(expr, carriers, args), (name, s, t)


def test_a_linear_size_is_read_without_the_general_walk(monkeypatch):
    import parity.frontend.compiled_graph as compiled_graph

    monkeypatch.setattr(compiled_graph, "_evaluate_size", lambda *a: pytest.fail("general walk used"))
    assert size_reader(S - 3, CARRIERS)([torch.zeros(1, 20), None, 0]) == 17
    assert size_reader(S * 2 - T + 5, CARRIERS)([torch.zeros(1, 4), None, 6]) == 7
