"""parity.compile warns when Dynamo splits the function and runs a piece in eager torch:
what failed, the user's line, Dynamo's reason and what to do, once per break, in both
strict modes (tests/parity/test_front_door.py covers every kind of break and fullgraph=True)."""

import warnings

import pytest
import torch

import parity
from parity.frontend.graph_breaks import GraphBreakWarning


def positives(x):
    y = x * 2
    count = torch.nonzero(y > 0).shape[0]  # a data-dependent size: Dynamo breaks the graph here
    return y.sum() + count


def test_strict_mode_names_the_break_the_line_and_the_fix():
    f = parity.compile(positives, backend="reference")
    x = torch.tensor([-1.0, 2.0, 3.0])
    with pytest.warns(GraphBreakWarning) as caught:
        assert f(x).item() == positives(x).item() == 10.0
    (message,) = [str(w.message) for w in caught if w.category is GraphBreakWarning]
    lines = message.splitlines()
    assert lines[0].startswith("parity.compile: Dynamo split the function at ")
    assert "test_graph_breaks.py:16" in lines[0] and "runs in eager torch, not on 'reference'" in lines[0]
    assert lines[1].startswith("  why: Dynamic shape operator") and "nonzero" in lines[1]
    assert "fullgraph=True" in lines[2] and "parity.explain" in lines[2]
    with warnings.catch_warnings():
        warnings.simplefilter("error", GraphBreakWarning)  # once per break, not per call
        f(torch.tensor([1.0, 1.0, -1.0]))


def test_no_warning_without_a_break():
    with warnings.catch_warnings():
        warnings.simplefilter("error", GraphBreakWarning)
        parity.compile(lambda x: torch.relu(x * 2), backend="reference")(torch.ones(3))


def test_strict_false_warns_about_a_break_too():
    with pytest.warns(GraphBreakWarning, match="Dynamo split the function at .*test_graph_breaks.py:16"):
        parity.compile(positives, backend="reference", strict=False)(torch.ones(3))
