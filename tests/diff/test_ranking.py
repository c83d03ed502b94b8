"""The ranking must put the planted fault's node first, for every fault class, and must not
blame a backend for ill-conditioning."""

import numpy as np
import pytest

from parity.debugger import diff_graph
from parity.debugger.planted import FAULT_CLASSES, applies, planted_runner

from .graphs import cancelling, mixed

CASES = [("few_ulp", "exp"), ("flushed_value", "exp"), ("dropped_term", "dot_general"),
         ("dropped_term", "reduce_sum"), ("wrong_index", "transpose"), ("wrong_index", "gather"),
         ("few_ulp", "tanh")]


@pytest.mark.parametrize("fault,op", CASES)
def test_planted_fault_is_ranked_first(fault, op):
    graph, arrays = mixed()
    node = next(n for n in graph.nodes if n.op == op)
    assert applies(FAULT_CLASSES[fault], node)
    runner, planted = planted_runner("reference", node, fault)
    report = diff_graph(graph, arrays, runner=runner)
    assert planted.changed > 0, "the fault changed nothing: not a fault"
    top = report.ranked()[0]
    assert (top.op, top.verdict) == (op, "bug"), report.ranked()[:3]
    assert [r.op for r in report.guilty()] == [op]
    assert report.exit_code == 1
    # whatever the fault feeds is blamed on the fault, not called ill-conditioning
    assert "ill-conditioned" not in {r.verdict for r in report.rows}


def test_clean_backend_has_no_guilty_node():
    graph, arrays = mixed()
    report = diff_graph(graph, arrays, backend="reference")
    assert report.guilty() == [] and report.exit_code == 0
    assert all(r.local_ratio is not None and r.local_ratio <= 1 for r in report.rows)


def test_ill_conditioning_is_not_a_backend_bug():
    graph, arrays = cancelling()
    report = diff_graph(graph, arrays, backend="reference")
    assert report.guilty() == [] and report.exit_code == 0
    verdicts = {r.op: r.verdict for r in report.rows}
    assert verdicts["sub"] == "ill-conditioned" and verdicts["exp"] == "ill-conditioned"
    assert all(r.local_ratio <= 1 for r in report.rows)
    # the end-to-end comparison blames the cancellation's node, a correct one
    assert report.first_over_tolerance().op == "sub"


def test_few_ulp_fault_under_the_baseline_tolerance_is_still_found():
    """8 ULP in exp is under rtol=1e-5, so the end-to-end method blames nothing at exp."""
    graph, arrays = mixed()
    node = graph.nodes[0]
    runner, _ = planted_runner("reference", node, "few_ulp")
    report = diff_graph(graph, arrays, runner=runner)
    assert report.ranked()[0].node == 0
    assert not report.row("g0.n0").over_tolerance


def test_backend_error_is_ranked_first_and_named():
    from parity.backends.registry import get_backend
    from parity.conformance.mutants import FAULTS, Planted
    from parity.debugger.execute import NodeRunner

    graph, arrays = mixed()
    real = get_backend("reference")
    runner = NodeRunner(real, fault_at={graph.nodes[3]: Planted(real, FAULTS["exception"])})
    report = diff_graph(graph, arrays, runner=runner)
    top = report.ranked()[0]
    assert (top.node, top.verdict) == (3, "error") and "PlantedFault" in top.message
    assert np.isfinite(report.row("g0.n5").carried_ulp)  # the diff went on past the error


@pytest.mark.parametrize("against", ["eager", "reference"])
def test_carried_error_against_eager_or_another_backend(against):
    """Against the graph's own dtypes (eager) or the reference backend itself, the reference
    backend carries no error at all; the local error is still held to the contract."""
    graph, arrays = cancelling()
    report = diff_graph(graph, arrays, backend="reference", against=against)
    assert report.against == against
    assert all(r.carried_ulp == 0 for r in report.rows)
    assert {r.verdict for r in report.rows} == {"ok"}


def test_recorded_deviation_is_known_and_ranked_after_a_bug():
    """exp 9 ULP off on a backend that records exp up to 10 ULP is a deviation; tanh 8 ULP
    off (2x its bound, less than exp's 2.25x) is a bug and ranks first."""
    from parity.backends.base import Deviation
    from parity.backends.registry import get_backend
    from parity.conformance.mutants import Planted
    from parity.conformance.mutants.faults import Fault, step_ulps
    from parity.debugger.execute import NodeRunner
    from parity.ir import f32

    nine = Fault("nine_ulp", "9 ULP away from zero", lambda a, site: step_ulps(a, site.dtype, 9))
    backend = Planted(get_backend("reference"), nine, op="exp",
                      deviations=(Deviation("exp", "a test's recorded exp", "10 ulp (measured 9)", f32),))
    graph, arrays = mixed()
    tanh = next(n for n in graph.nodes if n.op == "tanh")
    runner, _ = planted_runner(NodeRunner(backend), tanh, "few_ulp")
    report = diff_graph(graph, arrays, runner=runner)
    ranked = report.ranked()
    assert [(r.op, r.verdict) for r in ranked[:2]] == [("tanh", "bug"), ("exp", "deviation")]
    assert ranked[1].local_ratio > ranked[0].local_ratio and "10 ulp" in ranked[1].message
    assert [r.op for r in report.guilty()] == ["tanh"]
