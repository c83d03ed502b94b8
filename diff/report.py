"""What ``parity.diff`` returns: one row per node, ranked, with a verdict each.

Verdicts (:data:`VERDICTS`): ``bug`` (local error over the op's contract: the backend is
wrong on this node), ``error`` (the backend raised on it), ``deviation`` (over the
contract, within a deviation the backend records for the op with its measured ULPs: known,
ranked after every bug), ``unsupported``,
``downstream`` (within its contract, but more than :data:`~.measure.ILL_CONDITIONED_ULP`
ULPs off end to end because a guilty node feeds it), ``ill-conditioned`` (as far off, with
no guilty node upstream: the model amplifies rounding), and ``ok``. Rows are ranked by local error relative to the contract (errors and bugs
first); the rank is the answer to "which node makes the backend's answer differ".

Example::

    >>> row = NodeRow(0, "forward", 3, "exp", "f32", [4], "model.py:12 in forward", 2.5, 10.0, "≤ 4 ULP",
    ...               1.0, 1e-7, False, "bug")
    >>> DiffReport("reference", "cpu", "oracle", [row]).ranked()[0].op
    'exp'
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

VERDICTS = ("error", "bug", "deviation", "downstream", "ill-conditioned", "unsupported", "ok")
SCHEMA_VERSION = 1


@dataclass
class NodeRow:
    """One node of one captured graph, measured (see :mod:`.measure` for the figures)."""

    graph: int  # index of the captured graph
    kind: str  # forward | backward | inference
    node: int  # index of the node in its graph
    op: str
    dtype: str
    shape: list[int]
    loc: str  # the user's source line ("" when unknown)
    local_ratio: float | None  # worst error / contract bound (None: not measured)
    local_ulp: float | None
    bound: str
    carried_ulp: float | None
    carried_rel: float | None
    over_tolerance: bool  # the end-to-end baseline flags this tensor
    verdict: str
    message: str = ""
    mismatches: int = 0  # elements over the contract bound
    compared: int = 0
    worst: dict = field(default_factory=dict)  # the worst element (index, expected, got, ...)
    inputs: list[int] = field(default_factory=list)  # producer node indices in this graph (-1-k: graph input k)
    is_output: bool = False

    @property
    def key(self) -> str:
        """``g{graph}.n{node}``: names the row in JSON, repros and the HTML."""
        return f"g{self.graph}.n{self.node}"

    def rank_key(self) -> tuple:
        """Sort key: raised first, then bugs, then by local ratio, then the share of elements
        over the bound, then the earliest node (a fault's root precedes what it feeds)."""
        order = {"error": 0, "bug": 1}.get(self.verdict, 2)
        ratio = -1.0 if self.local_ratio is None else self.local_ratio
        share = self.mismatches / self.compared if self.compared else 0.0
        return (order, -ratio, -share, self.graph, self.node)

    def to_json(self) -> dict:
        out = asdict(self)
        out["key"] = self.key
        for name in ("local_ratio", "local_ulp", "carried_ulp", "carried_rel"):
            out[name] = _json_number(out[name])
        out["worst"] = {k: _json_number(v) if isinstance(v, float) else v for k, v in self.worst.items()}
        return out


def _json_number(v):
    if v is None or not isinstance(v, float) or math.isfinite(v):
        return v
    return "inf" if v > 0 else "-inf" if v < 0 else "nan"


@dataclass
class GraphInfo:
    """A captured graph: its index, kind, node count and text (for the repro and HTML)."""

    index: int
    kind: str
    nodes: int
    inputs: int


@dataclass
class DiffReport:
    """The data of what :func:`parity.diff` returns; ``rows`` in graph order, :meth:`ranked` by guilt.

    ``kept``: row key → the node's backend operands (only the :attr:`keep` worst nodes'
    tensors are kept, the rest were freed as the diff streamed); ``nodes``: row key →
    the IR node (for repros). ``peak_bytes``/``activation_bytes``: traced peak of the
    streaming diff and the size of every node result (the activations a mark-all
    comparison would hold), when memory was measured."""

    backend: str
    device: str
    against: str
    rows: list[NodeRow]
    graphs: list[GraphInfo] = field(default_factory=list)
    kept: dict[str, list] = field(default_factory=dict)
    nodes: dict[str, Any] = field(default_factory=dict)
    peak_bytes: int | None = None
    activation_bytes: int = 0
    seconds: float = 0.0
    compiles: int = 0
    keep: int = 10

    def ranked(self) -> list[NodeRow]:
        """Rows, guiltiest first (:meth:`NodeRow.rank_key`)."""
        return sorted(self.rows, key=NodeRow.rank_key)

    def guilty(self) -> list[NodeRow]:
        """Ranked rows the backend is to blame for (bug or error)."""
        return [r for r in self.ranked() if r.verdict in ("bug", "error")]

    def row(self, key: str) -> NodeRow:
        return next(r for r in self.rows if r.key == key)

    def first_over_tolerance(self) -> NodeRow | None:
        """The end-to-end baseline's answer: the first node (graph order) whose tensor is
        over tolerance against the end-to-end reference, error carried forward included."""
        return next((r for r in self.rows if r.over_tolerance), None)

    @property
    def exit_code(self) -> int:
        """1 when some node is over its contract or raised, else 0."""
        return 1 if self.guilty() else 0

    def counts(self) -> dict[str, int]:
        out = {v: 0 for v in VERDICTS}
        for r in self.rows:
            out[r.verdict] += 1
        return out

    def worst_path(self, graph: int | None = None) -> list[NodeRow]:
        """From the top-ranked node of ``graph`` (default: the top-ranked node's graph)
        forward to an output: each step to the consumer with the largest carried error."""
        ranked = self.ranked()
        if not ranked:
            return []
        start = ranked[0] if graph is None else next((r for r in ranked if r.graph == graph), None)
        if start is None:
            return []
        same = {r.node: r for r in self.rows if r.graph == start.graph}
        consumers: dict[int, list[int]] = {}
        for r in same.values():
            for i in r.inputs:
                consumers.setdefault(i, []).append(r.node)
        path, here = [start], start
        while consumers.get(here.node):
            here = max((same[c] for c in consumers[here.node]), key=lambda r: (r.carried_ulp or 0.0, -r.node))
            path.append(here)
        return path

    def to_json(self) -> dict:
        """The report as JSON-ready data (schema: docs/diff.md)."""
        baseline = self.first_over_tolerance()
        return {
            "schema": SCHEMA_VERSION,
            "backend": self.backend,
            "device": self.device,
            "against": self.against,
            "graphs": [asdict(g) for g in self.graphs],
            "counts": self.counts(),
            "ranking": [r.key for r in self.ranked()],
            "guilty": [r.key for r in self.guilty()],
            "first_over_tolerance": baseline.key if baseline else None,
            "worst_path": [r.key for r in self.worst_path()],
            "rows": [r.to_json() for r in self.rows],
            "peak_bytes": self.peak_bytes,
            "activation_bytes": self.activation_bytes,
            "seconds": self.seconds,
            "compiles": self.compiles,
        }


__all__ = ["DiffReport", "GraphInfo", "NodeRow", "SCHEMA_VERSION", "VERDICTS"]
