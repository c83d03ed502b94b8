"""A graph with symbolic dims compiles once in Inductor, with symbolic sizes, and serves every
later size (backends/inductor/symbolic.py); a graph that has no symbolic form compiles per
shape, and says why."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from parity.backends.inductor import LOWERINGS
from parity.backends.inductor.backend import PerShapeCompileWarning
from parity.backends.inductor.symbolic import DynamicKernel, NoSymbolicForm, to_symbolic_fx
from parity.ir import GraphBuilder, evaluate, f32, i32, u32
from parity.ir.dims import Symbol
from parity.ir.dtypes import DType

B = Symbol("B")


def _sized_graph():
    """Ops whose attributes or results follow B (a reshape to B*3, an iota of length B, a slice to
    B), beside elementwise math: two kernels (Inductor's compiles cost seconds each)."""
    b = GraphBuilder("sized")
    x, y = b.input(f32[B, 3]), b.input(i32[B])
    flat = b.reshape(b.tanh(x), shape=(B * 3,))
    counted = b.add(y, b.iota(shape=(B,), dimension=0, dtype=DType.int32))
    return b.build([flat, b.slice(counted, start_indices=(1,), limit_indices=(B,), strides=(1,))])


def test_one_compile_serves_every_size_and_size_1_specialises(backend):
    graph = _sized_graph()
    run = backend.compile(graph, "cpu")
    assert not run.compiles_per_shape and not backend.compiles_per_shape_for(graph)
    before = backend.compile_count
    counts = []
    for n in (3, 5, 1, 7, 64):
        rng = np.random.default_rng(n)
        x = rng.standard_normal((n, 3)).astype(np.float32) * 3
        y = rng.integers(-1000, 1000, n).astype(np.int32)
        flat, tail = (t.numpy() for t in run(x, y))
        want = evaluate(graph, [x, y])
        np.testing.assert_array_max_ulp(flat, want[0], maxulp=4)  # tanh: transcendental, 4 ULP
        np.testing.assert_array_equal(tail, want[1])  # integer ops: exact
        assert flat.shape == (3 * n,) and tail.shape == (n - 1,)
        counts.append(backend.compile_count - before)
    # one dynamic compile at 3 serves 5, 7 and 64; size 1 is specialised (as torch's), a compile of its own
    assert counts == [1, 1, 2, 2, 2]


def test_a_size_symbol_that_is_no_input_dim_compiles_per_shape_with_one_warning(backend):
    b = GraphBuilder("pairs")
    n = Symbol("N")
    graph = b.build([b.neg(b.input(f32[n * 2]))])
    assert backend.compiles_per_shape_for(graph)  # known before any compile: auto reads it
    run = backend.compile(graph, "cpu")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        np.testing.assert_array_equal(run(np.arange(6, dtype=np.float32))[0].numpy(), -np.arange(6))
    (warning,) = [w for w in caught if w.category is PerShapeCompileWarning]
    first, fix = str(warning.message).splitlines()
    assert first == ("the inductor backend compiles @pairs again for each new input shape: dimension N has no input "
                     "dim of its own (input 0 is f32[N*2]): Inductor reads every size from one, so it has no symbolic "
                     "form with dynamic kernels.")
    assert fix.startswith("  fix: nothing is needed for correct results; each new size costs a compile")
    assert run.compiles_per_shape


def test_a_rule_that_reads_a_size_as_a_number_names_its_op(monkeypatch):
    # a rule that turns a size into a Python int fixes its symbol in the trace: no symbolic form
    monkeypatch.setitem(LOWERINGS, "neg", lambda ctx, x: torch.neg(x) * int(x.shape[0]) / int(x.shape[0]))
    b = GraphBuilder("fixed")
    graph = b.build([b.neg(b.input(f32[B]))])
    with pytest.raises(NoSymbolicForm, match=r"^neg uses dimension B as a plain number \(the trace fixed it to 5\)$"):
        to_symbolic_fx(graph, {"B": 5})


def test_a_kernel_runs_only_for_sizes_its_guards_admit():
    # slicing [1:B] at B = 3 assumes B - 1 is no size 1 (torch specialises those): B = 2 is not
    # admitted and compiles on its own, as size 1 does (no compile here: the guards are the trace's)
    graph = _sized_graph()
    kernel = DynamicKernel(to_symbolic_fx(graph, {"B": 3}), run=None)
    assert [kernel.fits({"B": n}) for n in (2, 3, 5, 64)] == [False, True, True, True]
    with pytest.raises(NoSymbolicForm, match=r"^slice uses dimension B as a plain number \(the trace fixed it to 2\)"):
        to_symbolic_fx(graph, {"B": 2})


def test_auto_asks_the_backend_about_each_graph_where_it_can_answer(backend):
    from parity.frontend.auto import _compiles_per_shape

    pairs = GraphBuilder("pairs")
    per_shape = pairs.build([pairs.neg(pairs.input(f32[Symbol("N") * 2]))])
    assert [_compiles_per_shape(backend, g, "cpu") for g in (_sized_graph(), per_shape)] == [False, True]

    class DeclaresForEveryGraph:  # a plugin without compiles_per_shape_for: its declaration holds
        compiles_per_shape = True

    assert _compiles_per_shape(DeclaresForEveryGraph(), _sized_graph(), "cpu") is True


def test_the_guarded_call_finds_the_kernel_by_symbol_values_as_the_checked_call_does():
    """CompiledGraph's call for Dynamo-guarded inputs (InductorExecutable.guarded) looks kernels up
    by the values of the graph's distinct symbolic dims only: every size, size 1's specialised
    kernel and an input the frontend adds after the guarded ones (converted as __call__ does)
    give the checked call's results and share its compiled kernels."""
    from parity.backends.inductor import InductorBackend

    backend = InductorBackend()  # its own: the shared one may have compiled this graph's kernels already
    graph = _sized_graph()
    run = backend.compile(graph, "cpu")
    guarded = run.guarded(1)  # x is the guarded argument; y stands for an array the frontend adds
    before, counts = backend.compile_count, []
    for n in (3, 5, 1, 7, 5, 1, 3):
        rng = np.random.default_rng(n)
        x = torch.from_numpy(rng.standard_normal((n, 3)).astype(np.float32))
        y = rng.integers(-1000, 1000, n).astype(np.int32)
        got = guarded(x, y)  # first: a new size's kernel is the guarded call's to find or compile
        counts.append(backend.compile_count - before)
        for g, want in zip(got, run(x, y)):
            assert torch.equal(g, want) and g.shape == want.shape, n
    assert counts == [1, 1, 2, 2, 2, 2, 2]  # the dynamic kernel at 3; size 1's own (specialised) at 1
    b = GraphBuilder("u32")  # a u32 input is carried in int64: converted on every call, never guarded
    assert backend.compile(b.build([b.bitwise_not(b.input(u32[B]))]), "cpu").guarded(1) is None
