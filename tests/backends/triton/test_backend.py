"""The backend's public face: registry entry, claims (generated vs extern), devices and
mode errors, caching, inspection (kernel sources, explain, kernels per call), input
handling and symbolic shapes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from parity.backends import get_backend
from parity.backends.triton import (
    DEVIATIONS,
    TritonBackend,
    TritonModeError,
    TritonOptions,
    complex_pairs,
    elementwise,
    extern,
    index_rules,
    kernels,
)
from parity.backends.triton.lowerings import COMPLEX_OPS, EXTERN_OPS, lowered_ops
from parity.ir import DType, GraphBuilder, Symbol, evaluate
from parity.ir.errors import ParityError
from parity.ir.ops import primitives

from .conftest import graph_of, run, to_numpy

f32 = DType.float32


def _softmax_graph():
    return graph_of(lambda b, x: b.softmax(x, axis=1), f32[4, 6])


def test_registered_by_name_with_generated_and_extern_claims():
    backend = get_backend("triton")
    assert isinstance(backend, TritonBackend) and backend.name == "triton"
    claims = backend.claims()
    # every primitive on every dtype (complex ones as float pairs, complex_pairs.py), no composite;
    # nothing declined
    assert set(claims) == {op.name for op in primitives()} and not backend.declined and not backend.declined_dtypes
    for op in primitives():
        assert claims[op.name].dtypes == frozenset(op.dtypes)
        assert claims[op.name].extern == (op.name in EXTERN_OPS)
    assert backend.claim_status("dot_general") == "native"
    assert backend.claim_status("convolution") == "extern"
    assert backend.claim_status("softmax") == "decomposed"


def test_deviations_name_claimed_ops_and_dtypes():
    backend = TritonBackend(TritonOptions(interpret=True))
    assert backend.deviations == DEVIATIONS
    for dev in DEVIATIONS:
        assert dev.dtype in backend.claims()[dev.op].dtypes and dev.device in backend.devices
        assert "ulp" in dev.max_error and dev.reason


def test_devices_follow_the_execution_mode(tmp_path):
    assert TritonBackend(TritonOptions(interpret=True, cache_dir=tmp_path)).available_devices() == ("cpu",)
    compiled = TritonBackend(TritonOptions(interpret=False, cache_dir=tmp_path))
    assert compiled.available_devices() == (("cuda",) if torch.cuda.is_available() else ())


def test_cpu_without_the_interpreter_explains_how_to_enable_it(tmp_path):
    backend = TritonBackend(TritonOptions(interpret=False, cache_dir=tmp_path))
    with pytest.raises(TritonModeError, match=r"TRITON_INTERPRET=1 is not set.*before Python starts"):
        backend.compile(_softmax_graph(), "cpu")


def test_cuda_under_the_interpreter_and_unknown_devices_are_errors(backend):
    with pytest.raises(TritonModeError, match="use device='cpu', or unset TRITON_INTERPRET"):
        backend.compile(_softmax_graph(), "cuda")
    with pytest.raises(TritonModeError, match="no device 'tpu'"):
        backend.compile(_softmax_graph(), "tpu")


def test_generated_modules_are_cached_by_graph_device_and_types(backend):
    a = backend.compile(_softmax_graph(), "cpu")
    b = backend.compile(_softmax_graph(), "cpu")
    assert a.plan is b.plan  # same content hash, device and input types: one module
    path = list(backend.options.cache_dir.glob("parity_triton_*.py"))
    assert any(p.read_text() == a.source for p in path)


def test_inspection_shows_kernels_and_the_host_code(backend):
    exe = backend.compile(_softmax_graph(), "cpu")
    assert exe.kernels_per_call == 1 and exe.externs_per_call == 0
    (name, src), = exe.kernel_sources.items()
    assert name == "k0_row" and src.startswith("@triton.jit\ndef k0_row(")
    text = exe.explain()
    assert text.splitlines()[0] == "@g on triton/cpu [Triton interpreter (CPU)]: 1 kernel(s), 0 extern call(s) per call"
    assert "k0_row: row grid=(1,) -> f32[4,6]; ops: broadcast_in_dim div exp reduce_max reduce_sum sub" in text
    assert src in text and "def run(inputs, constants, device):" in text


def test_numpy_inputs_including_bfloat16_uint32_and_scalars(backend):
    graph = graph_of(lambda b, x, y, s: (b.add(x, x), b.add(y, y), b.mul(s, s)),
                     DType.bfloat16[3], DType.uint32[2], f32[()])
    x = np.array([1.5, -2, 3e38], DType.bfloat16.numpy)
    y = np.array([2**32 - 1, 7], np.uint32)
    got, _ = run(backend, graph, [x, y, np.float32(3)])
    assert got[0].tolist() == [3.0, -4.0, float("inf")] and got[1].tolist() == [2**32 - 2, 14]
    assert got[2].shape == () and float(got[2]) == 9.0


def test_wrong_inputs_are_named(backend):
    exe = backend.compile(graph_of(lambda b, x: b.neg(x), f32[3]), "cpu")
    with pytest.raises(ParityError, match=r"input 0 of @g is torch.float64, expected f32"):
        exe(torch.zeros(3, dtype=torch.float64))
    with pytest.raises(ParityError, match=r"input 0 of @g has shape \[4\], expected f32\[3\]"):
        exe(torch.zeros(4))
    with pytest.raises(ParityError, match="takes 1 inputs, got 2"):
        exe(torch.zeros(3), torch.zeros(3))


def test_non_contiguous_inputs_and_passthrough_outputs(backend):
    graph = graph_of(lambda b, x: (b.exp(x), x), f32[3, 2])
    base = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    exp, same = backend.compile(graph, "cpu")(base.t())
    np.testing.assert_array_equal(to_numpy(exp), np.exp(base.t().numpy().astype(np.float64)).astype(np.float32))
    np.testing.assert_array_equal(to_numpy(same), base.t().numpy())


def test_constant_outputs_are_fresh_tensors(backend):
    b = GraphBuilder("c")
    out = b.constant(np.array([1.0, 2.0, 3.0], np.float32))
    exe = backend.compile(b.build([out]), "cpu")
    first = exe()[0]
    first += 10
    assert exe()[0].tolist() == [1.0, 2.0, 3.0]


def test_symbolic_rows_share_one_kernel(backend):
    # a reduction over a static axis with a symbolic row count: one kernel set, generated
    # at compile time, for every row count (an empty one launches nothing)
    B = Symbol("B")
    graph = graph_of(lambda b, x: b.log_softmax(x, axis=1), f32[B, 5])
    before = backend.generations
    exe = backend.compile(graph, "cpu")
    assert exe.generic and exe.fallback is None and exe.kernels_per_call == 1
    for rows in (2, 7, 0):
        x = np.random.default_rng(rows).normal(size=(rows, 5)).astype(np.float32)
        (got,) = exe(x)
        want = evaluate(graph, [x])[0]
        np.testing.assert_allclose(to_numpy(got), want, rtol=2e-6, atol=2e-6)
    assert backend.generations - before == 1


def test_every_primitive_has_a_lowering():
    # (extern.TABLE holds the pair graphs' extern calls complex_exp/log/sqrt too: not IR op names)
    tables = [elementwise.RULES, elementwise.CONVERSIONS, index_rules.INDEX_RULES, kernels.REDUCTIONS,
              {op: f for op, f in extern.TABLE.items() if not op.startswith("complex_")}]
    lowered = lowered_ops()
    pair_externs = {"complex_exp", "complex_log", "complex_sqrt"}
    family = {"complex", "real", "imag", "conj", "complex_abs", "angle"}  # complex_pairs.RULES alone
    assert sum(len(t) for t in tables) + len({"dot_general", "constant"}) + len(family) + len(pair_externs) == len(
        lowered)  # no op in two tables
    assert {op.name for op in primitives()} == set(lowered) - pair_externs
    # every op with a complex dtype has a float-pair rule or an extern call on the pair
    assert {op.name for op in primitives() if any(d.is_complex for d in op.dtypes)} | {"complex", "rfft"} == (
        COMPLEX_OPS)


@pytest.mark.parametrize("module, table, name", [
    (elementwise, "RULES", "exp"), (elementwise, "CONVERSIONS", "convert"), (index_rules, "INDEX_RULES", "transpose"),
    (kernels, "REDUCTIONS", "argmax"), (extern, "TABLE", "sort"), (complex_pairs, "RULES", "conj"),
], ids=["elementwise", "conversion", "index", "reduction", "extern", "complex"])
def test_claims_follow_the_rule_tables(monkeypatch, module, table, name):
    # Plant a primitive without a rule: taking it out of its table takes it out of the claims.
    assert name in TritonBackend(TritonOptions(interpret=True)).claims()
    monkeypatch.delitem(getattr(module, table), name)
    backend = TritonBackend(TritonOptions(interpret=True))
    assert backend.claim_status(name) == "unsupported"
    assert set(backend.claims()) == {op.name for op in primitives()} - {name} - set(backend.declined)


@pytest.mark.parametrize("module, table, name, left", [
    (complex_pairs, "RULES", "mul", {DType.float32}), (complex_pairs, "RULES", "exp", {DType.float32}),
    (complex_pairs, "EXTERN_NAMES", "fft", set()), (complex_pairs, "EXTERN_NAMES", "rfft", set()),
], ids=["pair-rule", "pair-rule-or-extern", "pair-extern", "real-operand"])
def test_complex_dtypes_follow_the_pair_tables(monkeypatch, module, table, name, left):
    # Plant an op without its complex form: it keeps its real dtypes (if it has any: fft does not,
    # and rfft's real operand makes a complex result) and loses the complex ones.
    assert name in TritonBackend(TritonOptions(interpret=True)).claims()
    monkeypatch.delitem(getattr(module, table), name)
    claim = TritonBackend(TritonOptions(interpret=True)).claims().get(name)
    dtypes = claim.dtypes if claim is not None else frozenset()
    assert not dtypes & {DType.complex64, DType.complex128} and left <= dtypes and (claim is not None) == bool(left)


def test_conformance_runner_reads_bfloat16_and_uint32_outputs(backend):
    # outputs are torch tensors; the runner brings bfloat16 (no NumPy buffer format) across as bits
    from parity.conformance import runner

    result = runner.run([backend], devices=["cpu"], ops="^(neg|scatter)$", dtypes=[DType.bfloat16, DType.uint32],
                        quick=True)
    cells = {(c.op, c.dtype): c.status for c in result.cells}
    assert cells == {("neg", "bf16"): "pass", ("scatter", "bf16"): "pass", ("scatter", "u32"): "pass"}


def test_every_launch_turns_off_fma_contraction(backend):
    """Triton fuses a * b + c into an FMA on GPUs unless told not to, which skips the IR's
    rounding of the product (XLA:CPU did exactly that: fuzz regression xla-sub-f64-d09e2dca)."""
    run = backend.compile(_softmax_graph(), "cpu")
    run(np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32))
    launches = [line for line in run.source.splitlines() if "](" in line and line.startswith("    ")]
    assert launches and all(line.rstrip().endswith("enable_fp_fusion=False)") for line in launches)
