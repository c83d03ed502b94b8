"""frontend/auto_carry.py: backend="auto" races a graph once, at its first shape; the same graph
captured again at symbolic sizes (automatic dynamic) takes that pick without a race, and a
backend that compiles per concrete shape (xla) is not raced for a graph whose sizes change."""

import pytest
import torch

import parity
from parity.frontend import auto

W = torch.randn(16, 8)


def mlp(x, w):
    return torch.nn.functional.gelu(x @ w).sum(dim=1)


@pytest.fixture(autouse=True)
def _fresh_picks():
    auto._CHOICES.clear()  # the exact picks and the families' picks: a new process
    yield
    auto._CHOICES.clear()


def _run(compiled, batches):
    for batch in batches:
        x = torch.randn(batch, 16)
        torch.testing.assert_close(compiled(x, W), mlp(x, W), rtol=1e-5, atol=1e-5)


def test_the_symbolic_graph_takes_the_first_shapes_pick_without_a_race():
    options = parity.AutoOptions(candidates=("onnx", "reference"), budget_s=60)
    compiled = parity.compile(mlp, auto=options, cache_dir=False)
    _run(compiled, [3, 5, 7, 9, 12])
    first, second = parity.auto_choices(compiled)
    assert first.source == "measured"  # raced at batch 3
    assert second.choice == first.choice
    assert second.source == f"carried over from this graph's race at another shape ({first.choice})"
    assert [c.times_s for c in second.candidates] == [[], []]  # nothing timed for the symbolic graph


def test_a_backend_that_compiles_per_shape_is_not_raced_for_a_graph_whose_sizes_change():
    options = parity.AutoOptions(candidates=("xla", "onnx"), budget_s=60)
    compiled = parity.compile(mlp, auto=options, cache_dir=False)
    _run(compiled, [3, 5, 7, 9])
    first, second = parity.auto_choices(compiled)
    assert {c.name for c in first.candidates if c.status != "dropped"} == {"xla", "onnx"}  # both raced, static
    candidates = {c.name: c for c in second.candidates}
    assert candidates["xla"].status == "dropped"
    assert candidates["xla"].why == ("not raced: it compiles one executable per concrete shape, and this graph's "
                                     "sizes are symbolic (each new size, each token of a decode loop, would compile "
                                     "again)")
    assert second.choice == "onnx"


def test_a_per_shape_backend_still_runs_a_symbolic_graph_when_it_is_the_only_candidate():
    options = parity.AutoOptions(candidates=("xla",))
    compiled = parity.compile(mlp, auto=options, cache_dir=False)
    _run(compiled, [3, 5, 7])
    assert [c.choice for c in parity.auto_choices(compiled)] == ["xla", "xla"]

