"""Dead-code elimination: drop nodes none of whose results reach a graph output.

The op table has no side-effecting ops, so any unused node can go. Graph inputs
are kept even when unused (they are the function's signature).
"""

from __future__ import annotations

from ..graph import Graph, Value
from .rewrite import Rewrite


def dce(graph: Graph) -> tuple[Graph, bool]:
    """Return ``(graph without dead nodes, changed)``; ``graph`` itself when nothing is dead."""
    live: set[Value] = set(graph.outputs)
    keep: set[int] = set()
    for i in range(len(graph.nodes) - 1, -1, -1):
        node = graph.nodes[i]
        if any(v in live for v in node.outputs):
            keep.add(i)
            live.update(node.inputs)
    if len(keep) == len(graph.nodes):
        return graph, False
    rewrite = Rewrite(graph)
    for i, node in enumerate(graph.nodes):
        if i in keep:
            rewrite.copy(node)
    return rewrite.finish(), True
