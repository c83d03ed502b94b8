"""One frontend case: JAX's own result against the IR reference of the graph parity captures.

The steps, for a :class:`~.spec.FrontendCase`:

1. ``jax.jit(fun)`` on CPU on the case's arrays (under ``jax.enable_x64`` only when an input
   is 64-bit, never globally): JAX's result;
2. the traced jaxpr must hold the case's primitive (else the case tests nothing of its rule);
3. the same call captured into IR (``parity.frontend.jax.capture``, the rules under test),
   evaluated by the reference interpreter in float64: the oracle;
4. JAX's result measured against the oracle by :func:`..compare.measure`, under the bound of
   the IR op at the graph's output, or the case's own ``bound`` (a rule that composes several
   rounding ops must declare one: a graph with more than one rounding node and no declared
   bound is an error, never a silent choice);
5. the graph's own result on the reference interpreter (each node rounded to its dtype) held to
   the same bound: the float64 oracle cannot see a node that computes in a narrower dtype than
   the primitive does (a convert through f16), the rounded run can.

JAX's declared deviations (:mod:`.deviations`) are applied as the runner applies a backend's:
a failing case of a flush-to-zero dtype is measured again with subnormals read as zero. A
convention of JAX's that no ULP figure can state (a NaN where the spec has a number) leaves its
elements out, and the case fails as *stale* once JAX meets the spec there.

Example::

    >>> from parity.conformance.jax_frontend.registry import cases_of
    >>> r = run_case(next(c for c in cases_of("exp") if c.name == "random" and c.dtype.short == "f32"))
    >>> r.status, r.backend, r.max_ulp < 4
    ('pass', 'jax', True)
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from ...ir.interpreter import evaluate
from ...ir.ops import node_dtype
from ..bounds import EXACT, bound_for
from ..case import Case
from ..compare import measure
from ..declared import Declared
from ..execute import Prepared, measure_flushed, output_hash
from ..results import CaseResult, error_summary
from . import bridge
from .deviations import conventions_of
from .spec import FrontendCase, Refusal

COLUMN, DEVICE = "jax", "cpu"  # the matrix column of the frontend rows
BUNDLE = 48  # cases per jax.jit: XLA:CPU pays ~75 ms per compilation and ~50 ms per output on top


def needs_x64(arrays: Sequence[np.ndarray]) -> bool:
    """Whether JAX must run with x64 for these inputs (a 64-bit dtype would be narrowed)."""
    return any(np.asarray(a).dtype.itemsize == 8 or np.asarray(a).dtype.kind == "c" for a in arrays)


@contextlib.contextmanager
def jax_for(arrays: Sequence[np.ndarray], x64: bool = False):
    """JAX on CPU, with x64 for exactly as long as the case needs it."""
    import jax

    with jax.default_device(jax.devices("cpu")[0]), jax.enable_x64(x64 or needs_x64(arrays)):
        yield


def jax_result(case: FrontendCase, arrays) -> list[np.ndarray]:
    import jax

    with jax_for(arrays, case.x64):
        out = jax.jit(case.fun)(*arrays)
    return [np.asarray(o) for o in jax.tree_util.tree_leaves(out)]


def jax_results(cases: Sequence[FrontendCase], arrays: Sequence[list]) -> list[list[np.ndarray] | Exception]:
    """JAX's result of each case, the cases side by side in one ``jax.jit`` (one compilation:
    compiling, not running, is what a case costs); a bundle that fails runs case by case, so
    an exception lands on its own case."""
    import jax

    flat = [a for group in arrays for a in group]
    ends = np.cumsum([0] + [len(g) for g in arrays])

    def bundle(*values):
        return [c.fun(*values[ends[i]:ends[i + 1]]) for i, c in enumerate(cases)]

    try:
        with jax_for(flat, any(c.x64 for c in cases)):
            outs = jax.jit(bundle)(*flat)
        return [[np.asarray(o) for o in jax.tree_util.tree_leaves(out)] for out in outs]
    except Exception:  # noqa: BLE001 - one case's exception, found below
        results: list = []
        for c, a in zip(cases, arrays):
            try:
                results.append(jax_result(c, a))
            except Exception as exc:  # noqa: BLE001
                results.append(exc)
        return results


def _ids(case) -> dict:
    return dict(case=case.id, op=case.op, dtype=case.dtype.short, backend=COLUMN, device=DEVICE)


def _widening(node) -> bool:
    """A convert to a dtype that holds every value of its source (f16 → f32, i8 → f32): exact."""
    src, dst = node.inputs[0].type.dtype, node.outputs[0].type.dtype
    return node.op == "convert" and not src.is_complex and bool(np.can_cast(src.numpy, dst.numpy, "safe"))


def rounding_nodes(graph) -> list:
    """``graph``'s nodes whose bound is not bit-exact in their dtype."""
    return [n for n in graph.nodes if bound_for(n.op, n.attrs, node_dtype(n)).kind != "exact" and not _widening(n)]


