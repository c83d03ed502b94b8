"""Constant folding through the reference interpreter (the spec computes the value).

A node whose operands are all ``constant`` results is evaluated with
:func:`evaluate_node` in native mode (floats rounded once to the result dtype, exactly
as the interpreter would at run time) and replaced by one ``constant`` per result,
carrying the node's source location. Nodes without operands (``iota``) are left
alone: backends generate them cheaper than they load a literal. Results larger than
``max_elements`` are never materialized; the folded-away constants are left for
:func:`dce`.
"""

from __future__ import annotations

import numpy as np

from ..graph import Graph, Value
from ..interpreter import evaluate_node
from .rewrite import Rewrite

FOLD_MAX_ELEMENTS = 4096


def fold_constants(graph: Graph, *, max_elements: int = FOLD_MAX_ELEMENTS) -> tuple[Graph, bool]:
    """Return ``(graph with constant subexpressions folded, changed)``."""
    rewrite = Rewrite(graph)
    known: dict[Value, np.ndarray] = {}  # new-graph Values produced by constants
    changed = False
    for node in graph.nodes:
        if node.op == "constant":
            known[rewrite.copy(node).outputs[0]] = node.attrs["value"]
            continue
        operands = rewrite.inputs_of(node)
        small = all(v.type.is_static and v.type.numel <= max_elements for v in node.outputs)
        if not operands or not small or not all(v in known for v in operands):
            rewrite.copy(node)
            continue
        results = evaluate_node(node.op, [known[v] for v in operands], node.attrs,
                                [v.type for v in operands], [v.type for v in node.outputs])
        constants = []
        for result in results:
            with rewrite.builder.location(node.loc):
                value = rewrite.builder.constant(np.array(result, copy=True))
            known[value] = value.producer.attrs["value"]
            constants.append(value)
        rewrite.replace(node, constants)
        changed = True
    return (rewrite.finish(), True) if changed else (graph, False)

