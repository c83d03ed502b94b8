"""The JAX frontend under the contract (conformance/jax_frontend): every rule has cases, JAX's
own results meet the IR reference within each op's bound, planted rule faults are killed, and
``parity conform`` shows the rows (not run without JAX)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from parity.conformance import runner
from parity.conformance.bounds import Bound
from parity.conformance.declared import Declared
from parity.conformance.jax_frontend import bridge, mutants, registry, rows
from parity.conformance.jax_frontend.check import run_case, run_cases
from parity.conformance.jax_frontend.deviations import jax_column
from parity.conformance.jax_frontend.spec import FrontendCase
from parity.conformance.reports import to_json, to_markdown
from parity.conformance.verdicts import cells_for
from parity.frontend.jax.rules import TABLE
from parity.ir.dtypes import DType


def test_every_rule_has_cases_and_every_entry_a_rule():
    entries = set(registry.entries())
    assert set(TABLE) - entries - set(registry.NOT_EMITTED) == set(), "rules without frontend cases"
    assert entries - set(TABLE) == set(), "frontend cases for primitives without a rule"
    assert entries.isdisjoint(registry.NOT_EMITTED)
    for name, entry in registry.NOT_EMITTED.items():  # an older spelling must be the very rule its cases test
        if entry.same_rule_as is not None:
            assert TABLE[name] is TABLE[entry.same_rule_as], name
    assert all(registry.cases_of(name) for name in entries)


def test_registry_test_catches_a_rule_without_cases(monkeypatch):
    monkeypatch.setitem(TABLE, "planted_primitive", TABLE["neg"])
    assert "planted_primitive" in set(TABLE) - set(registry.entries()) - set(registry.NOT_EMITTED)


SMALL = "^jax:(sub|exp|slice|dot_general|cond|while|convert_element_type)$"


def _cells(ops, quick=True):
    results, keys, target = rows.frontend_rows(ops=ops, quick=quick)
    return cells_for(keys, [target], results), results


def test_quick_rows_of_a_few_rules_pass_or_are_recorded_deviations():
    cells, results = _cells(SMALL)
    assert {c.op for c in cells} == {f"jax:{n}" for n in ("sub", "exp", "slice", "dot_general", "cond", "while",
                                                          "convert_element_type")}
    assert {c.status for c in cells} <= {"pass", "deviation"}, [(c.op, c.dtype, c.message) for c in cells
                                                                 if c.status not in ("pass", "deviation")]
    assert all(r.backend == "jax" and r.device == "cpu" for r in results)
    assert not jax.config.jax_enable_x64  # x64 only inside a case that needs it


@pytest.mark.matrix
def test_every_quick_row_passes_or_is_a_recorded_deviation():
    cells, _ = _cells(None)
    bad = [(c.op, c.dtype, c.status, c.message[:200]) for c in cells if c.status not in ("pass", "deviation")
           and not c.op.startswith(tuple(f"jax:{n}" for n in registry.NOT_EMITTED))]
    assert not bad


@pytest.mark.matrix
def test_every_case_of_every_rule_passes_or_is_a_recorded_deviation():
    cells, _ = _cells(None, quick=False)
    bad = [(c.op, c.dtype, c.status, c.worst_case, c.message[:200]) for c in cells
           if c.status not in ("pass", "deviation", "unsupported")]
    assert not bad


def test_a_wrong_rule_is_measured_against_the_bound_of_the_op_it_emits(monkeypatch):
    """A rule that builds another op than JAX runs fails by the numbers, with the bound named."""
    case = next(c for c in registry.cases_of("tanh") if c.name == "random" and c.dtype is DType.float32)
    assert run_case(case).status == "pass"
    monkeypatch.setitem(TABLE, "tanh", TABLE["sin"])
    result = run_case(case)
    assert result.status == "fail" and result.max_ulp > 1e5 and result.worst["bound"] == "≤ 4 ULP"


def test_a_composite_rule_without_a_declared_bound_is_an_error():
    from jax import lax

    declared = next(c for c in registry.cases_of("integer_pow") if c.name == "y5:random" and c.dtype is DType.float32)
    assert run_case(declared).status == "pass"
    bare = FrontendCase("integer_pow", DType.float32, declared.fun, declared.inputs, "no_bound")
    result = run_case(bare)
    assert result.status == "error" and "must declare a bound" in result.message and "mul, mul, mul" in result.message
    off = FrontendCase("integer_pow", DType.float32, lambda x: lax.integer_pow(x, 5), declared.inputs, "too_tight",
                       bound=Bound("ulp", 0.01))  # a bound tighter than three roundings: JAX's own result fails it
    assert run_case(off).status == "fail"


def test_a_case_that_never_reaches_its_primitive_is_an_error():
    from jax import lax

    case = FrontendCase("rsqrt", DType.float32, lax.sqrt, lambda rng: (np.ones(3, np.float32),), "wrong_fun")
    result = run_case(case)
    assert result.status == "error" and "never reaches rsqrt" in result.message


def test_x64_is_entered_only_for_64_bit_cases():
    f64 = next(c for c in registry.cases_of("add") if c.dtype is DType.float64 and c.name == "random")
    f32 = next(c for c in registry.cases_of("add") if c.dtype is DType.float32 and c.name == "random")
    results = run_cases([f64, f32])
    assert [r.status for r in results] == ["pass", "pass"]
    assert not jax.config.jax_enable_x64


CI_FAULTS = ("sub_operands_swapped", "lt_as_gt", "rsqrt_as_sqrt", "slice_off_by_one", "convert_through_f16",
             "broadcast_in_dim_dims_shifted", "real_as_imag", "scatter_drop_as_clip", "fft_type_swapped",
             "irfft_length_even")


@pytest.mark.parametrize("fault", CI_FAULTS)
def test_a_planted_rule_fault_is_killed(fault):
    [outcome] = mutants.run_rule_faults([fault], quick=True)
    assert outcome.status == mutants.KILLED, outcome
    assert bridge.rule_table()[outcome.primitive] is TABLE[outcome.primitive]  # restored


@pytest.mark.matrix
def test_every_planted_rule_fault_is_killed():
    outcomes = mutants.run_rule_faults(quick=True)
    assert len(outcomes) == len(mutants.FAULTS) >= 30
    assert [o for o in outcomes if o.status != mutants.KILLED] == []


def test_a_fault_that_changes_nothing_survives():
    """The kill verdict is not given for free: a 'fault' that builds the same op survives."""
    harmless = mutants.RuleFault("sub_as_itself", "sub", "none", lambda original, table: original)
    assert mutants._judge(harmless, registry.select(ops="^jax:sub$", quick=True)).status == mutants.SURVIVED


def test_conform_shows_the_frontend_rows_in_every_report():
    result = runner.run(["reference"], ops="^(neg|jax:neg|jax:while)$", quick=True, frontend=True)
    assert result.exit_code == 0
    assert {(c.op, c.backend) for c in result.cells} >= {("neg", "reference"), ("jax:neg", "jax"),
                                                         ("jax:while", "jax")}
    assert "jax/cpu" in result.summary()
    doc = to_json(result)
    assert {c["family"] for c in doc["cells"] if c["op"].startswith("jax:")} == {"frontend jax"}
    assert "| jax:neg | F |" in to_markdown(result)
    assert result.options["frontend"] is True


def test_conform_reports_the_rows_as_not_run_without_jax(monkeypatch):
    monkeypatch.setattr(rows, "jax_available", lambda: False)
    result = runner.run(["reference"], ops="^jax:(neg|sub)$", quick=True, frontend=True)
    cells = [c for c in result.cells if c.backend == "jax"]
    assert cells and {c.status for c in cells} == {"not run"}
    assert all("jax is not installed" in c.message for c in cells)
    assert result.summary()["jax/cpu"]["pass"] == 0


def test_names_this_jax_never_emits_are_not_run_with_the_reason():
    cells, _ = _cells("^jax:expand_dims$")
    [cell] = cells
    assert cell.status == "unsupported" and "broadcast_in_dim" in cell.message


def test_a_stale_convention_fails_its_row(monkeypatch):
    """A convention claiming JAX differs where it meets the spec is stale (planted: neg of everything)."""
    from parity.conformance.jax_frontend import check, deviations

    case = next(c for c in registry.cases_of("neg") if c.name == "specials" and c.dtype is DType.float32)
    assert run_cases([case])[0].status == "pass"
    planted = deviations.Convention("neg", (DType.float32,), lambda arrays: np.ones(np.shape(arrays[0]), bool),
                                    "planted: neg is NaN everywhere")
    monkeypatch.setattr(check, "conventions_of", lambda c: planted if c.primitive == "neg" else None)
    [result] = run_cases([case])
    assert result.status == "fail" and result.message.startswith("stale convention") and "planted" in result.message


def test_a_rule_that_stops_refusing_fails_its_refusal_case(monkeypatch):
    [case] = registry.cases_of("debug_callback")
    assert run_case(case).status == "pass"
    monkeypatch.setitem(TABLE, "debug_callback", lambda ctx, *xs: [])  # swallows the callback
    result = run_case(case)
    assert result.status == "fail" and "should refuse debug_callback" in result.message


def test_unsigned_arithmetic_shift_copies_the_top_bit_as_xla_does(monkeypatch):
    """The rule fixed by these cases: uint8 200 >> 1 is 228 in JAX; the IR's own op shifts logically."""
    from parity.frontend.jax.rules.elementwise import _binary

    cases = [c for c in registry.cases_of("shift_right_arithmetic") if c.dtype in (DType.uint8, DType.uint32)]
    assert cases and {r.status for r in run_cases(cases)} == {"pass"}
    monkeypatch.setitem(TABLE, "shift_right_arithmetic", _binary("shift_right_arithmetic"))  # the old rule
    assert "fail" in {r.status for r in run_cases(cases)}


