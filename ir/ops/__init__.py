"""The op table: every op parity knows, collected explicitly from one module per family.

An op enters the table through one entry of its family module's ``OPS`` (the families
are :data:`FAMILIES`); nothing else registers ops. That entry is all the IR needs: the
builder, verifier, printer, parser, passes and the reference interpreter read everything
from it. It is not all parity needs: every built-in backend must lower a new primitive,
the frontend translates its Core ATen namesake, and docs/ir.md's catalogue names it.
docs/adding-an-op.md walks one op through every file, and tests/test_adding_an_op.py
names each piece a new op still lacks.

The queries below answer, from the table, the questions a hand-typed op-name list would:
the ops of a family, of a group, of an accuracy class, that accept a dtype, and the dtype
a node is keyed by. Each returns names in table order.

Example::

    >>> from parity.ir.ops import OP_TABLE, primitives, composites, ops_in_family, transcendental
    >>> "dot_general" in OP_TABLE, len(primitives()) > 0, len(composites()) > 0
    (True, True, True)
    >>> ops_in_family("selection"), transcendental()[:3]
    (('select', 'clamp'), ('exp', 'exp2', 'expm1'))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..dtypes import DType
from ..opdef import Accuracy, Group, Kind, OpDef
from . import (
    activations,
    attention,
    binary,
    complex_numbers,
    contraction,
    control,
    conversion,
    creation,
    fft,
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
    special,
    spectral,
    statistics,
    unary,
    window,
)

if TYPE_CHECKING:  # pragma: no cover
    from ..graph import Node

# family name -> its module; the table is collected from these, in this order.
FAMILIES = {
    "unary": unary,
    "binary": binary,
    "complex": complex_numbers,
    "selection": selection,
    "conversion": conversion,
    "creation": creation,
    "shape": shape,
    "indexing": indexing,
    "reduction": reduction,
    "scan": scan,
    "sorting": sorting,
    "contraction": contraction,
    "fft": fft,
    "spectral": spectral,
    "window": window,
    "random": random,
    "activations": activations,
    "special": special,
    "statistics": statistics,
    "normalization": normalization,
    "nn": nn,
    "attention": attention,
    "pooling": pooling,
    "losses": losses,
    "masking": masking,
    "sharding": sharding,
    "control": control,
}


def _collect() -> dict[str, OpDef]:
    table: dict[str, OpDef] = {}
    for family in FAMILIES.values():
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


def ops_in_family(family: str) -> tuple[str, ...]:
    """The ops the family module ``family`` defines (a key of :data:`FAMILIES`)."""
    if family not in FAMILIES:
        raise KeyError(f"no op family {family!r}; the families are {list(FAMILIES)}")
    return tuple(op.name for op in FAMILIES[family].OPS)


def ops_in_group(group: Group) -> tuple[str, ...]:
    """The ops whose ``groups`` hold ``group``."""
    return tuple(name for name, op in OP_TABLE.items() if group in op.groups)


def ops_with_accuracy(accuracy: Accuracy) -> tuple[str, ...]:
    """The ops of one accuracy class."""
    return tuple(name for name, op in OP_TABLE.items() if op.accuracy is accuracy)


def transcendental() -> tuple[str, ...]:
    """The transcendental ops (exp, log, sin, pow, erf, ...): accuracy class TRANSCENDENTAL."""
    return ops_with_accuracy(Accuracy.TRANSCENDENTAL)


def ops_accepting(dtype: DType, kind: Kind | None = None) -> tuple[str, ...]:
    """The ops (of ``kind``, if given) whose dtype (:meth:`OpDef.op_dtype`) may be ``dtype``."""
    return tuple(name for name, op in OP_TABLE.items() if dtype in op.dtypes and kind in (None, op.kind))


def node_dtype(node: Node) -> DType:
    """The dtype ``node`` is keyed by in claims, conformance and bounds: its operand
    ``dtype_operand``'s (select: on_true's, not the bool predicate's), or its first
    result's when it has no operands."""
    return OP_TABLE[node.op].op_dtype([v.type for v in node.inputs], [v.type for v in node.outputs])
