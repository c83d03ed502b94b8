"""Conformance you can trust (issue 16): each way a wrong answer used to pass, planted as a
fault at a backend's executable boundary, must now fail.

1. a deviation excused an exception and a wrong shape or dtype;
2. a deviation without a number excused anything (and hid XLA's bf16 cumprod zeros);
3. the fuzzer's flush-to-zero excuse flushed float16's own subnormals, gave n·(f16 tiny) of
   slack to every bound, and was read from any deviation mentioning "subnormal";
4. a saved regression's (backend, op, dtype) hid every new mismatch of that op;
5. the accumulation bound n·ε·Σ|terms| passed zeros on long sums; hardsigmoid(3.4e38) = 0.5;
(6. the XLA elementwise test's f16 blind spot: tests/backends/xla/test_elementwise.py).
"""

import numpy as np
import pytest

from parity.backends.base import ANY_OP, Deviation
from parity.backends.registry import backend_names, get_backend
from parity.conformance import execute, fuzz, opdb, regressions, runner, verdicts
from parity.conformance.bounds import CONTRACT_BLOCK, sum_chain
from parity.conformance.compare import measure
from parity.conformance.declared import NOTHING, Declared
from parity.conformance.fuzz import FuzzGraph, fuzz_case
from parity.conformance.opdb.common import case as case_of
from parity.conformance.opdb.reductions import LONG_TERMS
from parity.ir import GraphBuilder, evaluate
from parity.ir.dtypes import DType
from parity.ir.ops.conversion import round_float

from .perturbed import Perturbed, Wrapped, affine

F16, BF16, F32, F64 = DType.float16, DType.bfloat16, DType.float32, DType.float64


def _cell(result, op, dtype, backend=None):
    return next(c for c in result.cells if c.op == op and c.dtype == dtype and c.device == "cpu"
                and backend in (None, c.backend))


# -- 1. no deviation excuses an exception or a malformed output ---------------------------------------


def test_a_deviation_never_excuses_an_exception_or_a_wrong_shape_or_dtype():
    generous = (Deviation("tan", "declared, huge", "1e300 ulp", F64, "cpu"),
                Deviation("exp", "declared, huge", "1e300 ulp", F64, "cpu"),
                Deviation("log", "declared, huge", "1e300 ulp", F64, "cpu"))
    crashing = Perturbed("crashing", broken={"tan"}, deviations=generous)
    result = runner.run([crashing], ops="^tan$", dtypes=[F64], quick=True)
    tan = _cell(result, "tan", "f64")
    assert tan.status == "fail" and "RuntimeError: no kernel for tan" in tan.message
    assert "never excuses an exception" in tan.message and result.exit_code == 1
    reference = get_backend("reference")
    shape = Wrapped(reference, "exp", lambda a, d, i: a.reshape(-1)[:1].copy(), name="shape", deviations=generous)
    dtype = Wrapped(reference, "log", lambda a, d, i: a.astype(np.float32), name="dtype", deviations=generous)
    result = runner.run([shape, dtype], ops="^(exp|log)$", dtypes=[F64], quick=True)
    exp, log = _cell(result, "exp", "f64", "shape"), _cell(result, "log", "f64", "dtype")
    assert exp.status == "fail" and "expected float64" in exp.message
    assert log.status == "fail" and "is float32" in log.message
    assert result.exit_code == 1


def test_the_fuzzer_never_counts_a_malformed_node_as_a_deviation():
    b = GraphBuilder()
    x = b.input(F64[3])
    graph = b.build([b.exp(x)])
    fg = FuzzGraph(0, 0, graph, [np.array([0.5, 1.0, 2.0])])
    wrong = Wrapped(get_backend("reference"), "exp", lambda a, d, i: a.astype(np.float32), name="wrong",
                    deviations=(Deviation("exp", "declared, huge", "1e300 ulp", F64, "cpu"),))
    r = execute.run_case(wrong, "cpu", fuzz_case(fg))
    (node,) = r.worst["nodes"]
    assert r.status == "fail" and node["malformed"] and node["max_ulp"] is None
    assert not fuzz._all_declared(wrong, "cpu", r.worst["nodes"])


