"""Inductor's compiled graph is called without AOTAutograd's runtime wrapper where AOTAutograd's
metadata says the wrapper has nothing to do (backends/inductor/direct_call.py), with the wrapper's
numbers; where it has work (a mutated input, an output aliasing an input) the wrapper stays. A
compile that AOTAutograd's cache answers recalls the verdict of the compile that filled it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from parity.backends.inductor import InductorBackend, direct_call
from parity.ir import GraphBuilder, Symbol, f32


def _compile(fn, examples):
    from torch._inductor import config
    from torch._inductor.compile_fx import compile_fx

    with config.patch({"compile_threads": 1}):
        return direct_call.compile_direct(torch.fx.symbolic_trace(fn), examples, compile_fx)


def _count_wrapper_calls(monkeypatch) -> list:
    """Calls through Inductor's CompiledFxGraph.__call__: the wrapped path goes through it, the
    direct path calls the compiled callable itself."""
    from torch._inductor.output_code import CompiledFxGraph

    calls = []
    original = CompiledFxGraph.__call__
    monkeypatch.setattr(CompiledFxGraph, "__call__", lambda self, inputs: calls.append(1) or original(self, inputs))
    return calls


def test_an_inference_graph_is_called_directly_after_its_first_call(monkeypatch):
    run = _compile(lambda x, w: (torch.tanh(x @ w) * 3,), [torch.randn(4, 5), torch.randn(5, 2)])
    assert run.direct and run.why_wrapped is None
    calls = _count_wrapper_calls(monkeypatch)
    x, w = torch.randn(4, 5), torch.randn(5, 2)
    want = torch.tanh(x @ w) * 3
    first, second, third = (run([x, w])[0] for _ in range(3))
    assert len(calls) == 1  # the first call only: it sets up what Inductor defers to it
    for got in (first, second, third):
        torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
    assert torch.equal(second, first) and torch.equal(third, first)


def test_grad_mode_is_off_around_the_direct_call_as_the_wrapper_does():
    """Inductor's out= kernels refuse inputs that require grad under grad mode: the wrapper switches
    grad off around an inference graph, and so must the direct call."""
    run = _compile(lambda x, w: (x @ w,), [torch.randn(3, 4), torch.randn(4, 2)])
    x, w = torch.randn(3, 4, requires_grad=True), torch.randn(4, 2, requires_grad=True)
    assert torch.is_grad_enabled()
    for _ in range(2):
        (got,) = run([x, w])
        torch.testing.assert_close(got, (x @ w).detach())
        assert not got.requires_grad
    assert torch.is_grad_enabled()  # restored


def test_outputs_that_are_views_of_one_intermediate_run_directly_with_the_wrappers_numbers():
    """An inference graph returns such views itself (AOTAutograd rebuilds views from a base only
    where autograd needs them): the direct call's outputs are the function's."""
    def views(x):
        y = x * 2
        return y.view(-1), y.t()

    run = _compile(views, [torch.randn(3, 4)])
    assert run.direct
    x = torch.randn(3, 4)
    for _ in range(3):
        flat, transposed = run([x])
        assert flat.shape == (12,) and transposed.shape == (4, 3)
        assert torch.equal(flat, (x * 2).view(-1)) and torch.equal(transposed, (x * 2).t())


def test_an_input_written_inside_the_graph_runs_directly_once_per_call():
    """AOTAutograd keeps an inference graph's data mutation of an input inside the graph it
    hands Inductor (InductorExecutable.in_place's copy_): the wrapper has nothing to write back."""
    def mutates(x):
        x.add_(1)
        return (x * 2,)

    run = _compile(mutates, [torch.randn(3)])
    assert run.why_wrapped is None
    x = torch.zeros(3)
    for k in range(1, 4):
        (got,) = run([x])
        torch.testing.assert_close(x, torch.full((3,), float(k)))  # once per call, never twice
        torch.testing.assert_close(got, 2 * x)


def test_why_the_wrapper_stays_is_named():
    def restrides(x):
        x.transpose_(0, 1)  # a metadata mutation: the wrapper restrides the caller's tensor after the call
        return (x * 2,)

    run = _compile(restrides, [torch.randn(2, 3)])
    assert run.why_wrapped == "an input is mutated outside the graph"
    for _ in range(3):
        x = torch.arange(6.0).reshape(2, 3)
        (got,) = run([x])
        assert x.shape == (3, 2)
        torch.testing.assert_close(got, 2 * torch.arange(6.0).reshape(2, 3).t())
    aliasing = _compile(lambda x: (x.t(),), [torch.randn(2, 3)])
    assert aliasing.why_wrapped == "an output aliases or needs grad"


def _compile_static(graph, for_a_program=False):
    from parity.backends.inductor.compiling import in_fresh_thread, inductor_compile
    from parity.backends.inductor.lowering import to_fx

    fx = to_fx(graph, [tuple(v.type.shape) for v in graph.inputs])
    return (in_fresh_thread(inductor_compile, fx.module, [*fx.examples, *fx.constants], for_a_program),
            list(fx.constants))


@pytest.mark.usefixtures("inductors_graph_cache")
def test_a_cache_hit_recalls_the_verdict(tmp_path, monkeypatch):
    """Compiled again (a new process, or here a new compile of the same graph), a graph with
    symbolic dims comes from AOTAutograd's cache: no inner compile runs, and the verdict the
    first compile recorded makes the call direct. Without its file (a cache another tool
    filled), the wrapper stays."""
    from torch._dynamo.utils import counters

    from parity.backends.inductor.compiling import compile_symbolic_kernel, in_fresh_thread

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    b = GraphBuilder()
    x = b.input(f32[Symbol("B"), 8])
    graph = b.build([b.mul(b.tanh(x), b.tanh(b.tanh(x)))])  # a graph no other test compiles
    xs = np.linspace(-2, 2, 40, dtype=np.float32).reshape(5, 8)
    want = np.tanh(xs) * np.tanh(np.tanh(xs))

    def compiled_with(expect: dict):
        before = {k: counters[group][k] for group, k in expect}
        kernel = in_fresh_thread(compile_symbolic_kernel, graph, "cpu", {"B": 3})
        assert {(group, k): counters[group][k] - before[k] for group, k in expect} == expect
        for _ in range(3):
            np.testing.assert_allclose(kernel([torch.from_numpy(xs)])[0].numpy(), want, rtol=0, atol=3e-7)
        return kernel._run

    cold = compiled_with({("aot_autograd", "autograd_cache_hit"): 0})
    assert cold.direct
    warm = compiled_with({("aot_autograd", "autograd_cache_hit"): 1})
    assert warm.direct  # no inner compile: the recorded verdict
    (verdict,) = (tmp_path / "inductor" / "parity_direct_calls").iterdir()
    assert verdict.read_text() == "direct"
    verdict.unlink()
    unknown = compiled_with({("aot_autograd", "autograd_cache_hit"): 1})
    assert unknown.why_wrapped == "AOTAutograd's cache answered (no verdict recorded)"


def test_parity_graphs_run_directly_with_the_reference_numbers():
    b = GraphBuilder()
    x, y = b.input(f32[3, 4]), b.input(f32[3, 4])
    g = b.build([b.add(b.exp(x), y), b.sub(x, y)])
    before = sum(direct_call.WRAPPED_REASONS.values())
    run = InductorBackend().compile(g, "cpu")
    xs, ys = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4), np.arange(12, dtype=np.float32).reshape(3, 4)
    for _ in range(3):
        a, s = run(xs, ys)
        np.testing.assert_allclose(np.asarray(a), np.exp(xs) + ys, rtol=2e-7)
        np.testing.assert_array_equal(np.asarray(s), xs - ys)
    assert sum(direct_call.WRAPPED_REASONS.values()) == before


