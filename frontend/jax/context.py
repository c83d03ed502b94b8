"""What a JAX translation rule gets: :class:`JaxContext` (the IR builder, the equation's
params and result types, and the few helpers every family needs).

A rule is ``rule(ctx, *operands) -> Value | list[Value]``, one result per jaxpr result.
It refuses a case it cannot translate with :func:`refuse`, which the user sees as an
:class:`~parity.frontend.jax.errors.UntranslatedPrimitive` at their line.

Example::

    >>> def translate_neg(ctx: JaxContext, x):
    ...     return ctx.b.neg(x)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...ir.builder import GraphBuilder
from ...ir.dims import DimExpr
from ...ir.dtypes import DType
from ...ir.graph import Graph, Value
from ...ir.types import TensorType
from .compat import Eqn, SubProgram


class Refused(Exception):
    """Raised by a rule for a case it does not translate; carries the reason."""


def refuse(why: str):
    raise Refused(why)


class JaxContext:
    """One equation's translation: ``ctx.b`` emits IR, ``ctx.out`` is JAX's result type."""

    def __init__(self, b: GraphBuilder, eqn: Eqn, inline: Callable[[SubProgram, Sequence[Value]], list[Value]],
                 subgraph: Callable[[SubProgram, Sequence[TensorType], str], Graph] | None = None):
        self.b = b
        self.eqn = eqn
        self.params = eqn.params
        self._inline = inline
        self._subgraph = subgraph

    @property
    def out(self) -> TensorType:
        return self.eqn.result_types[0]

    def inline(self, program: SubProgram, inputs: Sequence[Value]) -> list[Value]:
        """Translate a nested program (a call's body, a scan step) on ``inputs``."""
        return self._inline(program, inputs)

    def subgraph(self, program: SubProgram, in_types: Sequence[TensorType], name: str) -> Graph:
        """Translate a nested program into a graph of its own on inputs of ``in_types`` (a loop's
        body, which reads nothing of the enclosing graph)."""
        return self._subgraph(program, in_types, name)

    def full(self, value: Any, dtype: DType, shape: Sequence[int]) -> Value:
        """``value`` broadcast to ``shape``; a symbolic size (a gather's clamp bound ``s-1``) is
        computed from the inputs' shapes."""
        if isinstance(value, DimExpr):
            scalar = self.convert(self.b.size_value(value), dtype)
        else:
            scalar = self.b.constant(np.asarray(value, dtype=dtype.numpy))
        return self.broadcast(scalar, shape)

    def broadcast(self, x: Value, shape: Sequence[int]) -> Value:
        """An elementwise operand to the result's ``shape``: jaxprs pass rank-0 literals
        (``mul x 2.0:f32[]``) and, since JAX 0.10, size-1 dims (``add f32[2,8] f32[1,8]``)."""
        shape = tuple(shape)
        if tuple(x.type.shape) == shape:
            return x
        rank = x.type.rank
        if rank > len(shape) or any(d not in (1, n) for d, n in zip(x.type.shape, shape[len(shape) - rank:])):
            refuse(f"operand {x.type} does not broadcast to the result shape {list(shape)}")
        return self.b.broadcast_in_dim(x, shape=shape, broadcast_dimensions=tuple(range(len(shape) - rank,
                                                                                       len(shape))))

    def convert(self, x: Value, dtype: DType) -> Value:
        return x if x.type.dtype is dtype else self.b.convert(x, dtype=dtype)