# -- 2. every deviation carries a number --------------------------------------------------------------


def test_a_deviation_without_a_number_explains_nothing():
    xla = get_backend("xla")
    text_only = Deviation("reduce_prod", "text only", "±inf or NaN where the product is finite", BF16, "cpu")
    planted = Wrapped(xla, "reduce_prod", affine(3, 1), dtypes={BF16}, deviations=(*xla.deviations, text_only))
    result = runner.run([planted], ops="^reduce_prod$", dtypes=[BF16], quick=True)
    cell = _cell(result, "reduce_prod", "bf16")
    assert cell.status == "fail" and "records no number" in cell.message
    (check,) = [d for d in result.deviations if d.op == "reduce_prod"]
    assert check.state == "invalid" and "must start with the number" in check.problem
    assert result.exit_code == 1


@pytest.mark.parametrize("name", ["reference", "xla", "onnx", "triton"])
def test_every_declared_deviation_carries_a_number(name):
    if name not in backend_names():
        pytest.skip(f"{name} is not installed")
    for d in get_backend(name).deviations:
        assert not verdicts.invalid_reason(d), (name, d)


def test_xla_bf16_cumprod_keeps_a_product_that_underflows_float32_on_the_way():
    """The review's cumprod[bf16]:full_range: 0.0 for 0.407, 1.77e9, 8.7e28. A lowering bug (the
    product ran in f32, with no more range than bf16), fixed in the lowering: no deviation."""
    case = next(c for c in opdb.all_cases() if c.id == "cumprod[bf16]:full_range")
    p = execute.Prepared(case)
    result = execute.run_case(get_backend("xla"), "cpu", case)
    assert result.status == "pass", result.message
    oracle = p.oracle[0].astype(np.float64)
    assert np.isclose(oracle[0, 12], 0.407, rtol=1e-3) and np.isclose(oracle[1, 8], 1.77e9, rtol=1e-2)
    assert not [d for d in get_backend("xla").deviations if d.op in ("cumprod", "reduce_prod")]


# -- 3. flush-to-zero only where the backend flushes, declared as data ----------------------------------


def _softmax_graph(dtype):
    b = GraphBuilder()
    x = b.input(dtype[1, 1024])
    return b.build([b.softmax(x, axis=1)])


@pytest.mark.parametrize("dtype", [F16, F32])
def test_the_fuzzer_does_not_excuse_a_large_error_on_normal_values_as_flush_to_zero(dtype):
    """softmax over 1,024 terms off by 0.05 on one normal output: the old excuse flushed below
    f16's own smallest normal (6.1e-5) and gave 1,024·6.1e-5 = 0.0625 of slack, so f16 passed as
    a deviation while f32 failed. XLA declares flush-to-zero in bf16/f32/f64, not f16."""
    graph = _softmax_graph(dtype)
    arrays = [np.random.default_rng(3).normal(size=(1, 1024)).astype(dtype.numpy)]
    xla = get_backend("xla")

    def off(a, d, inputs):
        a = a.astype(np.float64)
        a[0, 0] += 0.05
        return round_float(a, d)

    planted = Wrapped(get_backend("reference"), "softmax", off, name="xla", deviations=xla.deviations,
                      claim_too=("softmax",))
    r = execute.run_case(planted, "cpu", fuzz_case(FuzzGraph(0, 0, graph, arrays)))
    assert r.status == "fail" and [n["flush_to_zero"] for n in r.worst["nodes"]] == [False]
    assert not fuzz._all_declared(planted, "cpu", r.worst["nodes"])