@pytest.mark.usefixtures("inductors_graph_cache")
@pytest.mark.parametrize("for_a_program", [False, True])
def test_a_static_graph_compiles_static_code(for_a_program):
    """A static graph's code asserts its sizes (no symbolic kernel for it), also under the
    ShapeEnv that lets Inductor's FX graph cache keep a program's graph (with_shape_env: its
    examples are fake tensors of the static sizes; real ones would be made symbolic)."""
    b = GraphBuilder()
    x = b.input(f32[5, 7])
    run, _ = _compile_static(b.build([b.exp(x)]), for_a_program)
    assert run.direct
    code = run._inner.source_code
    assert "assert_size_stride(arg0_1, (5, 7), (7, 1)" in code and "ks0" not in code
    xs = np.linspace(-3, 3, 35, dtype=np.float32).reshape(5, 7)
    for _ in range(2):
        np.testing.assert_allclose(run([torch.from_numpy(xs)])[0].numpy(), np.exp(xs), rtol=2e-7)


def test_a_guarded_caller_calls_inductors_code_itself_from_the_second_call_at_a_size(monkeypatch):
    """InductorExecutable.guarded (the frontend's call, after Dynamo's guards): from the second call
    at a size, grad mode off, Inductor's compiled graph is called from there, past _finish, the
    kernel and DirectCall; the results are those of the full path (contiguous, and not sharing
    memory, the transposed one included), boxed or not, and each new size or grad mode on takes the full path."""
    b = GraphBuilder()
    n = Symbol("N")
    x, y = b.input(f32[n, 4]), b.input(f32[n, 4])
    d = b.sub(x, y)
    g = b.build([b.add(b.exp(x), y), d, b.transpose(d, permutation=(1, 0))])
    executable = InductorBackend().compile(g, "cpu")
    full = []
    original = direct_call.DirectCall.__call__
    monkeypatch.setattr(direct_call.DirectCall, "__call__", lambda self, args: full.append(1) or original(self, args))
    run, boxed = executable.guarded(2), executable.guarded(2, picks=(1, 0))  # boxed: args are [y, x]
    calls = 0
    for size, repeat, grad in ((3, 3, False), (5, 2, False), (3, 2, False), (3, 2, True)):
        xs = torch.linspace(-1, 1, size * 4).reshape(size, 4)
        ys = torch.arange(size * 4, dtype=torch.float32).reshape(size, 4)
        with torch.set_grad_enabled(grad):
            for _ in range(repeat):
                for got in (run(xs, ys), boxed([ys, xs])):
                    torch.testing.assert_close(got[0], torch.exp(xs) + ys, rtol=2e-7, atol=0)
                    assert torch.equal(got[1], xs - ys) and torch.equal(got[2], (xs - ys).T)
                    assert got[2].is_contiguous() and got[2].data_ptr() != got[1].data_ptr()
                    calls += 1
    # the full path: each size's first call of each function (2 sizes, 2 functions), and every
    # call under grad mode (2 calls of 2 functions); all others call Inductor's code directly
    assert calls == 2 * (3 + 2 + 2 + 2) and len(full) == 2 * 2 + 2 * 2
