"""Which graphs with symbolic dims get one kernel set for every size.

A symbolic dim ``B`` is the kernel argument ``size_B`` (index.dim_text): element counts,
strides and masks read it at run time, block sizes stay literals (but for rows of
symbolic length, below), so the kernels are generated (and, on CUDA, compiled) once per
graph. That holds for the ops whose code only does index arithmetic on the shapes:

* elementwise ops and conversions, constants;
* reshape, broadcast_in_dim, transpose, slice, reverse, pad, concatenate, iota, gather,
  dynamic_slice, dynamic_update_slice, reduce_window: index rewrites (linearize and
  delinearize, offsets, bounds and clamps read the sizes);
* dot_general, any dim symbolic (a symbolic extent takes the full tile, masked; a
  symbolic contraction loops to its run-time length);
* reductions, any dim symbolic: a symbolic row count is masked under a literal block;
  a symbolic row length makes the row kernel's blocks ``XBLOCK``/``RBLOCK``
  ``tl.constexpr`` arguments the host computes per call (RBLOCK the next power of two
  of the row length): the source is generated once, and CUDA compiles once per
  power-of-two bucket of the row length;
* the extern ops (sort, top_k, scans, scatter, convolution): torch reads the sizes from
  the tensors; convolution's output shape is computed by the host from the sizes. An
  extern op whose *attributes* hold a symbolic dim is not covered.

Any other op with a symbolic dim (one added to the op table later and not listed here,
an extern op with a symbolic attribute) is not known to take runtime sizes: a graph
with one *falls back* to generating a kernel set per concrete input shape (backend.py
counts them). :func:`fallback_reason` says why.

Example::

    >>> from parity.ir import GraphBuilder, Symbol, f32
    >>> b = GraphBuilder("f")
    >>> x = b.input(f32[Symbol("B"), 4])
    >>> fallback_reason(b.build([b.reduce_sum(b.exp(x), axes=(1,))])) is None
    True
    >>> fallback_reason(b.build([b.cumsum(x, axis=1, reverse=False)])) is None
    True
"""

from __future__ import annotations

from collections.abc import Sequence

from ...ir.dims import DimExpr
from ...ir.graph import Graph, Node
from . import elementwise as ew
from .extern import TABLE as EXTERN_TABLE
from .index import dim_text
from .kernels import REDUCTIONS

# Ops whose lowering only does index arithmetic on symbolic shapes (see the module doc).
RUNTIME_SIZE_OPS = frozenset({
    "constant", "reshape", "broadcast_in_dim", "transpose", "slice", "reverse", "pad", "concatenate", "iota",
    "gather", "dynamic_slice", "dynamic_update_slice", "reduce_window", "dot_general",
})


def fallback_reason(graph: Graph) -> str | None:
    """Why ``graph`` needs a kernel set per concrete shape, or None: one set serves all."""
    for node in graph.nodes:
        reason = _node_reason(node)
        if reason is not None:
            return reason
    return None


def _node_reason(node: Node) -> str | None:
    types = [v.type for v in (*node.inputs, *node.outputs)]
    symbolic = [t for t in types if not t.is_static] + [a for a in node.attrs.values() if _has_dim_expr(a)]
    if not symbolic:
        return None
    op = node.op
    if op in ew.RULES or op in ew.CONVERSIONS or op in REDUCTIONS or op in RUNTIME_SIZE_OPS:
        return None
    if op in EXTERN_TABLE and not any(_has_dim_expr(a) for a in node.attrs.values()):
        return None
    return f"{op} has symbolic dims ({symbolic[0]}); it takes sizes only per concrete shape"


def _has_dim_expr(value) -> bool:
    if isinstance(value, DimExpr):
        return True
    if isinstance(value, (tuple, list)):
        return any(_has_dim_expr(v) for v in value)
    return False


def shape_text(shape: Sequence) -> str:
    """A shape as a Python tuple expression (host code): literal when static."""
    if all(isinstance(n, int) for n in shape):
        return str(tuple(shape))
    items = ", ".join(dim_text(n) for n in shape)
    return f"({items},)" if len(shape) == 1 else f"({items})"

