"""Decompose to a claimed set: expand every composite a backend does not claim.

``decompose(graph, claimed)`` replaces each composite node whose op ``claimed``
rejects by its decomposition (``OpDef.decompose``), recursively, until only
primitives and claimed composites remain. Every node it creates carries the source
location of the node it expands, so errors still name the user's line.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..expand import DecompositionError, decomposition
from ..graph import Graph, Node, SourceLoc, Value
from ..opdef import Kind
from .rewrite import Rewrite

MAX_DEPTH = 32  # deeper nesting means a decomposition that (indirectly) uses itself

__all__ = ["MAX_DEPTH", "DecompositionError", "decompose"]


def decompose(graph: Graph, claimed: Callable[[str], bool],
              declined: Callable[[Node], bool] | None = None) -> tuple[Graph, bool]:
    """Return ``(graph with every unclaimed composite expanded, changed)``.

    ``claimed(op_name)`` says whether the target backend implements a composite
    natively; primitives are never expanded (they have no decomposition).
    ``declined(node)``, when given, turns down a claimed composite node all the same (a
    claim's predicate over its attributes and types): that node is expanded.

    Example::

        >>> from parity.ir.passes import decompose
        >>> from parity.ir import GraphBuilder, f32
        >>> b = GraphBuilder()
        >>> x = b.input(f32[2])
        >>> g, changed = decompose(b.build([b.exp(x)]), claimed=lambda op: False)
        >>> changed  # exp is a primitive
        False
    """
    expander = _Expander(graph, claimed, declined)
    for node in graph.nodes:
        outputs = expander.expand(node, expander.rewrite.inputs_of(node), node.loc, ())
        expander.rewrite.replace(node, outputs)
    return (expander.rewrite.finish(), True) if expander.changed else (graph, False)


class _Expander:
    def __init__(self, graph: Graph, claimed: Callable[[str], bool], declined: Callable[[Node], bool] | None):
        self.rewrite = Rewrite(graph)
        self.claimed = claimed
        self.declined = declined
        self.changed = False

    def nested_expanded(self, node: Node) -> dict:
        """``node``'s attributes, with each graph-valued one (a claimed loop's body) decomposed
        for the same backend: a composite inside a rolled loop is expanded as one outside is."""
        attrs = node.attrs
        for name, value in node.attrs.items():
            if isinstance(value, Graph):
                body, changed = decompose(value, self.claimed, self.declined)
                if changed:
                    attrs = {**attrs, name: body}
                    self.changed = True
        return attrs

    def expand(self, node: Node, inputs: Sequence[Value], loc: SourceLoc | None,
               chain: tuple[str, ...]) -> list[Value]:
        """Emit ``node`` on ``inputs`` (new-graph Values), expanded as needed; return its results."""
        from ..ops import OP_TABLE

        opdef = OP_TABLE[node.op]
        if opdef.kind is Kind.PRIMITIVE or (self.claimed(node.op) and not (self.declined and self.declined(node))):
            new = Node(node.op, inputs, self.nested_expanded(node), [v.type for v in node.outputs], loc)
            self.rewrite.builder.nodes.append(new)
            return list(new.outputs)
        chain = chain + (node.op,)
        if node.op in chain[:-1] or len(chain) > MAX_DEPTH:
            raise DecompositionError(f"decomposition of {chain[0]} recurses: {' -> '.join(chain)}"
                                     + (f" (at {loc})" if loc else ""))
        self.changed = True
        sub = decomposition(node.op, node.attrs, [v.type for v in inputs],
                            out_types=[v.type for v in node.outputs], loc=loc)
        env: dict[Value, Value] = dict(zip(sub.inputs, inputs))
        for sub_node in sub.nodes:
            operands = [env[v] for v in sub_node.inputs]
            env.update(zip(sub_node.outputs, self.expand(sub_node, operands, loc, chain)))
        return [env[v] for v in sub.outputs]
