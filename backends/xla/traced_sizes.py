"""Sizes that are JAX dimension variables: how xla rules trace a graph for symbolic export.

For a static run, every IR symbol is bound to an int before a rule sees its types. For
StableHLO export with symbolic dims (``jax.export``), the inputs' sizes are JAX
dimension variables (``batch``, ``seq``), and every IR dim expression (``B*4``,
``S//2``) is evaluated with them: JAX's dims support the same ``+ * // %``. A
:class:`TracedType` carries such a shape to the rules (an IR ``TensorType`` holds only
ints and IR dims); :class:`TracedSizes` is the :class:`~parity.ir.shapes.ShapeBindings`
that resolves to it.

Example::

    >>> from jax import export
    >>> from parity.ir import Symbol, f32
    >>> (batch,) = export.symbolic_shape("batch")
    >>> sizes = TracedSizes({"B": batch})
    >>> sizes.resolve(f32[Symbol("B") * 4, 2]).shape
    (4*batch, 2)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ...ir.dims import DimExpr, Symbol, substitute
from ...ir.dtypes import DType
from ...ir.shapes import ShapeBindings
from ...ir.types import TensorType


@dataclass(frozen=True)
class TracedType:
    """A dtype and a shape of ints and JAX dimension expressions: what an xla rule reads of
    a ``TensorType`` (``shape``, ``dtype``, ``rank``, ``numel``; a ``TensorType`` holds only
    ints and IR dims) while tracing for export."""

    dtype: DType
    shape: tuple[Any, ...]

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> Any:
        return math.prod(self.shape)  # a JAX dim expression when a dim is one

    def __str__(self) -> str:
        return f"{self.dtype.short}[{','.join(str(d) for d in self.shape)}]"


class TracedSizes(ShapeBindings):
    """Bindings from IR symbol names to JAX dimension variables (or ints).

    Nothing is checked here: ``jax.export`` checks the shapes, and the graph's
    constraints, when the exported function is called."""

    def resolve(self, t: TensorType) -> TracedType:
        return TracedType(t.dtype, tuple(substitute(d, self.sizes) for d in t.shape))

    def resolve_attr(self, value: Any, *, strict: bool = False) -> Any:
        if isinstance(value, DimExpr):
            return substitute(value, self.sizes)
        if isinstance(value, tuple):
            return tuple(self.resolve_attr(v) for v in value)
        return value

    def bind_unchecked(self, t: TensorType, shape) -> None:
        for dim, size in zip(t.shape, shape):
            if isinstance(dim, Symbol):
                self.sizes.setdefault(dim.name, size)