def test_flush_to_zero_is_declared_by_the_flag_and_per_dtype_not_by_prose():
    prose = Perturbed("prose", deviations=(Deviation(ANY_OP, "reads subnormal inputs as zero",
                                                     "subnormal results become ±0", device="cpu"),))
    assert not fuzz.declares_flush_to_zero(prose, "cpu", "f32") and not Declared.of(prose, "cpu").flushes
    undated = Perturbed("undated", deviations=(Deviation(ANY_OP, "FTZ", "subnormals as ±0", device="cpu",
                                                         flush_to_zero=True),))
    assert not Declared.of(undated, "cpu").flushes
    result = runner.run([undated], ops="^neg$", dtypes=[F32], quick=True)
    assert [d.state for d in result.deviations] == ["invalid"] and result.exit_code == 1
    xla = get_backend("xla")
    assert Declared.of(xla, "cpu").flushes == {BF16, F32, F64, DType.complex64, DType.complex128}
    assert fuzz.declares_flush_to_zero(xla, "cpu", "f32") and not fuzz.declares_flush_to_zero(xla, "cpu", "f16")


# -- 4. a regression is known only as the very graph it was found in ---------------------------------------


def test_a_fixed_regression_does_not_hide_new_failures_of_its_op():
    """XLA's f32 sub made to return 1.5x + 1: saved xla sub regressions (xla-sub-f32-fma, fixed)
    used to make every such finding 'known' (zero new findings, exit 0)."""
    assert any(r.meta["backend"] == "xla" and r.meta["op"] == "sub" for r in regressions.load_all())
    planted = Wrapped(get_backend("xla"), "sub", affine(1.5, 1.0), dtypes={F32})
    report = fuzz.run(4, seed=2030, backends=[planted], only=[7, 88, 118, 122], save=False, do_shrink=False)
    subs = [f for f in report.findings if f.op == "sub" and f.dtype == "f32"]
    assert len(subs) == 4 and not any(f.known for f in subs)
    assert len(report.new_findings) >= 1  # the first is new; the others repeat its signature in this run


def test_a_saved_regression_is_known_as_its_own_graph(tmp_path):
    exp_off = Perturbed("exp_off", {"exp": 1 + 2**-12}, dtypes={F32})
    # Seed 1109's first 40 graphs hold f32 exp in two graphs and no other op computing with exp.
    # It was 27 until the fuzzer drew its unary ops from the op table's families in table order.
    first = fuzz.run(40, seed=1109, backends=[exp_off], directory=tmp_path)
    saved = [f for f in first.findings if f.regression]
    assert saved and not any(f.known for f in first.findings)
    again = fuzz.run(40, seed=1109, backends=[exp_off], directory=tmp_path, save=False, do_shrink=False)
    assert [f.graph for f in again.findings if f.known] == [saved[0].graph]
    others = [f for f in again.findings if f.op == "exp" and f.graph != saved[0].graph]
    assert others and not others[0].duplicate and others[0] in again.new_findings  # same op, another graph


# -- 5. the accumulation contract ----------------------------------------------------------------------------


LONG = [c for c in opdb.all_cases() if "long" in c.tags]


@pytest.mark.parametrize("case", LONG, ids=lambda c: c.id)
def test_zeros_fail_every_long_case(case):
    p = execute.Prepared(case)
    zeros = [np.zeros_like(np.asarray(o).astype(t.dtype.numpy)) for o, t in zip(p.oracle, p.graph.output_types)]
    assert not measure(case, p.graph, p.arrays, p.oracle, zeros).passed
    rounded = [o.astype(t.dtype.numpy) if t.dtype.is_complex else round_float(o, t.dtype)  # complex: by part
               for o, t in zip(p.oracle, p.graph.output_types)]
    assert measure(case, p.graph, p.arrays, p.oracle, rounded).passed


def _drop_block(start: int, size: int = 1024):
    def fault(a, dtype, inputs):
        x = np.asarray(inputs[0]).astype(np.float64)
        return round_float(a.astype(np.float64) - x[start:start + size].sum(), dtype)

    return fault


