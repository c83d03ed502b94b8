"""What a rule sees of the node it implements: the one base every backend's context extends.

A rule — the reference implementation of a primitive, or a backend's lowering rule — is
called as ``rule(ctx, *operands)``. :class:`NodeContext` is what every such ``ctx``
holds: the node's normalized attributes and its operand and result types with symbolic
dims bound (:class:`~parity.ir.shapes.ShapeBindings`). Each backend subclasses it with
what its own rules need besides (an emitter, a run-time constant, ...);
:class:`ReferenceContext` is the reference interpreter's.

Example::

    >>> from parity.ir import f32
    >>> ctx = ReferenceContext({"axes": (1,)}, (f32[2, 3],), (f32[2],), oracle=True)
    >>> isinstance(ctx, NodeContext), str(ctx.out), ctx.oracle
    (True, 'f32[2]', True)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .types import TensorType


@dataclass(frozen=True)
class NodeContext:
    """A node as its rule sees it besides its operands: attributes and types, symbols bound."""

    attrs: Mapping[str, Any]
    in_types: tuple[TensorType, ...]
    out_types: tuple[TensorType, ...]

    @property
    def out(self) -> TensorType:
        """The first (for most ops the only) result type."""
        return self.out_types[0]


@dataclass(frozen=True)
class ReferenceContext(NodeContext):
    """What a reference implementation sees besides its operands.

    Float operands arrive as float64 arrays (the interpreter computes every float op in
    float64 and rounds once to the output dtype, or not at all in oracle mode, when
    ``oracle`` is true); integer and bool operands arrive in their own dtype.
    """

    oracle: bool = False
