"""Copying a graph node by node: the one mechanism every pass rewrites with.

Passes never mutate their input graph. They copy it into a fresh :class:`Rewrite`
(new input Values, new Nodes), dropping, merging or replacing nodes on the way, so
the old and the new graph never share a Value.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..builder import GraphBuilder
from ..graph import Graph, Node, Value


class Rewrite:
    """A graph under construction from an old one; ``self[old_value]`` is its new Value."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.builder = GraphBuilder(graph.name)
        self.builder.assumptions = list(graph.assumptions)  # what the sizes must satisfy stays with the graph
        self.map: dict[Value, Value] = {old: self.builder.input(old.type) for old in graph.inputs}

    def __getitem__(self, old: Value) -> Value:
        return self.map[old]

    def inputs_of(self, node: Node) -> list[Value]:
        return [self.map[v] for v in node.inputs]

    def copy(self, node: Node) -> Node:
        """Append a copy of ``node`` reading the new values; its results replace the old ones."""
        new = Node(node.op, self.inputs_of(node), node.attrs, [v.type for v in node.outputs], node.loc)
        self.builder.nodes.append(new)
        self.replace(node, new.outputs)
        return new

    def replace(self, node: Node, values: Sequence[Value]) -> None:
        """From now on the old node's results are ``values`` (new-graph Values)."""
        for old, new in zip(node.outputs, values, strict=True):
            self.map[old] = new

    def finish(self) -> Graph:
        # Passes keep the graph's inputs and outputs, so they keep its mesh and specs too.
        return self.builder.build([self.map[v] for v in self.graph.outputs]).with_sharding(self.graph.sharding)
