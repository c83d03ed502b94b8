"""Compare a backend's outputs with the oracle's under each output's bound.

Example::

    >>> import numpy as np
    >>> from parity.ir import f32, evaluate
    >>> from parity.conformance.case import Case
    >>> case = Case("sqrt", f32, lambda rng: (np.array([2.0], np.float32),))
    >>> arrays = case.arrays(); graph = case.graph(arrays)
    >>> oracle = evaluate(graph, arrays, oracle=True)
    >>> m = measure(case, graph, arrays, oracle, [np.array([1.4142135], np.float32)])
    >>> m.passed, round(m.max_ulp, 2)
    (True, 0.2)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..ir.graph import Graph, Node
from ..ir.interpreter import evaluate
from .bounds import Bound, bound_for, chain, compute_eps, terms
from .case import Case
from .declared import NOTHING, Declared
from .metrics import Measurement, abs_error, exact_mismatch, rel_error, ulp, worst_element
from .scales import ScaleContext, scale


def op_node(case: Case, graph: Graph) -> Node | None:
    """The node of ``case.op`` in its graph (None for multi-op cases). A built graph (a loop
    case builds its body from the operand types) names its op when it holds one node of it."""
    if case.build is not None:
        found = [n for n in graph.nodes if n.op == case.op]
        return found[0] if len(found) == 1 else None
    return next(n for n in graph.nodes if n.op == case.op)


def operands_of(graph: Graph, node: Node, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The values ``node`` reads, in oracle mode (past any broadcast the case put in front)."""
    index = graph.nodes.index(node)
    prefix = Graph(graph.name, graph.inputs, graph.nodes[:index], list(node.inputs))
    return evaluate(prefix, arrays, oracle=True)


def measure(case: Case, graph: Graph, arrays: Sequence[np.ndarray], oracle: Sequence[np.ndarray],
            actual: Sequence, declared: Declared = NOTHING) -> Measurement:
    """Check every output of ``actual`` against ``oracle`` under its bound.

    ``declared``: what the backend declares as data (its summation blocks; flush-to-zero is
    for the caller). A case whose bound is :data:`.bounds.LOCAL` is measured node by node,
    by :func:`.local.measure_case`, which calls this function for each node."""
    if case.bound is not None and case.bound.kind == "local":
        raise ValueError(f"case {case.name!r} has the LOCAL bound: it is measured node by node "
                         f"(parity.conformance.local.measure_case), not against a whole-graph oracle")
    if len(actual) != len(oracle):
        return Measurement(False, max_ratio=np.inf, malformed=True,
                           message=f"returned {len(actual)} outputs, expected {len(oracle)}")
    node = op_node(case, graph)
    masks = case.masks(arrays, len(oracle))
    result = Measurement(True)
    operands = None
    for i, (t, o, a_raw) in enumerate(zip(graph.output_types, oracle, actual)):
        a = np.asarray(a_raw)
        if a.dtype != t.dtype.numpy or a.shape != tuple(t.shape):
            return Measurement(False, max_ratio=np.inf, malformed=True,
                               message=f"output {i} is {a.dtype}{list(a.shape)}, "
                                                                f"expected {t.dtype.numpy}{list(t.shape)} ({t})")
        bound = case.bound or bound_for(case.op, node.attrs if node is not None else {}, t.dtype, declared.precision)
        mask = np.ones(a.shape, bool) if masks[i] is None else np.broadcast_to(masks[i], a.shape)
        result.compared += int(mask.sum())
        if bound.kind == "exact":
            _exact(result, i, t.dtype, o, a, mask, bound)
            continue
        if bound.kind == "ulp":
            s = np.abs(o).astype(np.float64)  # complex: |o|
            allowed = bound.c0 * ulp(t.dtype, s)
        else:
            if operands is None:  # a multi-op case (node None) is scaled by its graph's inputs
                operands = operands_of(graph, node, arrays) if node is not None else list(arrays)
            eps, eta, wide = compute_eps(case.op, t.dtype)
            attrs = node.attrs if node is not None else case.attrs
            ctx = ScaleContext(case.op, attrs, operands, oracle, i, graph, arrays, eps)
            s = np.broadcast_to(scale(bound.scale, ctx), a.shape)
            n = terms(case.op, [v.type for v in node.inputs], attrs) if node is not None else 1
            m = chain(case.op, n, declared.block(case.op, case.dtype))
            with np.errstate(all="ignore"):
                allowed = (bound.c0 + bound.c1 * m) * (eps * s + eta)
                if wide:
                    allowed = allowed + ulp(t.dtype, o)
        _scaled(result, i, t.dtype, o, a, mask, s, allowed, bound)
    result.passed = result.mismatches == 0 and not result.message
    return result


def _exact(result: Measurement, i: int, dtype, o, a, mask, bound: Bound) -> None:
    differ = exact_mismatch(dtype, o, a, zero_sign=bound.zero_sign) & mask
    count = int(differ.sum())
    if not count:
        return
    result.mismatches += count
    result.max_ratio = np.inf
    where = tuple(np.argwhere(differ)[0])
    if dtype.is_float:
        errs = np.where(differ, abs_error(dtype, o, a) / ulp(dtype, o), 0.0)
        result.max_ulp = max(result.max_ulp or 0.0, float(errs.max()))
    if not result.worst:
        result.worst = worst_element(where, i, o[where], a[where], bound=bound.describe())


def _scaled(result: Measurement, i: int, dtype, o, a, mask, s, allowed, bound: Bound) -> None:
    err = abs_error(dtype, o, a)
    with np.errstate(all="ignore"):
        allowed = np.where(np.isnan(allowed), np.inf, allowed)
        ratio = np.where(err == 0, 0.0, np.where(np.isinf(err), np.inf, err / allowed))
        ulps = np.where(err == 0, 0.0, err / ulp(dtype, s))
        rel = rel_error(o, a)
    ratio, ulps, rel = (np.where(mask, v, 0.0) for v in (ratio, ulps, rel))
    if not ratio.size:
        return
    bad = ratio > 1
    result.mismatches += int(bad.sum())
    result.max_ulp = max(result.max_ulp or 0.0, float(ulps.max()))
    finite_rel = rel[np.isfinite(rel)]
    if finite_rel.size:
        result.max_rel = max(result.max_rel or 0.0, float(finite_rel.max()))
    worst = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
    if float(ratio[worst]) > result.max_ratio or (bad.any() and not result.worst):
        result.max_ratio = max(result.max_ratio, float(ratio[worst]))
        result.worst = worst_element(worst, i, o[worst], a[worst], ulp=float(ulps[worst]),
                                     allowed=float(allowed[worst]) if np.ndim(allowed) else float(allowed),
                                     bound=bound.describe())
