"""The runner on the reference backend (the whole database passes) and on a deliberately
wrong backend: failures, errors, unsupported cells, absent devices and deviations."""

import numpy as np
import pytest

from parity.backends.base import ANY_OP, Backend, Deviation, OpClaim
from parity.backends.registry import get_backend, register_backend, unregister_backend
from parity.conformance import execute, regressions, runner, selection, verdicts
from parity.conformance.opdb import all_cases
from parity.conformance.results import PASS, Cell, Target
from parity.ir import evaluate
from parity.ir.dtypes import DType
from parity.ir.interpreter import evaluate_node
from parity.ir.ops import primitives
from parity.ir.ops.conversion import round_float

from .perturbed import Perturbed


def WrongBackend():
    """The reference interpreter, made wrong on purpose.

    exp is off by a factor 1 + 2**-10 (far over 4 ULP in float32/float64), log by
    1 + 2**-12, cos does not compile, sort is not claimed, and tanh (correct) carries a
    declared deviation. cuda is listed but absent.
    """
    return Perturbed("wrong", {"exp": 1 + 2**-10, "log": 1 + 2**-12}, broken={"cos"}, unclaimed={"sort"},
                     devices=("cpu", "cuda"), deviations=(
                         Deviation("exp", "scaled on purpose", "1e13 ulp (measured 4.4e12 in f64)"),
                         Deviation("log", "scaled on purpose, but by more than it says", "2 ulp"),
                         Deviation("tanh", "declared, but tanh is right", "3 ulp", DType.float32, "cpu")))


@pytest.fixture
def wrong():
    backend = WrongBackend()
    register_backend(backend)
    yield backend
    unregister_backend(backend.name)


def test_the_whole_database_passes_on_the_reference_backend():
    result = runner.run(["reference"])
    total = len(all_cases()) + len(regressions.cases())  # the fuzzer's regressions are replayed too
    assert result.cases == total
    assert result.exit_code == 0
    assert {c.status for c in result.cells} == {"pass"}
    summary = result.summary()["reference/cpu"]
    assert summary["cases_passed"] == summary["cases"] == total
    assert not result.type_rule_failures and len(result.type_rules) >= 90


def test_wrong_backend_failures_errors_unsupported_and_not_run(wrong):
    result = runner.run(["reference", "wrong"], ops="^(exp|log|cos|sort|tanh|neg|softmax|log_softmax)$")
    assert result.exit_code == 1
    for dtype in ("f32", "f64"):
        cell = next(c for c in result.cells if c.op == "exp" and c.dtype == dtype and c.backend == "wrong"
                    and c.device == "cpu")
        assert cell.status == "deviation" and cell.failed > 0 and cell.max_ulp > 4
        assert cell.deviation["reason"] == "scaled on purpose"
    log = next(c for c in result.cells if c.op == "log" and c.dtype == "f32" and c.backend == "wrong"
               and c.device == "cpu")
    assert log.status == "fail" and "exceeds the recorded deviation (2 ulp)" in log.message
    assert log.worst and log.worst_case.startswith("log[f32]:")
    cos = next(c for c in result.cells if c.op == "cos" and c.dtype == "f32" and c.backend == "wrong"
               and c.device == "cpu")
    assert cos.status == "fail" and "RuntimeError: no kernel for cos" in cos.message
    sort = [c for c in result.cells if c.op == "sort" and c.backend == "wrong" and c.device == "cpu"]
    assert sort and all(c.status == "unsupported" and "does not claim sort" in c.message for c in sort)
    cuda = [c for c in result.cells if c.backend == "wrong" and c.device == "cuda"]
    assert cuda and {c.status for c in cuda} == {"not run"} and all(c.cases == 0 for c in cuda)
    # Composites the wrong backend does not claim run decomposed: log_softmax reaches the wrong
    # log and fails; softmax reaches the wrong exp, but e / sum(e) cancels the factor.
    by_op = {c.op: c for c in result.cells if c.dtype == "f32" and c.backend == "wrong" and c.device == "cpu"}
    assert by_op["log_softmax"].path == "decomposed" and by_op["log_softmax"].status == "fail"
    assert by_op["softmax"].path == "decomposed" and by_op["softmax"].status == "pass"
    neg = next(c for c in result.cells if c.op == "neg" and c.dtype == "f32" and c.backend == "wrong"
               and c.device == "cpu")
    assert neg.status == "pass" and neg.path == "native"
    assert {c.status for c in result.cells if c.backend == "reference"} == {"pass"}