def measured_case(case: FrontendCase, graph, convention=None) -> Case:
    """The op-database :class:`Case` that :func:`measure` holds the captured graph to: its op is
    the one rounding node's, else the graph's output node's (an identity rule's graph has
    none: bit-exact)."""
    outputs = {id(v) for v in graph.outputs}
    mask = case.mask if convention is None else convention.masked(case.mask)
    rounding = rounding_nodes(graph)
    node = rounding[0] if len(rounding) == 1 else next(
        (n for n in reversed(graph.nodes) if any(id(r) in outputs for r in n.outputs)), None)
    if node is None:
        return Case("identity", case.dtype, case.inputs, name=case.name, mask=mask, bound=EXACT,
                    build=lambda *a: None)
    return Case(node.op, case.dtype, case.inputs, dict(node.attrs), case.name, case.tags, mask=mask,
                bound=case.bound)


def run_cases(cases: Sequence[FrontendCase | Refusal], declared: Declared = Declared()) -> list[CaseResult]:
    """Each case's result in the ``jax/cpu`` column; JAX's side in bundles of at most
    :data:`BUNDLE` cases that agree on x64 (one compilation each, across primitives)."""
    groups: dict[bool, list[int]] = {}
    arrays = [None if isinstance(c, Refusal) else c.arrays() for c in cases]
    for i, (c, a) in enumerate(zip(cases, arrays)):
        if a is not None:
            groups.setdefault(c.x64 or needs_x64(a), []).append(i)
    wants: dict[int, object] = {}
    for members in groups.values():
        for start in range(0, len(members), BUNDLE):
            part = members[start:start + BUNDLE]
            wants |= dict(zip(part, jax_results([cases[i] for i in part], [arrays[i] for i in part])))
    results = [run_refusal(c) if isinstance(c, Refusal) else run_case(c, declared, arrays[i], wants[i])
               for i, c in enumerate(cases)]
    return stale_conventions(results)


def stale_conventions(results: list[CaseResult]) -> list[CaseResult]:
    """A convention (deviations.CONVENTIONS) that left elements out of some cases of a row and
    dtype, and on which JAX met the spec in every one of them, is stale: its first case fails."""
    by_key: dict[tuple, list[CaseResult]] = {}
    for r in results:
        if "convention" in r.attachments:
            by_key.setdefault((r.op, r.dtype, r.attachments["convention"]), []).append(r)
    for (_, _, reason), mine in by_key.items():
        if not any(r.attachments["differs"] for r in mine):
            first = mine[0]
            first.status, first.max_ratio = "fail", np.inf
            first.message = (f"stale convention: JAX meets the spec on every element deviations.py says it "
                             f"does not ({reason}); remove the entry")
    return results


