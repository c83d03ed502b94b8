"""The streaming diff: every node of every captured graph, run on the backend, measured, freed.

Per graph, in node order, three environments advance together: the backend's values (each
node run alone on the backend, fed the backend's own upstream values), the reference the
carried error is taken against (the float64 oracle run end to end, by default), and
nothing else. A value is dropped after its last use; a backward graph's saved activations
(:attr:`.capture.CapturedGraph.links`) are the backend's and the reference's own forward
results. Only the operands of the :attr:`keep` worst-ranked nodes are kept (for repros).

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, f32
    >>> b = GraphBuilder(); x = b.input(f32[3]); g = b.build([b.tanh(b.exp(x))])
    >>> report = diff_graph(g, [np.array([0.0, 1.0, 2.0], np.float32)], backend="reference")
    >>> [(r.op, r.verdict) for r in report.rows]
    [('exp', 'ok'), ('tanh', 'ok')]
"""

from __future__ import annotations

import time
import tracemalloc
import warnings
from collections.abc import Sequence

import numpy as np

from ..conformance.declared import Declared
from ..ir.graph import Graph, Node, Value
from ..ir.interpreter import evaluate_node
from .capture import CapturedGraph
from .execute import NodeRunner, NodeUnsupported
from .measure import ILL_CONDITIONED_ULP, carried_error, dtype_of, local_error, merge_carried, recorded_deviation
from .report import DiffReport, GraphInfo, NodeRow
from .result import DiffResult

AGAINST_ORACLE, AGAINST_EAGER = "oracle", "eager"


class _Reference:
    """The values the carried error is measured against, node by node."""

    def __init__(self, against: str, device: str):
        self.against = against
        self.runner = None if against in (AGAINST_ORACLE, AGAINST_EAGER) else NodeRunner(against, device)

    def run(self, node: Node, operands: Sequence[np.ndarray]) -> list[np.ndarray]:
        if self.runner is not None:
            try:
                return self.runner.run(node, operands)
            except Exception:  # noqa: BLE001 - a node the other backend cannot run: its spec value stands in
                return _spec(node, operands, oracle=False)
        return _spec(node, operands, oracle=self.against == AGAINST_ORACLE)


def _spec(node: Node, operands: Sequence[np.ndarray], *, oracle: bool) -> list[np.ndarray]:
    """The reference interpreter on one node (float64 when ``oracle``)."""
    return evaluate_node(node.op, list(operands), node.attrs, [v.type for v in node.inputs],
                         [v.type for v in node.outputs], oracle=oracle)


class _Keeper:
    """The operands of the ``keep`` worst-ranked rows; the rest are let go as the diff streams."""

    def __init__(self, keep: int):
        self.keep = keep
        self.entries: list[tuple[tuple, str, list, Node]] = []

    def offer(self, row: NodeRow, operands: list, node: Node) -> None:
        if self.keep <= 0:
            return
        if len(self.entries) >= self.keep and row.rank_key() >= self.entries[-1][0]:
            return
        self.entries.append((row.rank_key(), row.key, list(operands), node))  # references: nothing mutates them
        self.entries.sort(key=lambda e: e[0])
        del self.entries[self.keep:]


def _last_uses(graph: Graph) -> dict[Value, int]:
    last: dict[Value, int] = {}
    for k, node in enumerate(graph.nodes):
        for v in node.inputs:
            last[v] = k
    return last


def _verdict(local, carried, note: str, tainted: bool, deviation) -> tuple[str, str]:
    if local.ratio > 1 and not local.flush_to_zero:
        if deviation is not None:
            return "deviation", f"over the contract, within the deviation recorded ({deviation.max_error}): " \
                                f"{deviation.reason}"
        return "bug", f"{local.mismatches} element(s) over the contract ({local.bound})"
    if carried.ulp is not None and carried.ulp > ILL_CONDITIONED_ULP:
        if tainted:
            return "downstream", "within its contract; its operands carry the error of a node over its contract"
        return "ill-conditioned", "within its contract, as is every node upstream: the model amplifies rounding"
    return "ok", note