def test_a_declared_deviation_that_no_longer_happens_is_stale(wrong):
    result = runner.run(["wrong"], ops="^tanh$", dtypes=[DType.float32])
    (check,) = [d for d in result.deviations if d.op == "tanh"]
    assert check.state == "stale" and check.cells == ["tanh[f32]@cpu"]
    assert not result.unexpected_failures and result.exit_code == 1
    states = {d.op: d.state for d in result.deviations}
    assert states["exp"] == "not checked"  # exp did not run: neither recorded nor stale


def test_recorded_deviations_alone_exit_zero(wrong):
    result = runner.run(["wrong"], ops="^exp$", devices=["cpu"], quick=True)
    assert {c.status for c in result.cells if c.dtype in ("f32", "f64")} == {"deviation"}
    assert [d.state for d in result.deviations if d.op == "exp"] == ["recorded"]
    assert result.exit_code == 0


def _run_registered(backend, **options):
    """``runner.run`` on ``backend`` alone, registered for the run only."""
    register_backend(backend)
    try:
        return runner.run([backend.name], **options)
    finally:
        unregister_backend(backend.name)


def test_a_nan_where_the_reference_is_finite_is_named_not_hidden_behind_the_finite_maximum():
    # a small scaling (within the deviation) plus one NaN: the cell's finite maximum is under the
    # recorded figure, so the message must name the non-finite error instead of "exceeds"
    planted = []

    def one_nan(op, dtype, r):  # in the first case that runs only
        r = np.array(r, copy=True)
        if op == "exp" and r.size > 1 and not planted:
            planted.append(r.flat[1])
            r.flat[1] = np.nan
        return r

    backend = Perturbed("nan_exp", {"exp": 1 + 2**-22}, dtypes=[DType.float32], change=one_nan,
                        deviations=(Deviation("exp", "scaled a little on purpose", "1000 ulp", DType.float32),))
    result = _run_registered(backend, ops="^exp$", dtypes=[DType.float32], quick=True)
    (cell,) = [c for c in result.cells if c.backend == "nan_exp" and c.device == "cpu"]
    assert planted and not np.isnan(planted[0]) and cell.cases > 1
    assert cell.status == "fail" and cell.max_ulp is not None and cell.max_ulp < 1000
    assert "has a non-finite error" in cell.message and "(1000 ulp) excuses" in cell.message
    assert "exceeds the recorded deviation" not in cell.message


def test_run_case_api_for_one_case(wrong):
    case = next(c for c in all_cases() if c.op == "exp" and c.dtype is DType.float32 and c.name == "random")
    bad = execute.run_case(wrong, "cpu", case)
    assert bad.status == "fail" and bad.max_ulp > 4 and bad.mismatches > 0
    good = execute.run_case(get_backend("reference"), "cpu", case)
    assert good.status == "pass" and good.max_ulp <= 0.5 and good.path == "native"


def test_bundled_failure_is_isolated_to_its_case(wrong):
    cases = [c for c in all_cases() if c.op == "cos" and c.dtype is DType.float32][:3]
    bundle = [execute.Prepared(c) for c in cases]
    results = execute.run_bundle(wrong, "cpu", bundle)
    assert [r.status for r in results] == ["error"] * 3 and [r.case for r in results] == [c.id for c in cases]


def test_quick_keeps_edge_cases_and_drops_long_ones():
    quick = selection.select_cases(quick=True)
    full = selection.select_cases()
    assert len(quick) < len(full) // 2 + 1000
    assert not [c for c in quick if "long" in c.tags]
    assert {(c.op, c.dtype) for c in quick} == {(c.op, c.dtype) for c in full}
    assert {c.id for c in full if "edge" in c.tags} <= {c.id for c in quick}


