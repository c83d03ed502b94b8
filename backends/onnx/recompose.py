"""Composites a model wrote out by hand, found in the IR graph and lowered as the composite.

Hugging Face's RMSNorm modules (Llama, Mistral, Qwen2, Qwen3, Phi-3, Gemma) do not call
``torch.nn.functional.rms_norm``: they write ``x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True)
+ eps)`` and multiply by the weight, which the capture records as nine primitives (mul,
reduce_sum, div by n, reshape, add eps, rsqrt, broadcast, mul, and the weight's mul). ORT
runs them as nine nodes, and at a decode step's sizes a node costs about a microsecond
whatever it computes (:mod:`.simplify`): five norms are 45 of a Llama step's ~190 nodes.
That chain is the IR's own ``rms_norm`` decomposition (``ir/ops/normalization.py``), so
:func:`recompose` puts the composite back, and the backend lowers it natively
(``composites.NATIVE``: one RMSNormalization node, held to the ``rms_norm`` bound by the
conformance suite).

The fused kernel rounds differently from the chain (it sums the squares in one pass and
divides by the root instead of multiplying by its reciprocal); its error against the
float64 oracle of the chain, under the ``rms_norm`` bound with the backend's declared
summation, is measured by ``python -m studies.rms_norm_pattern`` (its README has the
numbers). A chain is recomposed only where nothing else reads its intermediates (they
would have to exist), and only in a dtype the native claim covers; an ``eps`` the ONNX
attribute cannot hold leaves the node to be expanded again into the same chain.

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, f32
    >>> b = GraphBuilder(); x = b.input(f32[2, 8]); w = b.input(f32[8])
    >>> ms = b.reshape(b.div(b.reduce_sum(b.mul(x, x), axes=(1,)),
    ...                      b.broadcast_in_dim(b.constant(8.0, f32), shape=(2,), broadcast_dimensions=())), shape=(2, 1))
    >>> r = b.rsqrt(b.add(ms, b.broadcast_in_dim(b.constant(1e-6, f32), shape=(2, 1), broadcast_dimensions=())))
    >>> y = b.mul(x, b.broadcast_in_dim(r, shape=(2, 8), broadcast_dimensions=(0, 1)))
    >>> z = b.mul(b.broadcast_in_dim(w, shape=(2, 8), broadcast_dimensions=(1,)), y)
    >>> recompose(b.build([z])).op_counts()
    {'rms_norm': 1}
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...ir.builder import GraphBuilder
from ...ir.graph import Graph, Node, Value
from ...ir.passes import dce
from ...ir.passes.rewrite import Rewrite
from .composites import NATIVE


@dataclass(frozen=True)
class _Match:
    """One recognized chain: ``last``'s result is ``build(builder, *new inputs)``; ``absorbed``
    are the other nodes it replaces (none of their results is read outside the chain)."""

    last: Node
    inputs: tuple[Value, ...]
    build: Callable[..., Value]
    absorbed: frozenset[Node]


def recompose(graph: Graph) -> Graph:
    """``graph`` with every recognized chain replaced by its composite (``graph`` itself if none)."""
    users = graph.users()
    outputs = set(graph.outputs)
    matches: dict[Node, _Match] = {}
    absorbed: set[Node] = set()
    for node in graph.nodes:
        for finder in FINDERS:
            match = finder(node, users, outputs)
            if match is not None and not (match.absorbed & absorbed):
                matches[match.last] = match
                absorbed |= match.absorbed
    if not matches:
        return graph
    rewrite = Rewrite(graph)
    for node in graph.nodes:
        match = matches.get(node)
        if match is not None:
            with rewrite.builder.location(node.loc):
                rewrite.replace(node, [match.build(rewrite.builder, *(rewrite[v] for v in match.inputs))])
        elif node not in absorbed:
            rewrite.copy(node)
    return dce(rewrite.finish())[0]  # the chains' constants (n, eps) are read by nothing now


def _only_reader(value: Value, users, outputs) -> Node | None:
    """The single node reading ``value``, if exactly one does and it is no graph output."""
    readers = users.get(value, [])
    return readers[0] if len(readers) == 1 and value not in outputs else None


def _producer(value: Value, op: str) -> Node | None:
    node = value.producer
    return node if node is not None and node.op == op else None


def _scalar_constant(value: Value) -> float | None:
    """The number a scalar constant (possibly broadcast) holds, else None."""
    node = value.producer
    if node is not None and node.op == "broadcast_in_dim" and node.inputs[0].type.rank == 0:
        node = node.inputs[0].producer
    if node is None or node.op != "constant" or node.attrs["value"].size != 1:
        return None
    return float(node.attrs["value"].reshape(()))


def _other(node: Node, value: Value) -> Value | None:
    """The operand of binary ``node`` that is not ``value`` (None if ``value`` is not one)."""
    a, b = node.inputs
    return b if a is value else a if b is value else None


def rms_norm(rsqrt: Node, users, outputs) -> _Match | None:
    """``x * broadcast(rsqrt(reshape(reduce_sum(x * x, tail) / n) + eps))`` [``* broadcast(weight)``]."""
    if rsqrt.op != "rsqrt":
        return None
    add = _producer(rsqrt.inputs[0], "add")
    if add is None:
        return None
    for mean, eps_value in (add.inputs, reversed(add.inputs)):
        eps = _scalar_constant(eps_value)
        if eps is not None:
            break
    else:
        return None
    reshape = _producer(mean, "reshape")
    div = _producer(reshape.inputs[0] if reshape else mean, "div")
    total = div and _producer(div.inputs[0], "reduce_sum")
    square = total and _producer(total.inputs[0], "mul")
    if square is None or square.inputs[0] is not square.inputs[1]:
        return None
    x = square.inputs[0]
    rank, axes = x.type.rank, tuple(total.attrs["axes"])
    k = len(axes)
    tail = x.type.shape[rank - k:]
    if (axes != tuple(range(rank - k, rank)) or not all(isinstance(d, int) for d in tail)
            or _scalar_constant(div.inputs[1]) != math.prod(tail)):
        return None
    spread = _only_reader(rsqrt.outputs[0], users, outputs)
    if (spread is None or spread.op != "broadcast_in_dim" or spread.outputs[0].type != x.type
            or tuple(spread.attrs["broadcast_dimensions"]) != tuple(range(rank))):
        return None
    normed = _only_reader(spread.outputs[0], users, outputs)
    if normed is None or normed.op != "mul" or _other(normed, spread.outputs[0]) is not x:
        return None
    chain = [square, total, div, *([reshape] if reshape else []), add, rsqrt, spread, normed]
    if any(_only_reader(n.outputs[0], users, outputs) is None for n in chain[:-1]):
        return None
    attrs = {"normalized_ndim": k, "eps": eps}
    weight, last = None, normed
    scale = _only_reader(normed.outputs[0], users, outputs)
    if scale is not None and scale.op == "mul":
        spread_w = _producer(_other(scale, normed.outputs[0]), "broadcast_in_dim")
        if (spread_w is not None and spread_w.inputs[0].type == x.type.with_shape(tail)
                and tuple(spread_w.attrs["broadcast_dimensions"]) == tuple(range(rank - k, rank))):
            weight, last = spread_w.inputs[0], scale
            if _only_reader(spread_w.outputs[0], users, outputs) is scale:
                chain += [scale, spread_w]
            else:
                chain += [scale]
    if not _native_fits(x, attrs):
        return None

    def build(b: GraphBuilder, x: Value, weight: Value | None = None) -> Value:
        if weight is None:  # the chain had no weight: ones
            weight = b.constant(np.ones(tail), x.type.dtype)
        return b.rms_norm(x, weight, **attrs)

    return _Match(last, (x,) if weight is None else (x, weight), build, frozenset(chain) - {last})


def scatter_between_transposes(node: Node, users, outputs) -> _Match | None:
    """``transpose(scatter(transpose(x, p), idx, transpose(u, p), axis), p⁻¹)`` is ``scatter(x,
    transpose(idx, p⁻¹), u, p[axis])``: torch's ``index_copy_`` (a static KV cache's update) is
    captured with the indexed dim moved to the front and back, three Transposes that copy the
    whole cache each step. A permutation of axes commutes with putting elements along one
    (bit-exact); the index is small (it has the update's shape)."""
    if node.op != "transpose":
        return None
    scatter = _producer(node.inputs[0], "scatter")
    if scatter is None or _only_reader(scatter.outputs[0], users, outputs) is not node:
        return None
    back = tuple(node.attrs["permutation"])
    fronts = [_producer(scatter.inputs[i], "transpose") for i in (0, 2)]
    if any(t is None or _only_reader(t.outputs[0], users, outputs) is not scatter for t in fronts):
        return None
    perm = tuple(fronts[0].attrs["permutation"])
    if tuple(fronts[1].attrs["permutation"]) != perm or tuple(perm[i] for i in back) != tuple(range(len(perm))):
        return None
    x, idx, u = fronts[0].inputs[0], scatter.inputs[1], fronts[1].inputs[0]
    attrs = {**scatter.attrs, "axis": perm[scatter.attrs["axis"]]}
    absorbed = {scatter, *fronts}
    spread = _producer(idx, "broadcast_in_dim")
    dims = spread and [perm[d] for d in spread.attrs["broadcast_dimensions"]]
    if spread is not None and dims == sorted(dims) and _only_reader(idx, users, outputs) is scatter:
        # the index's broadcast, permuted: no Transpose at all
        shape = tuple(idx.type.shape[i] for i in back)
        absorbed.add(spread)

        def build(b: GraphBuilder, x: Value, v: Value, u: Value) -> Value:
            return b.scatter(x, b.broadcast_in_dim(v, shape=shape, broadcast_dimensions=tuple(dims)), u, **attrs)

        return _Match(node, (x, spread.inputs[0], u), build, frozenset(absorbed))

    def build_t(b: GraphBuilder, x: Value, idx: Value, u: Value) -> Value:
        return b.scatter(x, b.transpose(idx, permutation=back), u, **attrs)

    return _Match(node, (x, idx, u), build_t, frozenset(absorbed))


def _native_fits(x: Value, attrs: dict) -> bool:
    native = NATIVE["rms_norm"]
    return x.type.dtype in RMS_NORM_DTYPES and (native.fits is None or native.fits(attrs, [x.type]))


# The dtypes whose chain was measured against the rms_norm bound (studies/rms_norm_pattern).
RMS_NORM_DTYPES = NATIVE["rms_norm"].dtypes

# Each finder looks at one node and returns the chain that ends at (or around) it, or None.
FINDERS: tuple[Callable[..., _Match | None], ...] = (rms_norm, scatter_between_transposes)