def run_case(case: FrontendCase | Refusal, declared: Declared = Declared(), arrays=None, want=None) -> CaseResult:
    """The case's result in the ``jax/cpu`` column (never raises for a failing rule); ``arrays``
    and ``want`` (JAX's result, or the exception it raised) when :func:`run_cases` has them."""
    if isinstance(case, Refusal):
        return run_refusal(case)
    arrays = case.arrays() if arrays is None else arrays
    try:
        if isinstance(want, Exception):
            raise want
        want = jax_result(case, arrays) if want is None else want
        with jax_for(arrays, case.x64):
            reached = bridge.primitives_reached(case.fun, arrays)
            graph = bridge.capture(case.fun, arrays)
    except Exception as exc:  # noqa: BLE001 - a rule that crashes is a result
        return CaseResult(**_ids(case), status="error", max_ratio=np.inf,
                          message=error_summary(f"{type(exc).__name__}: {exc}"))
    if case.primitive not in reached:
        return CaseResult(**_ids(case), status="error", max_ratio=np.inf,
                          message=f"the case never reaches {case.primitive} (its jaxpr holds {sorted(reached)})")
    rounding = rounding_nodes(graph)
    if case.bound is None and len(rounding) > 1:
        return CaseResult(**_ids(case), status="error", max_ratio=np.inf,
                          message=f"the rule emits {len(rounding)} rounding ops ({', '.join(n.op for n in rounding)}): the case "
                                  "must declare a bound derived from them")
    convention = conventions_of(case)
    measured = measured_case(case, graph, convention)
    rounded = evaluate(graph, arrays)  # the reference backend: each node rounded to its own dtype
    oracle = rounded if case.narrowing else evaluate(graph, arrays, oracle=True)
    fixed = measured.masks(arrays, len(oracle))  # of these inputs: a flushed re-measure must not move it
    measured = replace(measured, mask=lambda _: fixed)
    m = measure(measured, graph, arrays, oracle, want, declared)
    own = measure(measured, graph, arrays, oracle, rounded)
    if not own.passed:  # the oracle computes every node in float64, blind to an intermediate's dtype
        return CaseResult(**_ids(case), status="fail", max_ratio=np.inf, path="jax.jit", max_ulp=own.max_ulp,
                          worst=own.worst, message=f"the captured graph misses its own bound on the reference "
                          f"interpreter ({own.max_ulp} ULP): a node computes in a narrower dtype than the "
                          "primitive's")
    differs = None if convention is None else convention.differs(arrays, oracle, want)
    result = CaseResult(**_ids(case), status="pass" if m.passed else "fail", path="jax.jit", max_ulp=m.max_ulp,
                        max_ratio=m.max_ratio, max_rel=m.max_rel, mismatches=m.mismatches, message=m.message,
                        worst=m.worst, malformed=m.malformed, output_hash=output_hash(want),
                        attachments={} if differs is None else {"convention": convention.reason, "differs": differs})
    if not m.passed and not m.malformed and case.dtype in declared.flushes:
        flushed = measure_flushed(Prepared(measured, arrays, graph, oracle), want, declared)
        result.flushed_passed, result.flushed_ulp = flushed.passed, flushed.max_ulp
    return result


def run_refusal(case: Refusal) -> CaseResult:
    """Pass when the capture refuses with ``case.error``, naming the primitive and this user's file
    (under x64 where an argument is 64-bit, as a case runs)."""
    try:
        with jax_for(case.args):
            bridge.capture(case.fun, list(case.args))
    except Exception as exc:  # noqa: BLE001 - the refusal is the result
        text = str(exc)
        right = type(exc).__name__ == case.error and case.primitive in text and "cases_" in text
        return CaseResult(**_ids(case), status="pass" if right else "fail", path="refused",
                          max_ratio=0.0 if right else np.inf,
                          message="" if right else f"refused with {type(exc).__name__}: {error_summary(text)}; "
                                                   f"expected {case.error} naming {case.primitive} at the user's line")
    return CaseResult(**_ids(case), status="fail", path="refused", max_ratio=np.inf,
                      message=f"captured; the rule should refuse {case.primitive} with {case.error}")
