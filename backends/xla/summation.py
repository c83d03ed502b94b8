"""How long XLA:CPU's sequential summation chains are on this host: measured once per process.

XLA:CPU's dot and convolution kernels (Eigen, YNNPACK) split the contracted dimension into
blocks whose size they pick from the host's caches and instruction set, so the longest chain
is a property of the machine, not of XLA's version: 2,043 terms at K = 65,536 on one AMD EPYC
host, the whole contracted dimension (4,095 at K = 4,096) on another. A fixed declaration was
wrong on one of them, so the backend declares what this probe measures here.

The probe: one 1.0 among 2**-25s. The chain that starts at the 1.0 absorbs every 2**-25 it
meets one at a time (each is half an ulp of 1.0 and rounds away), so the error counts the
chain's length.

Example::

    >>> from parity.backends.registry import get_backend
    >>> from parity.backends.xla.summation import measured_summation
    >>> {s.op for s in measured_summation(get_backend("xla"))} >= {"dot_general", "convolution"}
    True
"""

from __future__ import annotations

import numpy as np

from ...ir import GraphBuilder
from ...ir.dtypes import DType
from ..base import Summation

PROBE_TERMS = 65_536
TINY = 2.0**-25  # half an ulp of 1.0 in float32: absorbed whenever it is added to 1.0 alone
# Ops that run on the same kernels as the probed op.
DOT_FAMILY = ("dot_general", "matmul", "linear", "einsum", "scaled_dot_product_attention")
CONV_FAMILY = ("convolution",)


def chain_length(run, n: int, build) -> float:
    """The longest run of 2**-25 terms the chain starting at the 1.0 absorbed in a sum of ``n``
    terms, where ``build(b, n)`` makes the graph and its two inputs (the 1.0 first, then TINYs)
    and ``run(graph, arrays)`` returns its outputs."""
    b = GraphBuilder()
    graph, arrays = build(b, n)
    got = np.asarray(run(graph, arrays)[0], np.float64)
    exact = 1 + (n - 1) * TINY
    return float(np.max(np.abs(exact - got)) / TINY)


def _terms(n: int) -> np.ndarray:
    x = np.full(n, TINY, np.float32)
    x[0] = 1.0
    return x


def dot_probe(b: GraphBuilder, n: int):
    f32 = DType.float32
    x = np.stack([_terms(n), _terms(n)])
    xi, wi = b.input(f32[2, n]), b.input(f32[n, 2])
    out = b.dot_general(xi, wi, lhs_contracting_dims=[1], rhs_contracting_dims=[0], lhs_batch_dims=[],
                        rhs_batch_dims=[])
    return b.build([out]), [x, np.ones((n, 2), np.float32)]


def conv_channel_probe(b: GraphBuilder, n: int):
    """The contraction over input channels (a 1x1 convolution)."""
    f32 = DType.float32
    xi, wi = b.input(f32[1, n, 1]), b.input(f32[2, n, 1])
    out = b.convolution(xi, wi, window_strides=[1], padding=[(0, 0)], lhs_dilation=[1], rhs_dilation=[1])
    return b.build([out]), [_terms(n).reshape(1, n, 1), np.ones((2, n, 1), np.float32)]


def conv_window_probe(b: GraphBuilder, n: int):
    """The contraction over one long kernel window."""
    f32 = DType.float32
    xi, wi = b.input(f32[1, 1, n]), b.input(f32[2, 1, n])
    out = b.convolution(xi, wi, window_strides=[1], padding=[(0, 0)], lhs_dilation=[1], rhs_dilation=[1])
    return b.build([out]), [_terms(n).reshape(1, 1, n), np.ones((2, 1, n), np.float32)]


def declared_block(chain: float, n: int) -> int | None:
    """The block a measured chain declares: the next power of two above it, or None (one
    sequential pass) when the chain ran over (nearly) all ``n`` terms."""
    if chain >= (n - 1) / 2:
        return None
    return 1 << max(int(np.ceil(np.log2(chain + 1))), 0)


_MEASURED: list[tuple[Summation, ...]] = []  # once per process: the host does not change


def measured_summation(backend) -> tuple[Summation, ...]:
    """The CPU Summation entries of the xla ``backend``, probed on this host (once per process)."""
    if not _MEASURED:
        _MEASURED.append(_measure(backend))
    return _MEASURED[0]


def _measure(backend) -> tuple[Summation, ...]:
    def run(graph, arrays):
        return backend.compile(graph, "cpu")(*arrays)

    dot = chain_length(run, PROBE_TERMS, dot_probe)
    conv = max(chain_length(run, PROBE_TERMS, p) for p in (conv_channel_probe, conv_window_probe))
    entries = []
    for ops, chain in ((DOT_FAMILY, dot), (CONV_FAMILY, conv)):
        block = declared_block(chain, PROBE_TERMS)  # one within the contract's block changes nothing
        what = "one sequential pass" if block is None else f"chains of up to {block:,} terms"
        reason = (f"XLA:CPU's kernels on this host add the contracted dimension in {what} (measured "
                  f"{chain:,.0f} at K = {PROBE_TERMS:,}; the block follows the host's caches)")
        entries += [Summation(op, block, reason, device="cpu") for op in ops]
    return tuple(entries)
