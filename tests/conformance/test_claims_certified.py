"""Conformance certifies claims at their grain: a case a claim's predicate declines is reported
as declined (never passed, never failed), a case it takes is held to the bound, and the regions
a plugin claims whole are compiled whole in the op cases and in the zoo's model cells."""

import sys
from pathlib import Path

from parity.conformance import opdb
from parity.conformance.runner import run
from parity.conformance.zoo import model_results

sys.path.insert(0, str(Path(__file__).parents[1] / "backends"))
from claim_plugins import FusingClaims, PredicateClaims  # noqa: E402
from runtime_plugins import registered  # noqa: E402


def _cases(op, dtype, only=None):
    return [c for c in opdb.all_cases() if c.op == op and c.dtype.short == dtype and (only is None or c.id.endswith(only))]


def test_cases_the_predicate_declines_are_declined_not_passed():
    cases = _cases("convolution", "f32") + _cases("convolution", "f64", only=":transposed")
    assert [c.id for c in cases if c.id.endswith(":transposed")] == ["convolution[f32]:transposed",
                                                                     "convolution[f64]:transposed"]
    result = run([PredicateClaims()], cases=cases, isolate=False)
    cells = {c.dtype: c for c in result.cells}
    f32, f64 = cells["f32"], cells["f64"]
    assert (f32.status, f32.cases, f32.passed, f32.declined, f32.failed) == ("pass", 8, 7, 1, 0)
    assert f32.message == ("1 of 8 cases declined by the predicate of predicate_claims's claim on convolution: "
                           "its lhs_dilation is (2,); the backend takes only 1 in every entry")
    assert (f64.status, f64.passed, f64.declined) == ("unsupported", 0, 1)  # only declined cases: not a pass
    assert f64.message.startswith("declined by the predicate of predicate_claims's claim on convolution")


def test_a_fused_region_is_certified_in_op_cases_and_a_model_cell():
    with registered(FusingClaims()) as plugin:
        result = run([plugin], cases=_cases("linear", "f32"), isolate=False)
        (cell,) = result.cells
        assert (cell.status, cell.passed, cell.cases) == ("pass", 6, 6)
        assert ["dot_general", "add"] in plugin.compiled  # linear's bias cases reach it as one region
        plugin.compiled.clear()
        forward, training = model_results("model:mlp/train", "fusing_claims")
    assert (forward.status, training.status) == ("pass", "pass"), (forward.message, training.message)
    assert plugin.compiled.count(["dot_general", "add"]) == 3  # the zoo MLP's three linear layers, each whole
