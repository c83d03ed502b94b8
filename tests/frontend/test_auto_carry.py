"""frontend/auto_carry.py: backend="auto" races a graph once, at its first shape; the same graph
captured again at symbolic sizes (automatic dynamic) takes that pick without a race, and a
backend that compiles per concrete shape (xla) is not picked for a graph whose sizes change."""

import pytest
import torch

import parity
from parity.frontend import auto, auto_carry

W = torch.randn(16, 8)


def mlp(x, w):
    return torch.nn.functional.gelu(x @ w).sum(dim=1)


@pytest.fixture(autouse=True)
def _fresh_picks():
    auto._CHOICES.clear()
    auto_carry.forget_families()
    yield
    auto._CHOICES.clear()
    auto_carry.forget_families()


def _run(compiled, batches):
    for batch in batches:
        x = torch.randn(batch, 16)
        torch.testing.assert_close(compiled(x, W), mlp(x, W), rtol=1e-5, atol=1e-5)


def test_the_symbolic_graph_takes_the_first_shapes_pick_without_a_race():
    # the reference interpreter (float64 NumPy) is raced too, so that onnx wins every time
    options = parity.AutoOptions(candidates=("onnx", "reference"), budget_s=60)
    compiled = parity.compile(mlp, auto=options, cache_dir=False)
    _run(compiled, [3, 5, 7, 9, 12])
    first, second = parity.auto_choices(compiled)
    assert first.source == "measured" and first.choice == "onnx"  # raced at batch 3
    assert second.choice == "onnx"
    assert second.source == f"carried over from this graph's race at its first shape ({first.choice})"
    assert [c.times_s for c in second.candidates] == [[], []]  # nothing timed for the symbolic graph


def test_a_backend_that_compiles_per_shape_is_not_picked_for_a_graph_whose_sizes_change():
    options = parity.AutoOptions(candidates=("xla", "onnx"), budget_s=600)
    compiled = parity.compile(mlp, auto=options, cache_dir=False)
    _run(compiled, [3])
    (first,) = parity.auto_choices(compiled)
    (family,) = auto_carry._FAMILIES
    first.choice = "xla"  # as if xla had won at the first shape
    auto_carry.forget_families()
    auto_carry.remember_family(family, first)
    _run(compiled, [5, 7, 9])
    second = parity.auto_choices(compiled)[1]
    candidates = {c.name: c for c in second.candidates}
    assert candidates["xla"].status == "dropped"
    assert candidates["xla"].why.startswith("not raced: it compiles one executable per concrete shape, and this "
                                            "graph's sizes are symbolic")
    assert second.choice == "onnx"
    assert second.source.startswith("the fastest at this graph's first shape that serves every size (that race "
                                    "picked xla")


def test_a_per_shape_backend_still_runs_a_symbolic_graph_when_it_is_the_only_candidate():
    options = parity.AutoOptions(candidates=("xla",))
    compiled = parity.compile(mlp, auto=options, cache_dir=False)
    _run(compiled, [3, 5, 7])
    assert [c.choice for c in parity.auto_choices(compiled)] == ["xla", "xla"]

