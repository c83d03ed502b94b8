"""The verifier: checks every invariant a well-formed graph keeps.

Passes, frontends and tests call :func:`verify` after building or rewriting a graph.
A failure raises :class:`VerifyError` whose message says what is wrong and shows the
offending line of the printed graph in context, marked with ``>>``.

Example::

    >>> from parity.ir import GraphBuilder, Graph, f32, verify
    >>> b = GraphBuilder("f")
    >>> x = b.input(f32[2])
    >>> y = b.exp(x)
    >>> verify(b.build([y]))
    >>> try:
    ...     verify(Graph("broken", [x], [], [y]))  # y's node is missing
    ... except Exception as exc:
    ...     print(str(exc).splitlines()[0])
    @broken: output 0 (<Value f32[2] from exp>) is not defined in this graph: its producer (exp) is not one of the graph's nodes
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .errors import TypeRuleError, VerifyError
from .graph import Graph, Node, Value
from .opdef import AttrKind
from .printer import graph_lines
from .sharding import GraphSharding, spec_problem

__all__ = ["verify"]

CONTEXT_LINES = 3  # printed lines shown on each side of the offending one


def verify(graph: Graph) -> None:
    """Raise :class:`VerifyError` unless ``graph`` is well formed.

    Checks: inputs are distinct graph inputs (no producer); nodes appear once, in an
    order where every operand is defined before it is used; each value is defined
    once and belongs to this graph (not to another graph's nodes); ops exist; operand
    counts fit; attributes are normalized (what ``OpDef.normalize_attrs`` returns);
    result types equal what the op's type rule infers; graph outputs are defined. For
    sharding (docs/sharding.md): one spec (or none) per input and output, and every spec
    — of the header or of a ``sharding_constraint`` — names only axes of the graph's mesh,
    uses each axis once, and splits each dimension into equal parts.
    """
    _Verifier(graph).run()


class _Verifier:
    def __init__(self, graph: Graph):
        self.graph = graph
        self.position = {id(node): i for i, node in enumerate(graph.nodes)}
        self.defined: set[int] = set()  # ids of values defined so far

    def fail(self, line: int, what: str) -> VerifyError:
        """An error for listing line ``line`` (0 header, i + 1 for node i, then return)."""
        return VerifyError(f"@{self.graph.name}: {what}\n{self.context(line)}")

    def context(self, line: int) -> str:
        try:
            lines = graph_lines(self.graph, tolerant=True)
        except Exception as exc:  # a graph too broken to print still gets its message
            return f"(the graph cannot be printed: {exc!r})"
        lo, hi = max(0, line - CONTEXT_LINES), min(len(lines), line + CONTEXT_LINES + 1)
        lo = 0 if lo == 1 else lo  # "..." in place of a single line hides nothing worth hiding
        hi = len(lines) if hi == len(lines) - 1 else hi
        shown = [(">> " if k == line else "   ") + lines[k] for k in range(lo, hi)]
        if lo > 0:
            shown.insert(0, "   ...")
        if hi < len(lines):
            shown.append("   ...")
        return "\n".join(shown)

    def run(self) -> None:
        graph = self.graph
        for k, value in enumerate(graph.inputs):
            if not isinstance(value, Value):
                raise self.fail(0, f"input {k} is a {type(value).__name__}, not a Value")
            if value.producer is not None:
                raise self.fail(0, f"input {k} ({value!r}) is the result of a node, not a fresh graph input")
            if id(value) in self.defined:
                raise self.fail(0, f"input {k} ({value!r}) is listed twice among the graph inputs")
            self.defined.add(id(value))
        for i, node in enumerate(graph.nodes):
            self.check_node(i, node)
        end = len(graph.nodes) + 1
        for k, value in enumerate(graph.outputs):
            problem = self.undefined(value)
            if problem:
                raise self.fail(end, f"output {k} ({value!r}) is not defined in this graph: {problem}")
        self.check_sharding()

    def check_sharding(self) -> None:
        graph, sharding = self.graph, self.graph.sharding
        if sharding is None:
            return
        if not isinstance(sharding, GraphSharding):
            raise self.fail(0, f"the graph's sharding is a {type(sharding).__name__}, not a GraphSharding")
        for what, values, specs in (("input", graph.inputs, sharding.inputs),
                                    ("output", graph.outputs, sharding.outputs)):
            if len(specs) != len(values):
                raise self.fail(0, f"the sharding has {len(specs)} {what} spec(s) for {len(values)} {what}(s); "
                                   f"give one per {what} (None: unspecified)")
            for k, (value, spec) in enumerate(zip(values, specs)):
                problem = spec is not None and spec_problem(spec, value.type, sharding.mesh)
                if problem:
                    raise self.fail(0, f"{what} {k}: {problem}")

    def undefined(self, value: Any) -> str:
        """Why ``value`` may not be used at this point, or '' when it may."""
        if not isinstance(value, Value):
            return f"it is a {type(value).__name__}, not a Value"
        if id(value) in self.defined:
            return ""
        producer = value.producer
        if producer is None:
            return "it is not one of this graph's inputs (a Value from another graph?)"
        j = self.position.get(id(producer))
        if j is None:
            return f"its producer ({producer.op}) is not one of the graph's nodes"
        return f"its producer is node {j} ({producer.op}), which comes later; nodes must be in topological order"

    def check_node(self, i: int, node: Any) -> None:
        from .ops import OP_TABLE

        line = i + 1
        if not isinstance(node, Node):
            raise self.fail(line, f"node {i} is a {type(node).__name__}, not a Node")
        if self.position[id(node)] != i:
            raise self.fail(line, f"node {i} ({node.op}) appears more than once in the node list")
        where = f"node {i} ({node.op})" + (f" at {node.loc}" if node.loc else "")
        opdef = OP_TABLE.get(node.op)
        if opdef is None:
            raise self.fail(line, f"{where}: no op named {node.op!r} in the op table")
        for k, value in enumerate(node.inputs):
            problem = self.undefined(value)
            if problem:
                raise self.fail(line, f"{where}: operand {k} is not defined before this node: {problem}")
        try:
            opdef.check_operand_count(len(node.inputs))
        except TypeRuleError as exc:
            raise self.fail(line, f"{where}: {exc}") from None
        self.check_attrs(line, where, opdef, node.attrs)
        try:
            inferred = opdef.result_types([v.type for v in node.inputs], node.attrs)
        except TypeRuleError as exc:
            raise self.fail(line, f"{where}: the type rule rejects this node: {exc}") from None
        declared = tuple(getattr(v, "type", v) for v in node.outputs)
        if declared != tuple(inferred):
            shown = ", ".join(str(t) for t in declared)
            raise self.fail(line, f"{where}: result types ({shown}) differ from what the type rule infers "
                                  f"({', '.join(str(t) for t in inferred)})")
        for spec in opdef.attrs:
            if spec.kind is AttrKind.SPEC:
                self.check_spec_attr(line, where, node, node.attrs[spec.name])
            if spec.kind is AttrKind.GRAPH:
                try:
                    verify(node.attrs[spec.name])
                except VerifyError as exc:  # the nested graph's own message, under this node's
                    raise self.fail(line, f"{where}: its {spec.name} graph is broken: {exc}") from None
        for k, value in enumerate(node.outputs):
            if value.producer is not node or value.index != k:
                raise self.fail(line, f"{where}: result {k} ({value!r}) does not point back to this node "
                                      f"as result {k} (a Value shared with another node or graph?)")
            if id(value) in self.defined:
                raise self.fail(line, f"{where}: result {k} is already defined earlier (values are defined once)")
            self.defined.add(id(value))

    def check_spec_attr(self, line: int, where: str, node: Node, spec) -> None:
        """A partition spec on a node shards its operand 0 over the graph's mesh."""
        mesh = self.graph.mesh
        if mesh is None:
            raise self.fail(line, f"{where}: the spec {spec} needs a device mesh, and the graph has none "
                                  f"(give the graph a GraphSharding, or parity.compile a mesh=)")
        problem = spec_problem(spec, node.inputs[0].type, mesh)
        if problem:
            raise self.fail(line, f"{where}: {problem}")

    def check_attrs(self, line: int, where: str, opdef, attrs: dict) -> None:
        for name, value in attrs.items():
            if isinstance(value, np.ndarray) and value.flags.writeable:
                raise self.fail(line, f"{where}: array attribute {name!r} is writeable; normalized arrays are "
                                      "read-only so a graph cannot change after it is hashed")
        try:
            normalized = opdef.normalize_attrs(attrs)
        except TypeRuleError as exc:
            raise self.fail(line, f"{where}: invalid attributes: {exc}") from None
        if list(normalized) != list(attrs):
            raise self.fail(line, f"{where}: attributes {list(attrs)} are not normalized; expected exactly "
                                  f"{list(normalized)} in that order (build nodes with GraphBuilder)")
        for name, value in attrs.items():
            if not _identical(value, normalized[name]):
                raise self.fail(line, f"{where}: attribute {name!r} = {value!r} is not normalized; "
                                      f"expected {normalized[name]!r}")


def _identical(a: Any, b: Any) -> bool:
    """Equal and of the same type, with floats compared bit for bit (-0.0 != 0.0, nan == nan)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_identical(x, y) for x, y in zip(a, b))
    return a == b
