"""Run one IR node at a time on a backend: the backend's own value of every node.

A node is cut out as a single-node graph (:func:`parity.conformance.local.single_node_graph`),
lowered as the backend receives graphs (composites it does not claim expanded), compiled
once per distinct lowered graph (content hash) and run on the operands the backend itself
produced upstream. Memory stays bounded: one node's operands and results at a time.

:class:`NodeRunner` is the seam a test or benchmark uses to plant a fault in one node:
``fault_at={node_key: Backend}`` runs that one node on another backend object (e.g. a
:class:`parity.conformance.mutants.Planted` one) and every other node on the real one.

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, f32
    >>> b = GraphBuilder(); x = b.input(f32[2]); g = b.build([b.exp(x)])
    >>> runner = NodeRunner("reference")
    >>> runner.run(g.nodes[0], [np.zeros(2, np.float32)])[0].tolist()
    [1.0, 1.0]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..backends.registry import get_backend
from ..ir.graph import Graph, Node


class NodeUnsupported(Exception):
    """The backend claims no way to run this node (the message says which op and dtype)."""


def as_host_array(output: Any) -> np.ndarray:
    """A backend result as a host NumPy array (torch tensors too; bfloat16 as ml_dtypes),
    as the conformance runner reads results."""
    from ..conformance.execute import as_array

    return as_array(output)


def lower_node_graph(backend, graph: Graph) -> Graph:
    """``graph`` as ``backend`` receives it (its unclaimed composites expanded); raises
    :class:`NodeUnsupported` naming the first node it cannot run."""
    from ..conformance.execute import NotClaimed, lower_for

    try:
        lowered, _ = lower_for(backend, graph)
    except NotClaimed as exc:
        raise NodeUnsupported(str(exc)) from None
    return lowered


class NodeRunner:
    """Runs single nodes on ``backend`` (a name or a Backend object) and ``device``.

    ``fault_at``: node → backend object to run that node on instead (keyed by the
    :class:`~parity.ir.Node` object itself, so one node of several identical ones).
    ``compiles`` counts backend compilations (distinct lowered graphs)."""

    def __init__(self, backend, device: str = "cpu", fault_at: Mapping[Node, Any] | None = None):
        self.backend = get_backend(backend) if isinstance(backend, str) else backend
        self.device = device
        self.fault_at = dict(fault_at or {})
        self._cache: dict[tuple[int, str], tuple[Graph, Any]] = {}
        self.compiles = 0

    def with_fault(self, node: Node, backend) -> NodeRunner:
        """A runner that runs ``node`` on ``backend`` and everything else as this one does,
        sharing this one's compiled executables (a benchmark plants one fault per case)."""
        derived = NodeRunner(self.backend, self.device, {**self.fault_at, node: backend})
        derived._cache = self._cache
        return derived

    @property
    def name(self) -> str:
        return self.backend.name

    def executable(self, node: Node, backend=None) -> tuple[Graph, Any]:
        """(the node's lowered single-node graph, its compiled executable)."""
        from ..conformance.local import single_node_graph

        backend = backend or self.backend
        sub = single_node_graph(node)
        key = (id(backend), sub.content_hash())
        found = self._cache.get(key)
        if found is None:
            lowered = lower_node_graph(backend, sub)
            found = (lowered, backend.compile(lowered, self.device))
            self._cache[key] = found
            self.compiles += 1
        return found

    def run(self, node: Node, operands: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The node's results on the backend, fed ``operands``."""
        backend = self.fault_at.get(node)
        _, run = self.executable(node, backend)
        return [as_host_array(o) for o in run(*operands)]


__all__ = ["NodeRunner", "NodeUnsupported", "as_host_array", "lower_node_graph"]
