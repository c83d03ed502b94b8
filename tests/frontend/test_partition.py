"""Partitioned fallback (strict=False): only the nodes a backend cannot run go to eager torch.

A backend that cannot run tanh, and marks everything it computes (it adds a planted
offset to every float result when asked), shows which nodes really ran on it."""

import warnings

import numpy as np
import pytest
import torch

import parity
from parity.backends.base import Backend, OpClaim
from parity.backends.registry import register_backend, unregister_backend
from parity.frontend.compiled_graph import reset_caches
from parity.frontend.errors import InternalError, UnsupportedAtenOp
from parity.ir import evaluate, primitives


class _NoTanh(Backend):
    """Every primitive but tanh; records the graphs it compiles; ``offset`` is a planted fault."""

    name = "partition_test"
    devices = ("cpu",)

    def __init__(self, offset=0.0):
        self.compiled = []
        self.offset = offset

    def claims(self):
        return {op.name: OpClaim(frozenset(op.dtypes)) for op in primitives() if op.name != "tanh"}

    def compile(self, graph, device):
        self.compiled.append(graph)

        def run(*arrays):
            out = evaluate(graph, arrays)
            return [o + np.asarray(self.offset, o.dtype) if o.dtype.kind == "f" else o for o in out]

        return run


@pytest.fixture
def backend(request):
    torch._dynamo.reset()
    reset_caches()
    instance = _NoTanh(getattr(request, "param", 0.0))
    register_backend(instance)
    yield instance
    unregister_backend(instance.name)
    torch._dynamo.reset()


def model(x, w):
    y = x @ w + 1
    z = torch.tanh(y)  # the one op the backend cannot run
    return (z * 3).sum(dim=1)


def _run(fn, *args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn(*args)
    return out, [str(w.message) for w in caught if str(w.message).startswith("parity:")]


def test_only_the_unsupported_node_runs_eagerly(backend):
    f = parity.compile(model, backend=backend.name, strict=False)
    x, w = torch.randn(4, 5), torch.randn(5, 3)
    out, messages = _run(f, x, w)
    torch.testing.assert_close(out, model(x, w), rtol=1e-5, atol=1e-6)
    assert len(messages) == 1 and messages[0].startswith("parity: aten.tanh.default at ")
    assert f"test_partition.py:{model.__code__.co_firstlineno + 2} in model" in messages[0]
    (report,) = parity.fallbacks(f)
    assert report.partitions == 2  # the matmul+add before tanh, the mul+sum after it
    assert report.in_eager == 1 and report.on_backend >= 4
    assert [fb.aten_op for fb in report.fallbacks] == ["aten.tanh.default"]
    ops = [sorted({n.op for n in g.nodes}) for g in backend.compiled]
    assert any("dot_general" in o for o in ops) and any("reduce_sum" in o or "mul" in o for o in ops)
    assert not any("tanh" in o for o in ops)


@pytest.mark.parametrize("backend", [0.25], indirect=True)
def test_partitions_really_run_on_the_backend(backend):
    # The planted offset shows in the result: the pieces around tanh were not run eagerly.
    f = parity.compile(model, backend=backend.name, strict=False)
    x, w = torch.randn(4, 5), torch.randn(5, 3)
    out, _ = _run(f, x, w)
    expected = (torch.tanh(x @ w + 1 + 0.25) * 3).sum(dim=1) + 0.25
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)
    assert not torch.allclose(out, model(x, w), atol=1e-2)


def test_gradients_flow_through_a_split_graph(backend):
    f = parity.compile(model, backend=backend.name, strict=False)
    x, w = torch.randn(4, 5, requires_grad=True), torch.randn(5, 3, requires_grad=True)
    out, _ = _run(f, x, w)
    out.sum().backward()
    x2, w2 = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    model(x2, w2).sum().backward()
    torch.testing.assert_close(x.grad, x2.grad, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(w.grad, w2.grad, rtol=1e-5, atol=1e-6)
    # tanh's backward is 1 - z², which the backend runs: only the forward graph is split
    assert [r.kind for r in parity.fallbacks(f)] == ["forward"]
    assert len(backend.compiled) == 3  # two forward partitions and the whole backward graph


def test_strict_error_suggests_only_backends_that_run_the_op(backend):
    f = parity.compile(model, backend=backend.name)
    with pytest.raises(UnsupportedAtenOp) as info:
        f(torch.randn(4, 5), torch.randn(5, 3))
    fix = str(info.value).splitlines()[2]
    assert fix.startswith("  fix: pass strict=False to run only this op eagerly in torch")
    assert "reference" in fix and "partition_test" not in fix.split("stays on")[1].split(";")[1]


def test_untranslatable_op_suggests_no_other_backend():
    torch._dynamo.reset()
    f = parity.compile(lambda x: torch.special.bessel_j0(x) + 1, backend="reference")
    with pytest.raises(UnsupportedAtenOp) as info:
        f(torch.ones(3))
    lines = str(info.value).splitlines()
    assert lines[1] == "  why: parity has no translation for this op (see `parity aten`)"
    assert "use a backend" not in lines[2]


def test_explain_shows_the_share_on_each_backend(backend):
    report = parity.explain(model, torch.randn(4, 5), torch.randn(5, 3), backends=[backend.name, "reference"])
    (graph,) = report.graphs
    on, total = graph.share(backend.name)
    assert total - on == 1 and graph.share("reference") == (total, total)
    assert f"{backend.name} {on}/{total} (1 op (1 aten node) in eager torch with strict=False)" in str(report)


class _Broken(_NoTanh):
    name = "broken_test"

    def compile(self, graph, device):
        raise RuntimeError("lowering exploded")


def test_an_internal_failure_is_a_bug_report_not_dynamos_wrapper():
    torch._dynamo.reset()
    register_backend(_Broken())
    try:
        f = parity.compile(lambda x: x * 2 + 1, backend="broken_test")
        with pytest.raises(InternalError) as info:
            f(torch.ones(3))
    finally:
        unregister_backend("broken_test")
    text = str(info.value)
    assert text.startswith("parity failed to compile the inference graph for backend 'broken_test' (your code from ")
    assert "RuntimeError: lowering exploded" in text and "please report it" in text
    assert "BackendCompilerFailed" not in text
