"""Decompose to a claimed set: expand every composite a backend does not claim.

``decompose(graph, claimed)`` replaces each composite node whose op ``claimed``
rejects by its decomposition (``OpDef.decompose``), recursively, until only
primitives and claimed composites remain. Every node it creates carries the source
location of the node it expands, so errors still name the user's line.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..builder import GraphBuilder
from ..errors import ParityError
from ..graph import Graph, Node, SourceLoc, Value
from ..opdef import Kind
from .rewrite import Rewrite

MAX_DEPTH = 32  # deeper nesting means a decomposition that (indirectly) uses itself


class DecompositionError(ParityError):
    """A composite's decomposition is broken (wrong result types, recursion, foreign values)."""


def decompose(graph: Graph, claimed: Callable[[str], bool]) -> tuple[Graph, bool]:
    """Return ``(graph with every unclaimed composite expanded, changed)``.

    ``claimed(op_name)`` says whether the target backend implements a composite
    natively; primitives are never expanded (they have no decomposition).

    Example::

        >>> from parity.ir.passes import decompose
        >>> from parity.ir import GraphBuilder, f32
        >>> b = GraphBuilder()
        >>> x = b.input(f32[2])
        >>> g, changed = decompose(b.build([b.exp(x)]), claimed=lambda op: False)
        >>> changed  # exp is a primitive
        False
    """
    expander = _Expander(graph, claimed)
    for node in graph.nodes:
        outputs = expander.expand(node, expander.rewrite.inputs_of(node), node.loc, ())
        expander.rewrite.replace(node, outputs)
    return (expander.rewrite.finish(), True) if expander.changed else (graph, False)


class _Expander:
    def __init__(self, graph: Graph, claimed: Callable[[str], bool]):
        self.rewrite = Rewrite(graph)
        self.claimed = claimed
        self.changed = False

    def expand(self, node: Node, inputs: Sequence[Value], loc: SourceLoc | None,
               chain: tuple[str, ...]) -> list[Value]:
        """Emit ``node`` on ``inputs`` (new-graph Values), expanded as needed; return its results."""
        from ..ops import OP_TABLE

        opdef = OP_TABLE[node.op]
        if opdef.kind is Kind.PRIMITIVE or self.claimed(node.op):
            new = Node(node.op, inputs, node.attrs, [v.type for v in node.outputs], loc)
            self.rewrite.builder.nodes.append(new)
            return list(new.outputs)
        chain = chain + (node.op,)
        if node.op in chain[:-1] or len(chain) > MAX_DEPTH:
            raise DecompositionError(f"decomposition of {chain[0]} recurses: {' -> '.join(chain)}"
                                     + (f" (at {loc})" if loc else ""))
        self.changed = True
        sub = GraphBuilder(node.op)
        params = [sub.input(v.type) for v in inputs]
        with sub.location(loc):
            results = opdef.decompose(sub, node.attrs, *params)
        results = list(results) if isinstance(results, tuple) else [results]
        got = [getattr(v, "type", v) for v in results]
        want = [v.type for v in node.outputs]
        if got != want:
            raise DecompositionError(f"decomposition of {node.op} returns ({', '.join(map(str, got))}), "
                                     f"its type rule says ({', '.join(map(str, want))})")
        env: dict[Value, Value] = dict(zip(params, inputs))
        for sub_node in sub.nodes:
            try:
                operands = [env[v] for v in sub_node.inputs]
            except KeyError:
                raise DecompositionError(f"decomposition of {node.op} reads a value it did not build "
                                         f"(in its {sub_node.op} node); build everything on the given builder"
                                         ) from None
            env.update(zip(sub_node.outputs, self.expand(sub_node, operands, loc, chain)))
        try:
            return [env[v] for v in results]
        except KeyError:
            raise DecompositionError(f"decomposition of {node.op} returns a value it did not build") from None
