"""The fast tier's column of the conformance matrix (conformance/tiers.py, bounds.FAST_BOUNDS):
it is measured against its own bounds, never loosens the exact tier's, and catches planted
faults just past those bounds."""

import json
from pathlib import Path

import pytest

from parity.backends.registry import get_backend
from parity.cli import main
from parity.conformance import bounds, bounds_tables
from parity.conformance.execute import run_case
from parity.conformance.mutants import FAULTS, Planted, run_mutants
from parity.conformance.mutants import faults as fault_module
from parity.conformance.mutants.run import KILLED, SURVIVED
from parity.conformance.opdb import all_cases
from parity.conformance.runner import run
from parity.conformance.tiers import AtPrecision, at_precision
from parity.ir.dtypes import DType
from parity.ir.precision import Precision

FAST, F32 = Precision.FAST, DType.float32
DOCS = Path(__file__).resolve().parents[2] / "docs" / "conformance.md"


def _fast(*names):
    return at_precision([get_backend(n) for n in names], FAST)


def test_only_backends_that_declare_the_tier_get_a_column():
    assert [b.name for b in _fast("xla", "onnx", "reference")] == ["xla@fast", "onnx@fast"]
    with pytest.raises(ValueError, match="backend 'reference' does not declare precision 'fast'"):
        AtPrecision(get_backend("reference"), FAST)


def test_the_exact_tier_keeps_its_bounds():
    for op in bounds.FAST_BOUNDS:
        assert bounds.bound_for(op, {}, F32) == bounds.bound_for(op, {}, F32, Precision.EXACT)
        assert bounds.bound_for(op, {}, F32, FAST) == bounds.FAST_BOUNDS[op]


def test_the_fast_columns_pass_their_bounds():
    result = run(_fast("xla", "onnx"), ops="^(logistic|silu|add)$", dtypes=[F32], quick=True)
    assert result.exit_code == 0
    assert {(c.backend, c.op) for c in result.cells if c.device == "cpu" and c.status in ("pass", "deviation")} == {
        (b, op) for b in ("xla@fast", "onnx@fast") for op in ("logistic", "silu", "add")}


def test_onnx_fast_is_not_held_to_the_exact_bound(monkeypatch):
    """ORT's Sigmoid runs in the fast column: under the exact tier's 4 ULP it fails (where it
    flushes to 0), which is why the fast tier's bound is absolute."""
    monkeypatch.setattr(bounds, "FAST_BOUNDS", {})
    result = run(_fast("onnx"), ops="^logistic$", dtypes=[F32], quick=True)
    (cell,) = [c for c in result.cells if c.device == "cpu"]
    assert cell.status == "fail" and cell.max_ulp > 1000


def test_a_fault_past_the_fast_bound_lands_between_one_and_two_bounds():
    case = next(c for c in all_cases() if c.op == "logistic" and c.dtype is F32)
    planted = Planted(_fast("onnx")[0], FAULTS["past_fast_bound"])
    result = run_case(planted, "cpu", case)
    assert result.status == "fail" and 1.0 < result.max_ratio <= 2.0


@pytest.mark.parametrize("factor, status", [(fault_module.FAST_FAULT_FACTOR, KILLED), (0.5, SURVIVED)])
def test_the_fast_columns_kill_faults_past_their_bound_and_only_those(monkeypatch, factor, status):
    monkeypatch.setattr(fault_module, "FAST_FAULT_FACTOR", factor)
    result = run_mutants(_fast("xla", "onnx"), devices=["cpu"], ops="^(logistic|sub)$", dtypes=[F32],
                         faults=["past_fast_bound"], sample=0)
    assert {(m.backend, m.op) for m in result.mutants} == {
        (b, op) for b in ("xla@fast", "onnx@fast") for op in ("logistic", "sub")}
    assert {m.status for m in result.mutants} == {status}


def test_the_cli_puts_the_fast_column_beside_the_exact_one(tmp_path):
    report = tmp_path / "fast.json"
    code = main(["conform", "--backend", "onnx", "--device", "cpu", "--precision", "both", "--ops", "^logistic$",
                 "--dtype", "f32", "--quick", "--summary-only", "--json", str(report)])
    cells = json.loads(report.read_text())["cells"]
    assert code == 0 and {(c["backend"], c["status"]) for c in cells} == {("onnx", "pass"), ("onnx@fast", "pass")}


def test_the_published_fast_table_is_the_code():
    assert bounds_tables.fast_markdown_table() in DOCS.read_text(encoding="utf-8"), (
        "regenerate the fast tier's table in docs/conformance.md from bounds_tables.fast_markdown_table()")
