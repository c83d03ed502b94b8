"""Graphs in typed SSA form: values, nodes and source locations.

A :class:`Graph` has typed inputs, a list of nodes in topological order and outputs.
Every node carries the :class:`SourceLoc` of the user code that produced it. Graphs
print as text (``str(graph)``) that :func:`parity.ir.parse` reads back to an equal
graph, and have a stable content hash (locations excluded) used as the cache key.

Example::

    >>> from parity.ir import GraphBuilder, f32
    >>> b = GraphBuilder("double")
    >>> x = b.input(f32[3])
    >>> g = b.build([b.add(x, x)])
    >>> print(g)
    graph @double(%0: f32[3]) -> (f32[3]) {
      %1: f32[3] = add(%0, %0)
      return %1
    }
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .constraints import Constraint
from .printer import print_graph
from .sharding import GraphSharding
from .types import TensorType


@dataclass(frozen=True, slots=True)
class SourceLoc:
    """Where in the user's code a node came from."""

    file: str
    line: int
    function: str = ""

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}"
        return f"{where} in {self.function}" if self.function else where


class Value:
    """One SSA value: a graph input or one result of a node. Compared by identity."""

    __slots__ = ("type", "producer", "index")

    def __init__(self, type: TensorType, producer: Node | None = None, index: int = 0):
        self.type = type
        self.producer = producer
        self.index = index

    @property
    def dtype(self):
        return self.type.dtype

    @property
    def shape(self):
        return self.type.shape

    @property
    def rank(self) -> int:
        return self.type.rank

    def __repr__(self) -> str:
        origin = self.producer.op if self.producer is not None else "input"
        return f"<Value {self.type} from {origin}>"


class Node:
    """One op application. ``attrs`` are normalized by the op's :class:`OpDef`."""

    __slots__ = ("op", "inputs", "attrs", "outputs", "loc")

    def __init__(
        self,
        op: str,
        inputs: Sequence[Value],
        attrs: Mapping[str, Any],
        output_types: Sequence[TensorType],
        loc: SourceLoc | None = None,
    ):
        self.op = op
        self.inputs = tuple(inputs)
        self.attrs = dict(attrs)
        self.outputs = tuple(Value(t, self, i) for i, t in enumerate(output_types))
        self.loc = loc

    def __repr__(self) -> str:
        return f"<Node {self.op} -> {', '.join(str(v.type) for v in self.outputs)}>"


class Graph:
    """A function in SSA form: ``inputs`` → ``nodes`` (topologically ordered) → ``outputs``.

    ``sharding`` (optional) is the device mesh and the partition spec of each input and
    output (docs/sharding.md); it is part of the text and of the content hash.
    ``assumptions`` are facts about the symbolic sizes that the graph's producer relied on
    (ir/constraints.py: ``divisible(S, 8)``); checked when sizes are bound, printed as
    ``assume`` lines, part of the content hash.
    """

    def __init__(self, name: str, inputs: Sequence[Value], nodes: Sequence[Node], outputs: Sequence[Value],
                 *, sharding: GraphSharding | None = None, assumptions: Sequence[Constraint] = ()):
        self.name = name
        self.inputs = list(inputs)
        self.nodes = list(nodes)
        self.outputs = list(outputs)
        self.sharding = sharding
        self.assumptions = tuple(assumptions)

    @property
    def mesh(self):
        """The device mesh of a sharded graph, or None."""
        return self.sharding.mesh if self.sharding is not None else None

    def with_sharding(self, sharding: GraphSharding | None) -> Graph:
        """This graph (same values and nodes) with ``sharding``, padded to its inputs and outputs."""
        if sharding is None and self.sharding is None:
            return self
        if sharding is not None:
            sharding = sharding.padded(len(self.inputs), len(self.outputs))
        return Graph(self.name, self.inputs, self.nodes, self.outputs, sharding=sharding,
                     assumptions=self.assumptions)

    @property
    def input_types(self) -> list[TensorType]:
        return [v.type for v in self.inputs]

    @property
    def output_types(self) -> list[TensorType]:
        return [v.type for v in self.outputs]

    def values(self) -> Iterator[Value]:
        yield from self.inputs
        for node in self.nodes:
            yield from node.outputs

    def users(self) -> dict[Value, list[Node]]:
        """Map each value to the nodes that read it (in graph order)."""
        table: dict[Value, list[Node]] = {v: [] for v in self.values()}
        for node in self.nodes:
            for value in node.inputs:
                table.setdefault(value, []).append(node)
        return table

    def op_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for node in self.nodes:
            counts[node.op] = counts.get(node.op, 0) + 1
        return counts

    def to_text(self, *, locations: bool = True) -> str:
        return print_graph(self, locations=locations)

    def __str__(self) -> str:
        return self.to_text()

    def __repr__(self) -> str:
        return f"<Graph @{self.name}: {len(self.inputs)} inputs, {len(self.nodes)} nodes, {len(self.outputs)} outputs>"

    def __eq__(self, other: object) -> bool:
        # The printed form is canonical (values are numbered in order, attributes are
        # printed exactly), so two graphs are equal when they print the same.
        if not isinstance(other, Graph):
            return NotImplemented
        return self.to_text() == other.to_text()

    def __hash__(self) -> int:
        return hash(self.to_text())

    def content_hash(self) -> str:
        """Stable hex digest of the computation (name and source locations excluded)."""
        # Printed under a fixed name so that renaming a graph does not change its key.
        renamed = Graph("_", self.inputs, self.nodes, self.outputs, sharding=self.sharding,
                        assumptions=self.assumptions)
        return hashlib.sha256(print_graph(renamed, locations=False).encode()).hexdigest()