def test_multi_op_case_with_its_own_bound(wrong):
    """The shape of a fuzzer regression: a small graph, named, with an explicit bound."""
    from parity.conformance.bounds import Bound
    from parity.conformance.case import Case

    def build(b, operands, attrs):
        return b.exp(b.neg(operands[0]))

    case = Case("exp_of_neg", DType.float32, lambda rng: (rng.standard_normal(16).astype(np.float32),),
                name="regression_1", build=build, bound=Bound("ulp", 4))
    result = runner.run(["reference", "wrong"], cases=[case], devices=["cpu"])
    statuses = {(c.backend, c.op): c.status for c in result.cells}
    assert statuses == {("reference", "exp_of_neg"): "pass", ("wrong", "exp_of_neg"): "fail"}
    from parity.conformance import reports

    doc = reports.to_json(result)
    assert {(c["family"], c["kind"]) for c in doc["cells"]} == {("graphs", "graph")}
    assert "| exp_of_neg | G | ✅ pass | ❌ fail" in reports.to_markdown(result)


class PartialSoftmax(Backend):
    """Claims every primitive, and softmax natively in float32 only."""

    name = "partial_softmax"
    devices = ("cpu",)

    def claims(self):
        claims = {op.name: OpClaim(frozenset(op.dtypes)) for op in primitives()}
        return claims | {"softmax": OpClaim(frozenset({DType.float32}))}

    def compile(self, graph, device):
        self.seen = getattr(self, "seen", []) + [sorted(graph.op_counts())]
        return lambda *arrays: evaluate(graph, list(arrays))


def test_composite_claimed_in_some_dtypes_runs_natively_there_and_decomposed_elsewhere():
    backend = PartialSoftmax()
    result = runner.run([backend], ops="^softmax$", dtypes=[DType.float32, DType.float16], quick=True)
    paths = {c.dtype: (c.path, c.status) for c in result.cells}
    assert paths == {"f32": ("native", "pass"), "f16": ("decomposed", "pass")}
    assert ["softmax"] in backend.seen and any("exp" in ops and "softmax" not in ops for ops in backend.seen)


class FlushingBackend(Backend):
    """The reference interpreter on a CPU with FTZ/DAZ: float inputs and results below float32's
    normal range (float64's for f64) are read and written as ±0. sqrt is also 2**-10 off, so
    that a flush_to_zero deviation is seen not to excuse errors it does not explain."""

    name = "flushing"
    devices = ("cpu",)
    deviations = tuple(Deviation(ANY_OP, "FTZ/DAZ on purpose", "subnormals read and written as ±0", d, "cpu",
                                 flush_to_zero=True) for d in (DType.bfloat16, DType.float32, DType.float64))

    def claims(self):
        return {op.name: OpClaim(frozenset(op.dtypes)) for op in primitives()}

    def compile(self, graph, device):
        def run(*arrays):
            env = {v: execute.flush_subnormals(np.asarray(a)) for v, a in zip(graph.inputs, arrays)}
            for node in graph.nodes:
                ins = [env[v] for v in node.inputs]
                results = evaluate_node(node.op, ins, node.attrs, [v.type for v in node.inputs],
                                        [v.type for v in node.outputs])
                for v, r in zip(node.outputs, results):
                    r = execute.flush_subnormals(np.asarray(r), v.type.dtype)
                    env[v] = round_float(r * (1 + 2**-10), v.dtype) if node.op == "sqrt" else r
            return [env[v] for v in graph.outputs]

        return run


def test_flush_subnormals_model():
    f32 = execute.flush_subnormals(np.array([1e-39, -1e-39, 2e-38, np.nan, -np.inf], np.float32))
    assert f32[:3].tolist() == [0.0, -0.0, np.float32(2e-38)] and np.signbit(f32[1])
    assert np.isnan(f32[3]) and f32[4] == -np.inf
    assert execute.flush_subnormals(np.array([1e-39, 5e-324])).tolist() == [1e-39, 0.0]  # f64: its own range
    assert execute.flush_subnormals(np.array([1e-39]), DType.float32).tolist() == [0.0]  # an f32 oracle in f64
    assert execute.flush_subnormals(np.array([6e-8], np.float16)).tolist() == [np.float16(6e-8)]  # normal in f32
    assert execute.flush_subnormals(np.array([3, -1])).tolist() == [3, -1]


