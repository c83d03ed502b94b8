"""Node-by-node measurement of a multi-op graph (fuzzer graphs and their regressions).

Errors propagate through a graph: a correct backend rounds every intermediate, and a
later subtraction can magnify that rounding far beyond any one op's bound. So a graph
is not compared with its end-to-end oracle. Instead every node is measured on its own:
the oracle of that one node is evaluated on the operands *the backend itself produced*
(its intermediate values are graph outputs), and the node must meet its own op's bound
(:func:`.bounds.bound_for`). A wrong node is then named exactly, with its operands, and a
correct backend cannot fail through propagation.

Implementation-defined elements (integer division by zero, float→int of NaN or out of
range, NaN operands of bitcasts, out-of-range gather/embedding indices, invalid scatter
indices) are excluded per node by :func:`undefined_mask`, as the op database does.

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, f32, evaluate
    >>> b = GraphBuilder(); x = b.input(f32[3]); e = b.exp(x); y = b.sub(e, e)
    >>> g = b.build([e, y]); arrays = [np.array([0.0, 1.0, 2.0], np.float32)]
    >>> measure_local(g, arrays, evaluate(g, arrays)).passed
    True
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from ..ir.builder import GraphBuilder
from ..ir.graph import Graph, Node
from ..ir.interpreter import evaluate, evaluate_node
from ..ir.ops import node_dtype  # the dtype a node's bound is keyed by (select: on_true's)
from ..ir.ops.conversion import round_float
from .bounds import Scale, bound_for, terms
from .case import Case
from .compare import measure
from .declared import NOTHING, Declared
from .metrics import Measurement


def undefined_mask(op: str, attrs, operands: Sequence[np.ndarray], n_outputs: int) -> list[np.ndarray | None]:
    """Per output, the elements whose value the op defines (None: all of them)."""
    none = [None] * n_outputs
    if op in ("div", "rem") and operands[1].dtype.kind in "iu":
        return [operands[1] != 0]
    if op == "convert" and _is_float(operands[0]) and attrs["dtype"].is_integer:
        info, t = attrs["dtype"].iinfo, np.trunc(operands[0].astype(np.float64))
        with np.errstate(invalid="ignore"):
            return [np.isfinite(t) & (t >= float(info.min)) & (t < float(info.max) + 1.0)]
    if op == "bitcast_convert" and _is_float(operands[0]):
        return [~np.isnan(operands[0].astype(np.float64))]
    if op == "gather":
        x, idx = operands
        return [(idx >= 0) & (idx < x.shape[attrs["axis"]])]
    if op == "embedding":
        weight, idx = operands
        return [((idx >= 0) & (idx < weight.shape[0]))[..., None]]
    if op == "scatter":
        x, idx, _ = operands
        ok = bool(((idx >= 0) & (idx < x.shape[attrs["axis"]])).all())
        if ok and attrs["reduce"] == "replace":
            ok = _distinct_along(idx, attrs["axis"])
        return none if ok else [np.zeros(x.shape, bool)]
    return none


def terms_in_range(node: Node, sub: Graph, operands) -> list[np.ndarray | None]:
    """For an accumulation (a bound scaled by Σ|terms|): the elements whose Σ|terms| fits the
    output dtype. The n·ε·Σ|terms| bound assumes no term or partial sum overflows; where
    Σ|terms| exceeds the dtype's largest value a correct float32 sum may meet +inf and -inf
    (NaN) while the float64 oracle stays finite, so those elements are not compared."""
    out: list[np.ndarray | None] = [None] * len(node.outputs)
    if not all(v.type.dtype.is_float for v in node.outputs):
        return out
    bounds = [bound_for(node.op, node.attrs, v.type.dtype) for v in node.outputs]
    if not any(b.kind == "scaled" and b.scale is Scale.TERMS for b in bounds):
        return out
    absolute = [np.abs(a.astype(np.float64)).astype(a.dtype) if _is_float(a) else a for a in operands]
    for i, (s, v, b) in enumerate(zip(evaluate(sub, absolute, oracle=True), node.outputs, bounds)):
        if b.kind == "scaled" and b.scale is Scale.TERMS:
            out[i] = ~(np.abs(s.astype(np.float64)) > float(v.type.dtype.finfo.max))
    return out


def _and(a: list, b: list) -> list:
    return [x if y is None else y if x is None else x & y for x, y in zip(a, b)]


def _is_float(a: np.ndarray) -> bool:
    return a.dtype.kind == "f" or a.dtype.name == "bfloat16"


def _distinct_along(idx: np.ndarray, axis: int) -> bool:
    """No two 'replace' updates land on one element: indices distinct along ``axis``."""
    if idx.size == 0:
        return True
    s = np.sort(np.moveaxis(idx, axis, -1), axis=-1)
    return not bool((s[..., 1:] == s[..., :-1]).any())


def _spec_meets_bound(node: Node, case: Case, sub: Graph, operands) -> bool:
    """Does the spec itself (the reference, rounded as the IR rounds) meet the node's bound on
    these operands? Where it does not — a float16/bfloat16 composite computed in float32
    overflowing on values near the top of the range, which the float64 oracle does not —
    the bound says nothing about the operands, and the node is not held to it."""
    spec = evaluate(sub, operands)
    return measure(case, sub, operands, evaluate(sub, operands, oracle=True), spec).passed


def flush_subnormals(a: np.ndarray, dtype, flushes=None) -> np.ndarray:
    """``a`` with the subnormals of ``dtype`` replaced by zeros of their sign (float arrays,
    and each part of complex ones; with ``flushes``, only when ``dtype`` is one of them)."""
    if not (dtype.is_float or dtype.is_complex) or flushes is not None and dtype not in flushes:
        return a
    if dtype.is_complex:
        x, part = np.asarray(a), dtype.real_dtype
        out = np.empty(x.shape, x.dtype)
        out.real, out.imag = flush_subnormals(x.real, part), flush_subnormals(x.imag, part)
        return out
    x = np.asarray(a)
    tiny = float(dtype.finfo.tiny)
    wide = x.astype(np.float64)
    # A value that rounds up to ±tiny in the dtype is a normal result (an oracle in float64
    # just below tiny): FTZ flushes what is subnormal after rounding.
    with np.errstate(all="ignore"):
        below = np.abs(round_float(wide, dtype).astype(np.float64)) < tiny
    return np.where(below, np.copysign(0.0, wide), wide).astype(x.dtype)


def _passes_flushed(case: Case, sub: Graph, operands, got, declared: Declared) -> bool:
    """Does the node meet its bound once the backend's declared flush-to-zero is assumed:
    subnormals of the dtypes it flushes (and only those) read as zeros in the operands, the
    oracle's results and the backend's results? An accumulation (a bound scaled by
    Σ|terms|) may also lose a subnormal partial result per term, so its results may differ
    from the flushed oracle by ``n`` times that dtype's smallest normal; no other bound
    gets slack."""
    from ..ir.ops.conversion import round_float
    flushes = declared.flushes
    flushed = [flush_subnormals(a, v.type.dtype, flushes) for a, v in zip(operands, sub.inputs)]
    oracle = [flush_subnormals(o, v.type.dtype, flushes)
              for o, v in zip(evaluate(sub, flushed, oracle=True), sub.outputs)]
    mine = [flush_subnormals(np.asarray(g), v.type.dtype, flushes) for g, v in zip(got, sub.outputs)]
    node = sub.nodes[0]
    n = terms(node.op, [v.type for v in node.inputs], node.attrs)
    for i, v in enumerate(sub.outputs):
        bound = bound_for(node.op, node.attrs, v.type.dtype) if v.type.dtype.is_float else None
        if bound is not None and bound.kind == "scaled" and bound.scale is Scale.TERMS and v.type.dtype in flushes:
            slack = n * float(v.type.dtype.finfo.tiny)
            close = np.abs(mine[i].astype(np.float64) - oracle[i]) <= slack
            mine[i] = np.where(close, round_float(oracle[i], v.type.dtype), mine[i]).astype(mine[i].dtype)
    return measure(case, sub, flushed, oracle, mine, declared).passed


def single_node_graph(node: Node) -> Graph:
    """``node`` alone, its operands as graph inputs and its results as outputs."""
    b = GraphBuilder(node.op)
    params = [b.input(v.type) for v in node.inputs]
    out = b.op(node.op, *params, **node.attrs)
    return b.build(list(out) if isinstance(out, tuple) else [out])


def measure_case(case: Case, graph: Graph, arrays: Sequence[np.ndarray], oracle: Sequence[np.ndarray],
                 actual: Sequence, declared: Declared = NOTHING) -> Measurement:
    """A case's measurement: node by node (:func:`measure_local`; ``oracle`` is not used) under
    the :data:`.bounds.LOCAL` bound (fuzzer graphs, regressions), else every output against
    the oracle under its bound (:func:`.compare.measure`)."""
    if case.bound is not None and case.bound.kind == "local":
        return measure_local(graph, arrays, actual, declared)
    return measure(case, graph, arrays, oracle, actual, declared)


def measure_local(graph: Graph, arrays: Sequence[np.ndarray], actual: Sequence,
                  declared: Declared = NOTHING) -> Measurement:
    """Measure every node of ``graph`` against its own bound (see the module docstring).

    ``actual`` are the backend's values of ``graph.outputs``. A node whose results are not
    all outputs is not measured; its results are computed by the reference interpreter
    (rounded as the spec rounds) so later nodes still have operands. ``worst["nodes"]``
    lists every failing node: index, op, dtype, max ULP, max error/bound ratio, whether its
    outputs were malformed (``malformed``) and whether the flush-to-zero the backend declares
    for that dtype explains it (``flush_to_zero``, see :func:`_passes_flushed`; False when it
    declares none);
    ``worst["outside"]`` the nodes whose operands lie where the spec itself misses the
    bound (:func:`_spec_meets_bound`), which are not held to it.
    """
    with warnings.catch_warnings(), np.errstate(all="ignore"):  # NaN/inf operands are compared, not warned about
        warnings.simplefilter("ignore", RuntimeWarning)
        return _measure_local(graph, arrays, actual, declared)


def _measure_local(graph: Graph, arrays: Sequence[np.ndarray], actual: Sequence, declared: Declared) -> Measurement:
    if len(actual) != len(graph.outputs):
        return Measurement(False, max_ratio=np.inf, malformed=True,
                           message=f"returned {len(actual)} outputs, expected {len(graph.outputs)}")
    env = {v: np.asarray(a) for v, a in zip(graph.inputs, arrays)}
    for v, a in zip(graph.outputs, actual):
        env.setdefault(v, np.asarray(a))
    total = Measurement(True)
    failures, outside = [], []
    for k, node in enumerate(graph.nodes):
        operands = [env[v] for v in node.inputs]
        if not all(a.dtype == v.type.dtype.numpy and a.shape == v.type.shape for a, v in zip(operands, node.inputs)):
            for v in node.outputs:  # an operand of the wrong type already failed where it was made
                env.setdefault(v, np.zeros(v.type.shape, v.type.dtype.numpy))
            continue
        got = [env.get(v) for v in node.outputs]
        if any(g is None for g in got):
            results = evaluate_node(node.op, operands, node.attrs, [v.type for v in node.inputs],
                                    [v.type for v in node.outputs])
            env.update(zip(node.outputs, results))
            continue
        sub = single_node_graph(node)
        masks = _and(undefined_mask(node.op, node.attrs, operands, len(node.outputs)),
                     terms_in_range(node, sub, operands))
        case = Case(node.op, node_dtype(node), lambda rng, a=operands: a, node.attrs, f"node{k}",
                    mask=lambda arrays, m=masks: m)
        m = measure(case, sub, operands, evaluate(sub, operands, oracle=True), got, declared)
        total.compared += m.compared
        total.mismatches += m.mismatches
        if m.max_ulp is not None:
            total.max_ulp = max(total.max_ulp or 0.0, m.max_ulp)
        if m.max_rel is not None:
            total.max_rel = max(total.max_rel or 0.0, m.max_rel)
        if m.passed:
            total.max_ratio = max(total.max_ratio, m.max_ratio)
            continue
        total.malformed |= m.malformed
        if not m.malformed and not _spec_meets_bound(node, case, sub, operands):
            outside.append({"node": k, "op": node.op, "dtype": node_dtype(node).short})
            continue
        flushes = not m.malformed and bool(declared.flushes) and _passes_flushed(case, sub, operands, got, declared)
        failures.append({"node": k, "op": node.op, "dtype": node_dtype(node).short, "max_ulp": m.max_ulp,
                         "max_ratio": m.max_ratio, "message": m.message, "worst": m.worst,
                         "malformed": m.malformed, "flush_to_zero": flushes})
        if len(failures) == 1 or m.max_ratio > total.max_ratio:
            total.max_ratio = max(total.max_ratio, m.max_ratio)
    if outside:
        total.worst = {"outside": outside}
    if failures:
        first = failures[0]
        total.passed = False
        total.worst = {**first["worst"], "node": first["node"], "op": first["op"], "nodes": failures,
                       "outside": outside}
        what = ", ".join(f"%node{f['node']} {f['op']}[{f['dtype']}]" for f in failures)
        total.message = f"{len(failures)} node(s) over their bound: {what}" + (
            f"; {first['message']}" if first["message"] else "")
    return total