def _measure_graph(cg: CapturedGraph, runner: NodeRunner, reference: _Reference, declared: Declared,
                   keeper: _Keeper, outputs: dict, tainted_outputs: set, report: DiffReport) -> None:
    """Stream one graph; ``outputs[(graph, position)]`` holds results later graphs read,
    ``tainted_outputs`` those downstream of a guilty node."""
    graph = cg.graph
    env_b: dict[Value, np.ndarray] = {}
    env_r: dict[Value, np.ndarray] = {}
    for i, (v, a) in enumerate(zip(graph.inputs, cg.arrays)):
        b, r = outputs.get(cg.links.get(i), (a, a))
        env_b[v], env_r[v] = b, (r.astype(np.float64) if reference.against == AGAINST_ORACLE
                                 and v.type.dtype.is_float else r)
    last = _last_uses(graph)
    producer = {v: k for k, n in enumerate(graph.nodes) for v in n.outputs}
    position = {v: -1 - i for i, v in enumerate(graph.inputs)}
    is_output = {v for v in graph.outputs}
    tainted = {v for i, v in enumerate(graph.inputs) if cg.links.get(i) in tainted_outputs}
    for k, node in enumerate(graph.nodes):
        ops_b = [env_b[v] for v in node.inputs]
        verdict, note = None, ""
        try:
            got = runner.run(node, ops_b)
        except NodeUnsupported as exc:
            verdict, note, got = "unsupported", str(exc), _spec(node, ops_b, oracle=False)
        except Exception as exc:  # noqa: BLE001 - the backend's failure is a finding, not a crash
            verdict, note, got = "error", f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}", \
                _spec(node, ops_b, oracle=False)
        ref = reference.run(node, [env_r[v] for v in node.inputs])
        carried = merge_carried([carried_error(v.type.dtype, r, g) for v, r, g in zip(node.outputs, ref, got)])
        local = local_error(node, ops_b, got, declared) if verdict is None else None
        if local is not None:
            deviation = recorded_deviation(runner.backend, node, runner.device, local) if local.ratio > 1 else None
            verdict, note = _verdict(local, carried, note, any(v in tainted for v in node.inputs), deviation)
            if local.outside:
                note = "operands where the spec itself misses the bound: not held to it"
        row = NodeRow(cg.index, cg.kind, k, node.op, dtype_of(node).short, list(node.outputs[0].type.shape),
                      str(node.loc) if node.loc else "", None if local is None else local.ratio,
                      None if local is None else local.ulp, local.bound if local else "", carried.ulp, carried.rel,
                      carried.over_tolerance, verdict, note, local.mismatches if local else 0,
                      local.compared if local else 0, local.worst if local else {},
                      [producer.get(v, position.get(v, -1)) for v in node.inputs],
                      any(v in is_output for v in node.outputs))
        report.rows.append(row)
        report.activation_bytes += sum(np.asarray(g).nbytes for g in got)
        keeper.offer(row, ops_b, node)
        if verdict in ("bug", "error", "deviation") or any(v in tainted for v in node.inputs):
            tainted.update(node.outputs)
        env_b.update(zip(node.outputs, got))
        env_r.update(zip(node.outputs, ref))
        for v in (*node.inputs, *node.outputs):  # dead results go at once, operands after their last use
            if last.get(v, k) == k and v not in is_output:
                env_b.pop(v, None)
                env_r.pop(v, None)
    for pos, v in enumerate(graph.outputs):
        outputs[(cg.index, pos)] = (env_b[v], env_r[v])
        if v in tainted:
            tainted_outputs.add((cg.index, pos))


def diff_graphs(graphs: Sequence[CapturedGraph], *, backend="reference", device: str = "cpu",
                against: str = AGAINST_ORACLE, keep: int = 10, measure_memory: bool = False,
                runner: NodeRunner | None = None) -> DiffReport:
    """Diff already-captured graphs (:func:`.capture.capture_graphs`) on ``backend``.

    ``runner``: a :class:`~.execute.NodeRunner` to use instead of one for ``backend``
    (benchmarks plant a fault in one node through it)."""
    runner = runner or NodeRunner(backend, device)
    reference = _Reference(against, device)
    report = DiffResult(runner.name, device, against, [], keep=keep)
    report.graphs = [GraphInfo(g.index, g.kind, len(g.graph.nodes), len(g.graph.inputs)) for g in graphs]
    keeper, outputs, tainted = _Keeper(keep), {}, set()
    needed = {link for g in graphs for link in g.links.values()}
    started = time.perf_counter()
    if measure_memory:  # what the diff imports on first use would count as its memory
        import importlib

        for module in ("compare", "scales", "execute", "case"):
            importlib.import_module(f"parity.conformance.{module}")
    tracing = measure_memory and not tracemalloc.is_tracing()
    if tracing:
        tracemalloc.start()
    if measure_memory:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            for g in graphs:
                _measure_graph(g, runner, reference, Declared.of(runner.backend, device), keeper, outputs, tainted,
                               report)
                for key in [key for key in outputs if key not in needed]:
                    del outputs[key]
        if measure_memory:
            report.peak_bytes = tracemalloc.get_traced_memory()[1] - base
    finally:
        if tracing:
            tracemalloc.stop()
    report.seconds = time.perf_counter() - started
    report.compiles = runner.compiles
    for _, key, operands, node in keeper.entries:
        report.kept[key] = operands
        report.nodes[key] = node
    return report


def diff_graph(graph: Graph, arrays: Sequence[np.ndarray], **options) -> DiffReport:
    """Diff one IR graph fed ``arrays`` (options as :func:`diff_graphs`)."""
    return diff_graphs([CapturedGraph(0, "inference", graph, [np.asarray(a) for a in arrays])], **options)


__all__ = ["AGAINST_EAGER", "AGAINST_ORACLE", "diff_graph", "diff_graphs"]
