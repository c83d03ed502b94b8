"""Common-subexpression elimination: one node per (op, operands, attributes).

Two nodes merge when they apply the same op to the same Values with identical
attributes. Attributes are compared exactly: arrays by dtype, shape and bytes,
floats bit for bit (``-0.0`` and ``0.0`` differ, ``nan`` equals ``nan``). Random ops
(:attr:`Group.RANDOM`) never merge: two draws are two draws, even from one key.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from ..graph import Graph, Node
from ..opdef import Group
from .rewrite import Rewrite


def cse(graph: Graph) -> tuple[Graph, bool]:
    """Return ``(graph with duplicate nodes merged, changed)``; later duplicates use the first."""
    from ..ops import OP_TABLE

    rewrite = Rewrite(graph)
    seen: dict[tuple, Node] = {}
    changed = False
    for node in graph.nodes:
        opdef = OP_TABLE.get(node.op)
        if opdef is None or Group.RANDOM in opdef.groups:
            rewrite.copy(node)
            continue
        key = (node.op, tuple(rewrite.inputs_of(node)), attrs_key(node.attrs))
        first = seen.get(key)
        if first is None:
            seen[key] = rewrite.copy(node)
        else:
            rewrite.replace(node, first.outputs)
            changed = True
    return (rewrite.finish(), True) if changed else (graph, False)


def attrs_key(attrs: dict[str, Any]) -> tuple:
    """A hashable key equal for two attribute dicts exactly when they are identical."""
    return tuple((name, _value_key(value)) for name, value in attrs.items())


def _value_key(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, float):
        return ("float", struct.pack("<d", value))
    if isinstance(value, tuple):
        return ("tuple",) + tuple(_value_key(v) for v in value)
    if isinstance(value, Graph):  # a loop's body: the same computation, the same key
        return ("graph", value.content_hash())
    return (type(value).__name__, value)
