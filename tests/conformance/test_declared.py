"""What backends declare as data is measured: flush-to-zero per dtype (the probe), and the
longest sequential chain of their sums (one 1.0 among 2**-25s: the chain that starts at the
1.0 absorbs every 2**-25 it meets one at a time, so the error counts its length)."""

import os

import numpy as np
import pytest

from parity.backends.registry import backend_names, get_backend
from parity.conformance import execute
from parity.conformance.declared import Declared
from parity.conformance.execute import probe_flush_to_zero
from parity.ir import GraphBuilder
from parity.ir.dtypes import COMPLEX_DTYPES, FLOAT_DTYPES, DType


def _backends():
    names = [n for n in ("reference", "xla", "onnx") if n in backend_names()]
    if os.environ.get("TRITON_INTERPRET") == "1" and "triton" in backend_names():
        names.append("triton")
    return names


@pytest.mark.parametrize("name", _backends())
def test_flush_to_zero_is_declared_exactly_in_the_dtypes_that_flush(name):
    backend = get_backend(name)
    declared = Declared.of(backend, "cpu").flushes
    probed = {d for d in FLOAT_DTYPES + COMPLEX_DTYPES
              if d in backend.claims()["sqrt"].dtypes and probe_flush_to_zero(backend, "cpu", d)}
    assert probed == declared, f"{name}: flushes {sorted(d.short for d in probed)}, declares {sorted(d.short for d in declared)}"


def _chain(backend, op: str, n: int) -> float:
    """The longest run of 2**-25 terms the chain starting at the 1.0 absorbed: lost / 2**-25."""
    f32 = DType.float32
    x = np.full((2, n), 2.0**-25, np.float32)
    x[:, 0] = 1.0
    b = GraphBuilder()
    xi = b.input(f32[2, n])
    if op == "reduce_sum":
        out = b.reduce_sum(xi, axes=(1,))
        arrays = [x]
    else:
        wi = b.input(f32[n, 2])
        out = b.dot_general(xi, wi, lhs_contracting_dims=[1], rhs_contracting_dims=[0], lhs_batch_dims=[],
                            rhs_batch_dims=[])
        arrays = [x, np.ones((n, 2), np.float32)]
    graph = b.build([out])
    lowered, _ = execute.lower_for(backend, graph)
    got = np.asarray(execute.execute(backend, "cpu", lowered, arrays)[0]).astype(np.float64)
    exact = 1 + (n - 1) * 2.0**-25
    return float(np.max(np.abs(exact - got)) / 2.0**-25)


@pytest.mark.parametrize("name", _backends())
@pytest.mark.parametrize("op", ["reduce_sum", "dot_general"])
def test_the_declared_summation_block_covers_the_measured_chain(name, op):
    backend = get_backend(name)
    block = Declared.of(backend, "cpu").block(op, DType.float32)
    for n in (256, 4096):
        chain = _chain(backend, op, n)
        limit = n if block is None else block
        assert chain <= limit, f"{name} {op}: a chain of {chain:.0f} terms at n = {n}; declared {block}"


def test_xla_declares_the_chains_its_convolutions_measure_on_this_host():
    # The block follows the host's caches (backends/xla/summation.py), so the declaration is
    # probed at K = 65,536 and must cover what a smaller convolution chains here.
    from parity.backends.xla.summation import chain_length, conv_channel_probe, conv_window_probe

    if "xla" not in backend_names():
        pytest.skip("xla is not installed")
    backend = get_backend("xla")
    block = Declared.of(backend, "cpu").block("convolution", DType.float32)
    for probe in (conv_channel_probe, conv_window_probe):
        chain = chain_length(lambda g, a: execute.execute(backend, "cpu", g, a), 4096, probe)
        assert chain <= (4096 if block is None else block), f"{probe.__name__}: {chain:.0f} > declared {block}"


def test_a_chain_over_nearly_every_term_declares_one_sequential_pass():
    from parity.backends.xla.summation import declared_block

    assert declared_block(65_535, 65_536) is None
    assert declared_block(16_383, 65_536) == 16_384
    assert declared_block(2_043, 65_536) == 2_048
