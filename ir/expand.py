"""A composite's decomposition as a graph of its own: the one way to expand a composite.

:func:`decomposition` builds ``OpDef.decompose`` on fresh inputs of the operand types
and checks what it built: its result types must be the ones the type rule gives (or
the node declares), and it may read and return only values it built itself. Whoever
runs or inlines a composite (the interpreter, the decompose pass, a backend that has no
native rule for it) starts from this graph: run it on the operands, or copy its nodes
in place with its inputs mapped to the node's operands.

Example::

    >>> from parity.ir import f32
    >>> g = decomposition("relu", {}, [f32[3]])
    >>> g.name, g.input_types, g.output_types
    ('relu', [TensorType(f32[3])], [TensorType(f32[3])])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .builder import GraphBuilder
from .errors import ParityError
from .graph import Graph, SourceLoc
from .opdef import Kind
from .types import TensorType


class DecompositionError(ParityError):
    """A composite's decomposition is broken (wrong result types, recursion, foreign values)."""


def decomposition(op: str, attrs: Mapping[str, Any], in_types: Sequence[TensorType], *,
                  out_types: Sequence[TensorType] | None = None, loc: SourceLoc | None = None) -> Graph:
    """The decomposition of composite ``op`` on operands of ``in_types``, as a graph named ``op``.

    ``attrs`` are normalized (a node's ``attrs``). Its results must have ``out_types``
    (a node's declared result types) or, without them, the types the op's type rule
    gives for ``in_types``. Every node it builds carries ``loc``. Raises
    :class:`DecompositionError` when ``op`` is not a composite, when the result types
    differ, or when the decomposition reads or returns a value it did not build.
    """
    from .ops import OP_TABLE

    opdef = OP_TABLE[op]
    if opdef.kind is not Kind.COMPOSITE:
        raise DecompositionError(f"{op} is a {opdef.kind.value}, not a composite; it has no decomposition")
    b = GraphBuilder(op)
    params = [b.input(t) for t in in_types]
    with b.location(loc):
        results = opdef.decompose(b, attrs, *params)
    results = list(results) if isinstance(results, tuple) else [results]
    want = list(out_types) if out_types is not None else list(opdef.result_types(in_types, attrs))
    got = [getattr(v, "type", v) for v in results]
    if got != want:
        raise DecompositionError(f"decomposition of {op} returns ({', '.join(map(str, got))}), "
                                 f"its type rule says ({', '.join(map(str, want))})")
    built = set(params)
    for node in b.nodes:
        if any(v not in built for v in node.inputs):
            raise DecompositionError(f"decomposition of {op} reads a value it did not build "
                                     f"(in its {node.op} node); build everything on the given builder")
        built.update(node.outputs)
    if any(v not in built for v in results):
        raise DecompositionError(f"decomposition of {op} returns a value it did not build")
    return b.build(results)
