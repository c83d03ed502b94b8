"""Delta debugging of a failing fuzz graph: the smallest graph and inputs that still fail.

Three reductions, repeated until none applies (each candidate is re-run on the backend
and kept only if it still fails the same way):

1. **Drop a node**: its results become fresh graph inputs holding the values the spec
   gives them (the reference interpreter on the current inputs), so the nodes after it
   see the same operands; inputs no node reads any more are dropped. Dropping a
   producer is how an operand is "replaced by an input".
2. **Shrink shapes**: slice inputs along one dim — to one element, the first half or
   the second half — jointly for every input with that dim size, then one input at a
   time; the graph is replayed on the new types and the type rules reject what no
   longer fits.
3. Stop when a pass over all candidates changes nothing, or ``max_tries`` runs are used.

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, f32
    >>> b = GraphBuilder(); x = b.input(f32[4]); e = b.exp(x); t = b.tanh(e)
    >>> g = b.build([e, t])
    >>> fails = lambda graph, arrays: "tanh" in graph.op_counts()
    >>> small, arrays = shrink(g, [np.arange(4, dtype=np.float32)], fails)
    >>> small.op_counts(), arrays[0].shape
    ({'tanh': 1}, (1,))
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ...ir.builder import GraphBuilder
from ...ir.errors import TypeRuleError
from ...ir.graph import Graph, Value
from ...ir.interpreter import evaluate
from ...ir.types import TensorType

Predicate = Callable[[Graph, list[np.ndarray]], bool]


def shrink(graph: Graph, arrays: Sequence[np.ndarray], fails: Predicate, *, max_tries: int = 80
           ) -> tuple[Graph, list[np.ndarray]]:
    """The smallest (graph, arrays) found for which ``fails`` still holds (see the module docstring)."""
    arrays = list(arrays)
    tries = 0

    def attempt(candidate) -> bool:
        nonlocal tries, graph, arrays
        if candidate is None or tries >= max_tries:
            return False
        tries += 1
        g, a = candidate
        try:
            ok = fails(g, a)
        except Exception:  # noqa: BLE001 - a candidate that breaks the harness is not kept
            ok = False
        if ok:
            graph, arrays = g, a
        return ok

    changed = True
    while changed and tries < max_tries:
        changed = False
        for k in reversed(range(len(graph.nodes))):
            if k < len(graph.nodes) and len(graph.nodes) > 1 and attempt(drop_node(graph, arrays, k)):
                changed = True
        for candidate in _shape_candidates(graph, arrays):
            if attempt(candidate):
                changed = True
                break
    return graph, arrays


def rebuild(graph: Graph, input_types: Sequence[TensorType], skip: frozenset[int] = frozenset(),
            extra: dict[Value, TensorType] | None = None) -> tuple[Graph, list[int]] | None:
    """``graph`` replayed on ``input_types`` without the nodes in ``skip``; the values in
    ``extra`` (results of skipped nodes) become inputs after the original ones. Inputs no
    node reads are dropped; returns (graph, indices of the kept inputs among original +
    extra), or None when a type rule rejects the replay. Every result is an output."""
    extra = extra or {}
    b = GraphBuilder(graph.name)
    sources = list(graph.inputs) + list(extra)
    types = list(input_types) + list(extra.values())
    used = {v for k, n in enumerate(graph.nodes) if k not in skip for v in n.inputs}
    kept = [i for i, v in enumerate(sources) if v in used]
    env = {sources[i]: b.input(types[i]) for i in kept}
    try:
        for k, node in enumerate(graph.nodes):
            if k in skip:
                continue
            out = b.op(node.op, *[env[v] for v in node.inputs], **node.attrs)
            env.update(zip(node.outputs, out if isinstance(out, tuple) else (out,)))
    except TypeRuleError:
        return None
    if not b.nodes:
        return None
    return b.build([v for n in b.nodes for v in n.outputs]), kept


def drop_node(graph: Graph, arrays: list[np.ndarray], k: int):
    """``graph`` without node ``k``; its results become inputs with their spec values."""
    values = dict(zip(graph.outputs, evaluate(graph, arrays)))
    node = graph.nodes[k]
    extra = {v: v.type for v in node.outputs}
    built = rebuild(graph, [v.type for v in graph.inputs], frozenset({k}), extra)
    if built is None:
        return None
    g, kept = built
    pool = list(arrays) + [values[v] for v in node.outputs]
    return g, [pool[i] for i in kept]


def _shape_candidates(graph: Graph, arrays: list[np.ndarray]):
    """Sliced inputs, jointly per (dim, size), then per input; largest cuts last tried."""
    seen = set()
    for joint in (True, False):
        for i, a in enumerate(arrays):
            for d, n in enumerate(a.shape):
                if n <= 1:
                    continue
                for part in (slice(0, 1), slice(0, n // 2), slice(n // 2, n)):
                    targets = [j for j, b in enumerate(arrays) if joint and b.ndim > d and b.shape[d] == n] or [i]
                    key = (tuple(targets), d, part.start, part.stop)
                    if key in seen:
                        continue
                    seen.add(key)
                    new = list(arrays)
                    for j in targets:
                        index = [slice(None)] * new[j].ndim
                        index[d] = part
                        new[j] = np.ascontiguousarray(new[j][tuple(index)])
                    built = rebuild(graph, [v.type.with_shape(b.shape) for v, b in zip(graph.inputs, new)])
                    if built is not None:
                        g, kept = built
                        yield g, [new[j] for j in kept]
