"""One case, or a bundle of cases, on one backend and device: the graph as the backend
receives it (composites it does not claim expanded), compiled, run, and measured against
the oracle — again with subnormals flushed when the backend declares flush-to-zero.

Example::

    >>> from parity.backends.registry import get_backend
    >>> from parity.conformance import opdb
    >>> case = next(c for c in opdb.all_cases() if c.op == "neg")
    >>> run_case(get_backend("reference"), "cpu", case).status
    'pass'
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from ..backends.base import Backend, check_not_declined, declined_by_predicate
from ..backends.subgraph_claims import compile_by_regions
from ..ir.builder import GraphBuilder
from ..ir.dtypes import DType
from ..ir.errors import UnsupportedOpError
from ..ir.graph import Graph
from ..ir.interpreter import evaluate
from ..ir.ops import node_dtype
from ..ir.passes import decompose
from .case import Case
from .declared import Declared
from .local import flush_subnormals as flush_declared
from .local import measure_case
from .results import DECLINED, PASS, UNSUPPORTED, CaseResult


class NotClaimed(Exception):
    """The backend does not claim a node of the case's graph in its dtype (even after the
    composites it does not claim are expanded): the case is *unsupported* there."""


class DeclinedByPredicate(NotClaimed):
    """The backend claims the op in its dtype, but the claim's predicate turns this case's node
    down (an attribute, a shape, a dtype it does not take): the case is *declined*, neither a
    failure nor a pass of the backend."""


def lower_for(backend: Backend, graph: Graph, claims=None) -> tuple[Graph, dict[str, str]]:
    """``graph`` as ``backend`` receives it: composites it does not claim in their dtype
    expanded. Returns (graph, {op: path}); raises :class:`NotClaimed` naming the first
    node the backend does not claim in its dtype."""
    claims = backend.claims() if claims is None else claims
    present = {n.op for n in graph.nodes}
    native = {n.op for n in graph.nodes if n.op in claims and node_dtype(n) in claims[n.op].dtypes}
    # Ops of the case graph are claimed per dtype; composites met inside a decomposition by
    # name (a dtype they do not claim then shows as unsupported below).
    lowered, _ = decompose(graph, claimed=lambda op: op in native or (op not in present and op in claims),
                           declined=lambda node: declined_by_predicate(claims, node) is not None)
    for n in lowered.nodes:
        claim = claims.get(n.op)
        dtype = node_dtype(n)
        if claim is None or dtype not in claim.dtypes:
            what = n.op if claim is None else f"{n.op} in {dtype.short}"
            via = "" if n.op in graph.op_counts() else " (reached through a decomposition)"
            why = getattr(backend, "declined", {}).get(n.op) or getattr(backend, "declined_dtypes", {}).get(dtype)
            raise NotClaimed(f"{backend.name} does not claim {what}{via}" + (f": declined, {why}" if why else ""))
        why = declined_by_predicate(claims, n)
        if why is not None:
            via = "" if n.op in graph.op_counts() else " (reached through a decomposition)"
            raise DeclinedByPredicate(f"declined by the predicate of {backend.name}'s claim on {n.op}{via}: {why}")
    # claims name a node's dtype (convert's input); a dtype the backend declines may be another
    # operand's or the result's (convert f32 -> c64): declined is declared, not a failure
    try:
        check_not_declined(backend, lowered)
    except UnsupportedOpError as exc:
        raise NotClaimed(str(exc)) from None
    paths = {}
    for n in graph.nodes:
        if n.op in native and declined_by_predicate(claims, n) is None:
            paths[n.op] = "extern" if claims[n.op].extern else "native"
        else:
            paths[n.op] = "decomposed"
    return lowered, paths


def run_case(backend: Backend, device: str, case: Case, *, arrays=None, graph=None, oracle=None,
             claims=None) -> CaseResult:
    """Run one case on one backend and device and measure it (never raises for backend errors)."""
    prepared = Prepared(case) if arrays is None else Prepared(case, arrays, graph, oracle)
    return run_bundle(backend, device, [prepared], claims)[0]


class Prepared:
    """A case with its inputs, graph and oracle outputs, computed once for every target."""

    def __init__(self, case: Case, arrays=None, graph=None, oracle=None):
        self.case = case
        self.arrays = case.arrays() if arrays is None else arrays
        self.graph = case.graph(self.arrays) if graph is None else graph
        self.oracle = evaluate(self.graph, self.arrays, oracle=True) if oracle is None else oracle


def run_bundle(backend: Backend, device: str, bundle: Sequence[Prepared], claims=None) -> list[CaseResult]:
    """Run several cases as one graph (one compilation), measuring each.

    The cases' graphs are placed side by side in one graph; if compiling or running it
    fails, each case is run alone so that the failure lands on the case that causes it.
    """
    claims = backend.claims() if claims is None else claims
    declared = Declared.of(backend, device)
    results: list[CaseResult | None] = [None] * len(bundle)
    runnable = _lowered(backend, device, bundle, claims, results)
    if len(runnable) > 1:
        outputs = _side_by_side(backend, device, bundle[0].case.op, [(g, bundle[i].arrays) for i, g, _ in runnable])
        if outputs is not None:
            for (i, _, paths), out in zip(runnable, outputs):
                results[i] = _measured(backend, device, bundle[i], paths, out, declared)
            return results
    for i, g, paths in runnable:
        try:
            outputs = execute(backend, device, g, bundle[i].arrays)
        except MemoryError:
            raise
        except Exception as exc:  # the backend's failure is a result, not a crash of the runner
            results[i] = CaseResult(**_ids(backend, device, bundle[i].case), status="error",
                                    path=paths.get(bundle[i].case.op, ""), max_ratio=np.inf,
                                    message=f"{type(exc).__name__}: {_short(str(exc))}")
            continue
        results[i] = _measured(backend, device, bundle[i], paths, outputs, declared)
    return results


def run_batch(backend: Backend, device: str, bundles: Sequence[Sequence[Prepared]], claims=None) -> list[list]:
    """Several bundles (each one op × dtype's cases) compiled as one graph, each bundle's results.

    A batch saves what each compilation costs whatever its size (Inductor's C++ build). A
    result of the batch stands only when it passes: a bundle with a case that does not pass
    there, and every bundle when the batch fails to compile or run, runs again on its own
    (:func:`run_bundle`), so every verdict other than a pass is the bundle's own.
    """
    claims = backend.claims() if claims is None else claims
    if len(bundles) < 2:
        return [run_bundle(backend, device, b, claims) for b in bundles]
    declared = Declared.of(backend, device)
    results: list[list] = [[None] * len(b) for b in bundles]
    runnable = [(k, i, g, paths) for k, b in enumerate(bundles)
                for i, g, paths in _lowered(backend, device, b, claims, results[k])]
    outputs = _side_by_side(backend, device, bundles[0][0].case.op,
                             [(g, bundles[k][i].arrays) for k, i, g, _ in runnable])
    if outputs is None:
        return [run_bundle(backend, device, b, claims) for b in bundles]
    for (k, i, _, paths), out in zip(runnable, outputs):
        results[k][i] = _measured(backend, device, bundles[k][i], paths, out, declared)
    return [run_bundle(backend, device, b, claims) if any(r.status not in (PASS, UNSUPPORTED, DECLINED) for r in rs)
            else rs for b, rs in zip(bundles, results)]


def run_bundles(backend: Backend, device: str, bundles: Sequence[Sequence[Prepared]], claims=None) -> list:
    """Every case result of ``bundles``, in order: in batches of the backend's ``compile_batch``
    bundles (:func:`run_batch`), or bundle by bundle."""
    size = max(1, getattr(backend, "compile_batch", 1))
    out = []
    for start in range(0, len(bundles), size):
        for results in run_batch(backend, device, bundles[start:start + size], claims):
            out += results
    return out


def split_bundles(prepared: Sequence[Prepared]) -> list[list[Prepared]]:
    """``prepared`` cut into bundles: each run of consecutive cases of one (op, dtype)."""
    out: list[list[Prepared]] = []
    for p in prepared:
        if out and (out[-1][0].case.op, out[-1][0].case.dtype) == (p.case.op, p.case.dtype):
            out[-1].append(p)
        else:
            out.append([p])
    return out


def _lowered(backend: Backend, device: str, bundle: Sequence[Prepared], claims, results: list) -> list[tuple]:
    """(index, lowered graph, paths) of each case of ``bundle`` the backend claims; the result
    of each other case (unsupported, declined) is put in ``results``."""
    runnable = []
    for i, p in enumerate(bundle):
        try:
            runnable.append((i, *lower_for(backend, p.graph, claims)))
        except NotClaimed as exc:
            status = DECLINED if isinstance(exc, DeclinedByPredicate) else UNSUPPORTED
            results[i] = CaseResult(**_ids(backend, device, p.case), status=status, message=str(exc))
    return runnable


def _side_by_side(backend: Backend, device: str, name: str, pieces: Sequence[tuple[Graph, Sequence]]) -> list | None:
    """Each (graph, arrays) piece's outputs, the graphs compiled and run as one graph; None when
    that fails, or when a graph has a device mesh (a mesh is per graph) or there is nothing to run."""
    if not pieces or any(g.sharding is not None for g, _ in pieces):
        return None
    merged = Graph(f"bundle_{name}", [v for g, _ in pieces for v in g.inputs],
                   [n for g, _ in pieces for n in g.nodes], [v for g, _ in pieces for v in g.outputs])
    try:
        outputs = execute(backend, device, merged, [a for _, arrays in pieces for a in arrays])
    except MemoryError:  # a worker's memory cap (conformance/worker.py) ends the worker, not the case
        raise
    except Exception:  # noqa: BLE001 - the caller runs the pieces on their own
        return None
    out, k = [], 0
    for g, _ in pieces:
        out.append(outputs[k:k + len(g.outputs)])
        k += len(g.outputs)
    return out


def _ids(backend: Backend, device: str, case: Case) -> dict:
    return dict(case=case.id, op=case.op, dtype=case.dtype.short, backend=backend.name, device=device)


def execute(backend: Backend, device: str, graph: Graph, arrays) -> list[np.ndarray]:
    # the regions a backend claims whole (claim_subgraphs) are compiled as they are for users
    executable = compile_by_regions(backend, graph, lambda piece, _: backend.compile(piece, device))
    return [as_array(o) for o in executable(*arrays)]


def as_array(output) -> np.ndarray:
    """A backend's output as a host NumPy array. torch tensors (the Triton backend returns
    them, possibly on a GPU) come to the host first; bfloat16, which NumPy's buffer protocol
    lacks, crosses as its 16-bit words."""
    if type(output).__module__.startswith("torch"):
        import torch  # only when a backend returned torch tensors

        output = output.detach().cpu().contiguous()
        if output.dtype is torch.bfloat16:
            return output.view(torch.int16).numpy().view(DType.bfloat16.numpy)
        return output.numpy()
    return np.asarray(output)


def _measured(backend, device, p: Prepared, paths, outputs, declared: Declared) -> CaseResult:
    m = measure_case(p.case, p.graph, p.arrays, p.oracle, outputs, declared)
    result = CaseResult(**_ids(backend, device, p.case), status="pass" if m.passed else "fail",
                        path=paths.get(p.case.op, ""), max_ulp=m.max_ulp, max_ratio=m.max_ratio, max_rel=m.max_rel,
                        mismatches=m.mismatches, message=m.message, worst=m.worst, malformed=m.malformed,
                        output_hash=output_hash(outputs))
    local = p.case.bound is not None and p.case.bound.kind == "local"  # measure_local flushes per node
    if not m.passed and not m.malformed and not local and p.case.dtype in declared.flushes:
        flushed = measure_flushed(p, outputs, declared)
        result.flushed_passed, result.flushed_ulp = flushed.passed, flushed.max_ulp
    return result


def output_hash(outputs) -> str:
    """A short digest of the outputs: each one's dtype, shape and bytes, in order."""
    digest = hashlib.sha256()
    for o in outputs:
        a = np.ascontiguousarray(np.asarray(o))
        digest.update(f"{a.dtype.str}{a.shape}".encode())
        digest.update(a.tobytes())
    return digest.hexdigest()[:16]


def flush_subnormals(array: np.ndarray, dtype: DType | None = None) -> np.ndarray:
    """``array`` (of IR dtype ``dtype``: default, its own) with values below float32's normal
    range (float64's for f64) as signed zeros: what a runtime with FTZ/DAZ reads and makes of
    them (f16/bf16 compute in float32)."""
    a = np.asarray(array)
    dtype = dtype or (DType.from_numpy(a.dtype) if a.dtype.kind in "fV" or a.dtype == DType.bfloat16.numpy else None)
    if dtype is None or not dtype.is_float:
        return a
    tiny = np.finfo(np.float64 if dtype is DType.float64 else np.float32).tiny
    wide = a.astype(np.float64)
    return np.where(np.abs(wide) < tiny, np.copysign(0.0, wide), wide).astype(a.dtype)


def measure_flushed(p: Prepared, outputs, declared: Declared):
    """The case measured as if the subnormals of the dtypes ``declared`` flushes (below each
    one's own smallest normal; no other dtype's) were zero: each output element against the
    oracle or the oracle on flushed inputs (whichever is nearer: a runtime may flush some
    operands and not others), results flushed on both sides."""
    flushes = declared.flushes
    arrays = [flush_declared(a, t.dtype, flushes) for a, t in zip(p.arrays, p.graph.input_types)]
    flushed = evaluate(p.graph, arrays, oracle=True)
    expected, actual = [], []
    for o, f, a, t in zip(p.oracle, flushed, outputs, p.graph.output_types):
        o, f, a = (flush_declared(v, t.dtype, flushes) for v in (o, f, a))
        expected.append(np.where(_distance(f, a) <= _distance(o, a), f, o).astype(np.asarray(o).dtype))
        actual.append(a)
    return measure_case(p.case, p.graph, arrays, expected, actual, declared)


def _distance(expected, actual) -> np.ndarray:
    """|expected - actual| per element, 0 where both are NaN (or equal), inf where one is."""
    e, a = np.asarray(expected), np.asarray(actual)
    if e.dtype.kind == "c":  # the larger part's distance
        return np.maximum(_distance(e.real, a.real), _distance(e.imag, a.imag))
    if e.dtype.kind not in "fV" and e.dtype != DType.bfloat16.numpy:
        return np.where(e == a, 0.0, np.inf)
    e, a = e.astype(np.float64), a.astype(np.float64)
    with np.errstate(invalid="ignore"):
        d = np.abs(e - a)
    return np.where((e == a) | (np.isnan(e) & np.isnan(a)), 0.0, np.where(np.isnan(d), np.inf, d))


def _short(text: str, limit: int = 600) -> str:
    return text if len(text) <= limit else text[:limit] + " …"


def probe_flush_to_zero(backend, device: str, dtype: DType) -> bool:
    """Does ``backend`` flush subnormals of ``dtype`` on ``device``? Runs sqrt of two
    subnormal inputs and a product whose exact result is subnormal; True when every result
    is zero where the spec's is not (and False when none is: a mixture raises)."""
    tiny = float(dtype.real_dtype.finfo.tiny)  # complex: real inputs, imaginary parts 0
    x = np.array([tiny / 4, tiny / 2]).astype(dtype.numpy)
    y = np.array([np.sqrt(tiny) / 2, np.sqrt(tiny) / 4]).astype(dtype.numpy)
    b = GraphBuilder("ftz_probe")
    xi, yi = b.input(dtype[2]), b.input(dtype[2])
    graph = b.build([b.sqrt(xi), b.mul(yi, yi)])
    lowered, _ = lower_for(backend, graph)
    got = np.concatenate([np.asarray(o).astype(np.complex128) for o in execute(backend, device, lowered, [x, y])])
    spec = np.concatenate([o.astype(np.complex128) for o in evaluate(graph, [x, y])])
    zero = got == 0
    if zero.all() and (spec != 0).all():
        return True
    if not zero.any():
        return False
    raise AssertionError(f"{backend.name} on {device} flushes some {dtype.short} subnormals and not others: "
                         f"got {got.tolist()}, the spec {spec.tolist()}")
