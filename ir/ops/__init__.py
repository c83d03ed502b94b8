"""The op table: every op parity knows, collected explicitly from one module per family.

Adding an op means adding it to its family's ``OPS`` tuple; nothing else registers ops.

Example::

    >>> from parity.ir.ops import OP_TABLE, primitives, composites
    >>> "dot_general" in OP_TABLE, len(primitives()) > 0, len(composites()) > 0
    (True, True, True)
"""

from __future__ import annotations

from ..opdef import Kind, OpDef
from . import (
    activations,
    attention,
    binary,
    contraction,
    conversion,
    creation,
    indexing,
    losses,
    masking,
    nn,
    normalization,
    pooling,
    random,
    reduction,
    scan,
    selection,
    shape,
    sharding,
    sorting,
    statistics,
    unary,
    window,
)

FAMILIES = (
    unary,
    binary,
    selection,
    conversion,
    creation,
    shape,
    indexing,
    reduction,
    scan,
    sorting,
    contraction,
    window,
    random,
    activations,
    statistics,
    normalization,
    nn,
    attention,
    pooling,
    losses,
    masking,
    sharding,
)


def _collect() -> dict[str, OpDef]:
    table: dict[str, OpDef] = {}
    for family in FAMILIES:
        for opdef in family.OPS:
            if opdef.name in table:
                raise ValueError(f"op {opdef.name} is defined twice ({family.__name__})")
            table[opdef.name] = opdef
    return table


OP_TABLE: dict[str, OpDef] = _collect()


def primitives() -> list[OpDef]:
    return [op for op in OP_TABLE.values() if op.kind is Kind.PRIMITIVE]


def composites() -> list[OpDef]:
    return [op for op in OP_TABLE.values() if op.kind is Kind.COMPOSITE]