def test_dropping_one_block_of_1024_terms_from_a_long_sum_fails():
    case = next(c for c in LONG if c.op == "reduce_sum" and c.dtype is F32)
    planted = Wrapped(get_backend("reference"), "reduce_sum", _drop_block(0), name="dropped")
    assert execute.run_case(planted, "cpu", case).status == "fail"
    assert execute.run_case(get_backend("reference"), "cpu", case).status == "pass"
    # Every one of the 1,024 blocks, dropped in turn: the bound is (20 + 64)·ε·Σ|x| ≈ 8.4, the
    # blocks' sums are N(0, 1024)-distributed; all blocks whose sum exceeds the bound are caught.
    p = execute.Prepared(case)
    x = p.arrays[0].astype(np.float64)
    sums = x.reshape(-1, 1024).sum(axis=1)
    total = float(p.oracle[0])
    caught = np.array([not measure(case, p.graph, p.arrays, p.oracle,
                                   [np.array(total - s, np.float32)]).passed for s in sums])
    allowed = sum_chain(LONG_TERMS, CONTRACT_BLOCK) * np.finfo(np.float32).eps * np.abs(x).sum()
    assert caught[np.abs(sums) > 1.01 * allowed].all() and caught.mean() > 0.75


def test_a_backend_that_declares_one_sequential_pass_gets_the_classic_bound():
    assert sum_chain(LONG_TERMS, None) == LONG_TERMS
    assert sum_chain(LONG_TERMS, CONTRACT_BLOCK) == 20 + CONTRACT_BLOCK
    assert sum_chain(8, CONTRACT_BLOCK) == 8  # never more than n
    onnx = Declared.of(get_backend("onnx"), "cpu") if "onnx" in backend_names() else None
    if onnx is not None:
        assert onnx.block("reduce_sum", F32) is None and onnx.block("dot_general", F32) == 1024
    assert NOTHING.block("reduce_sum", F32) == CONTRACT_BLOCK


def test_products_keep_n_in_their_bound():
    from parity.conformance.bounds import chain

    assert chain("reduce_prod", 4096, CONTRACT_BLOCK) == 4096 and chain("reduce_sum", 4096, CONTRACT_BLOCK) == 76


@pytest.mark.parametrize("x, wrong", [(3.4e38, 0.5), (-3.4e38, 0.5), (1e6, 0.999), (7.0, 0.99)])
def test_hardsigmoid_far_from_its_kink_is_held_to_its_saturated_value(x, wrong):
    case = case_of("hardsigmoid", F32, "planted", (np.array([x], np.float32),))
    p = execute.Prepared(case)
    assert not measure(case, p.graph, p.arrays, p.oracle, [np.array([wrong], np.float32)]).passed
    assert measure(case, p.graph, p.arrays, p.oracle, [evaluate(p.graph, p.arrays)[0]]).passed


# -- part 5: a flush-to-zero cell says so ------------------------------------------------------------------


def test_a_flush_to_zero_cell_shows_the_error_left_after_flushing():
    from parity.conformance import reports

    from .test_runner import FlushingBackend  # the interpreter with FTZ/DAZ (its sqrt is off; exp is not)

    result = runner.run([FlushingBackend()], ops="^exp$", dtypes=[F32], quick=True)
    cell = _cell(result, "exp", "f32")
    assert cell.status == "deviation" and cell.flush_to_zero
    assert cell.max_ulp > 1e6 and cell.flushed_ulp is not None and cell.flushed_ulp <= 4
    ((_, row),) = reports.matrix(result)
    text = reports.cell_text(row["flushing/cpu"])
    assert text.startswith("flush-to-zero") and "e+" not in text
    doc = reports.to_json(result)
    (json_cell,) = [c for c in doc["cells"] if c["op"] == "exp"]
    assert json_cell["max_ulp"] == cell.max_ulp and json_cell["flush_to_zero"] is True