def test_a_zero_step_scan_translates():
    [case] = [c for c in registry.cases_of("scan") if c.name == "zero_steps"]
    assert run_case(case).status == "pass"


def test_the_columns_deviations_are_judged_by_a_full_run_not_by_quick():
    """expm1's f16 deviation was measured on its random case: a full run finds it recorded, --quick
    (one edge case, which passes) leaves it unjudged rather than stale (planted: judging under
    --quick made it stale, exit 1)."""
    full = runner.run(["reference"], ops="^jax:expm1$", dtypes=[DType.float16], frontend=True)
    [state] = [d.state for d in full.deviations if d.backend == "jax" and d.op == "jax:expm1"]
    assert state == "recorded" and full.exit_code == 0
    quick = runner.run(["reference"], ops="^jax:expm1$", dtypes=[DType.float16], quick=True, frontend=True)
    assert quick.exit_code == 0 and not [d for d in quick.deviations if d.backend == "jax"]


COMPLEX_CASES = [f"jax:{name}[c64]:random" for name in ("add", "mul", "div", "exp", "log", "abs", "real", "imag", "conj")] + [
    "jax:reduce_sum[c64]:axes1:axis1", "jax:dot_general[c64]:matmul", "jax:complex[f32]:random",
    "jax:sign[c64]:complex_refused", "jax:sin[c64]:complex_refused"]
# XLA:CPU's two complex conventions, each still seen (and these cases hold subnormal parts: flush-to-zero)
COMPLEX_CONVENTIONS = ["jax:sqrt[c64]:specials", "jax:abs[c64]:specials"]


def test_complex64_cases_pass_against_the_spec_and_the_ops_the_ir_lacks_are_refused():
    column = Declared.of(jax_column(), "cpu")
    results = run_cases([registry.find(i) for i in COMPLEX_CASES + COMPLEX_CONVENTIONS], column)
    assert [(r.case, r.status) for r in results[:len(COMPLEX_CASES)]] == [(i, "pass") for i in COMPLEX_CASES]
    for r in results[len(COMPLEX_CASES):]:
        assert r.flushed_passed and r.attachments["differs"], r