def test_flush_to_zero_deviation_explains_only_what_flushing_explains():
    backend = FlushingBackend()
    result = runner.run([backend], ops="^(exp|mul|relu|max_pool|sqrt)$", dtypes=[DType.float32], quick=True)
    status = {c.op: c for c in result.cells}
    for op in ("exp", "mul", "relu", "max_pool"):  # subnormal cases fail, each explained by flushing
        assert status[op].status == "deviation" and status[op].failed > 0, op
        assert status[op].explained_by[0]["reason"] == "FTZ/DAZ on purpose"
    assert status["sqrt"].status == "fail"  # 2**-10 off on normal values: flushing does not explain it
    check = next(d for d in result.deviations if d.dtype == "f32")
    assert check.state == "recorded" and "exp[f32]@cpu" in check.cells and "sqrt[f32]@cpu" not in check.cells


def test_a_deviation_for_every_op_is_stale_only_on_a_whole_run():
    class Exact(FlushingBackend):
        name = "exact"

        def compile(self, graph, device):
            return lambda *arrays: evaluate(graph, list(arrays))

    subset = runner.run([Exact()], ops="^exp$", dtypes=[DType.float32], quick=True)
    assert {d.state for d in subset.deviations} == {"not checked"} and subset.exit_code == 0
    cells = [Cell("exp", "f32", "exact", "cpu", PASS)]
    targets = [Target("exact", "cpu", True, Exact())]
    checks = verdicts.check_deviations(targets, cells, whole=True)
    assert [d.state for d in checks if d.dtype == "f32"] == ["stale"]


@pytest.mark.parametrize("arguments, message", [
    (dict(backends=["onx"]), "unknown backend 'onx'; did you mean 'onnx'? choose from: reference, xla, triton, onnx"),
    (dict(backends=["reference"], devices=["cdua"]), "unknown device 'cdua'; choose from: cpu"),
    (dict(backends=["xla"], devices=["cdua"]), "unknown device 'cdua'; did you mean 'cuda'? choose from: cpu, cuda, tpu"),
    (dict(ops="["), "ops '[' is not a regular expression: unterminated character set at position 0"),
    (dict(dtypes=["f32"]), "each of dtypes (e.g. DType.float32, or DType.from_short('f32')) should be DType, got str"),
    (dict(models="hff"), "unknown model set 'hff'; did you mean 'hf'? choose from: zoo, hf, all"),
])
def test_bad_arguments_are_refused_before_anything_runs(arguments, message):
    """A typo used to run: an unknown backend became an empty column, an unknown device no column."""
    from parity.ir.usage import UsageError

    with pytest.raises(UsageError) as caught:
        runner.run(**arguments)
    assert str(caught.value).startswith(message)


def test_a_case_reaching_a_declined_dtype_through_another_operand_is_unsupported_not_failed():
    # convert's claim names its input dtype; converting f32 to c64 reaches the declined c64
    backend = Perturbed("no_complex")
    backend.declined_dtypes = {DType.complex64: "no complex here", DType.complex128: "no complex here"}
    original = backend.compile

    def compile_refusing_complex(graph, device):
        if any(v.type.dtype.is_complex for n in graph.nodes for v in (*n.inputs, *n.outputs)):
            raise RuntimeError("complex reached the backend")
        return original(graph, device)

    backend.compile = compile_refusing_complex
    result = _run_registered(backend, ops="^convert$", dtypes=[DType.float32], quick=True)
    (cell,) = [c for c in result.cells if c.backend == "no_complex" and c.device == "cpu"]
    assert cell.status == "pass" and cell.unsupported > 0 and cell.passed == cell.cases - cell.unsupported
    assert result.exit_code == 0
