"""What a lowering rule sees: the node's attributes and types, and the emitter.

A rule is ``rule(ctx, *operands) -> name | tuple[name, ...]``: operands and results are
ONNX value names; ``ctx`` emits nodes (``ctx.op("Add", a, b)``) and constants
(``ctx.scalar(0, dtype)``). ONNX broadcasts numpy-style, so scalars need no expansion.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...ir.context import NodeContext
from ...ir.dtypes import DType
from ...ir.errors import UnsupportedOpError
from ...ir.types import Dim, TensorType
from .emitter import ONNX_DTYPES, Emitter

_BITS = {DType.float16: DType.int16, DType.bfloat16: DType.int16, DType.float32: DType.int32,
         DType.float64: DType.int64}


@dataclass(frozen=True)
class OnnxNodeContext(NodeContext):
    """One IR node as an ONNX lowering rule sees it (attributes and types, as every
    backend's :class:`NodeContext`), with the emitter that writes its ONNX nodes."""

    em: Emitter
    op_name: str
    loc: str = ""  # " (at file:line)" of the node, for errors
    semantic: DType | None = None  # the node's own dtype when legalization widened it
    # lower_graph(graph, env) -> output names: emits a nested IR graph (a loop's body) by the
    # same rules (lowering.lower_graph, with this model's legalization); None outside to_model
    lower_graph: Callable[..., list] | None = None

    @property
    def ir_dtype(self) -> DType:
        """The dtype whose semantics the rule implements (``dtype`` may be a wider stand-in)."""
        return self.semantic or self.dtype

    @property
    def dtype(self) -> DType:
        """The dtype of operand 0 (or of the result for ops without operands)."""
        return (self.in_types or self.out_types)[0].dtype

    def op(self, op_type: str, *inputs: str, outputs: int = 1, **attrs: Any):
        return self.em.op(op_type, *inputs, outputs=outputs, **attrs)

    def scalar(self, value: Any, dtype: DType | None = None) -> str:
        return self.em.scalar(value, dtype or self.dtype)

    def cast(self, x: str, dtype: DType) -> str:
        return self.em.cast(x, dtype)

    def where(self, cond: str, on_true: str, on_false: str, dtype: DType) -> str:
        """Where, bit-exact: ORT's float Where turns a selected -0.0 into +0.0, so floats are
        selected as their bits, unless neither operand can be -0.0 (constants without one:
        an attention mask's 0 / -inf or finfo.min fill, one ORT node instead of two).

        ORT selects ``x_sel = cond ? x : +0``, ``y_sel = cond ? +0 : y`` and returns
        ``x_sel != 0 ? x_sel : y_sel``: a selected -0.0 of ``on_true`` always comes out +0.0,
        one of ``on_false`` where the condition and ``on_false`` are single elements."""
        if not dtype.is_float or not any(map(self._may_be_negative_zero, (on_true, on_false))):
            return self.op("Where", cond, on_true, on_false)
        bits = _BITS[dtype]
        a, b = (self.op("BitCast", v, to=ONNX_DTYPES[bits]) for v in (on_true, on_false))
        if bits is DType.int16:  # Where has no int16 kernel
            a, b = self.cast(a, DType.int32), self.cast(b, DType.int32)
            return self.op("BitCast", self.cast(self.op("Where", cond, a, b), bits), to=ONNX_DTYPES[dtype])
        return self.op("BitCast", self.op("Where", cond, a, b), to=ONNX_DTYPES[dtype])

    def _may_be_negative_zero(self, x: str) -> bool:
        value = self.em.constant_value(x)
        return value is None or bool(np.any((value == 0) & np.signbit(value)))

    def poison(self, x: str, flag: str) -> str:
        """NaN where the float ``flag`` (same dtype as ``x``) is 1, ``x`` (bit-exact) where it is 0.

        ``x + (-0.0 / (1 - flag))``: -0.0 / 1 = -0.0, and x + -0.0 is x for every x, -0.0
        included; -0.0 / 0 is NaN. Three arithmetic passes instead of Where, which ORT runs
        ~15 times slower than an Add (and which loses a selected -0.0).
        """
        one = self.scalar(1, self.dtype)
        return self.op("Add", x, self.op("Div", self.scalar(-0.0, self.dtype), self.op("Sub", one, flag)))

    def expand(self, x: str, x_shape: Sequence[Dim], shape: Sequence[Dim]) -> str:
        """Broadcast ``x`` (of ``x_shape``, same rank) to ``shape`` (:meth:`Emitter.expand`)."""
        return self.em.expand(x, x_shape, shape)

    def full(self, value: Any, t: TensorType) -> str:
        """A tensor of type ``t`` filled with ``value``."""
        scalar = self.scalar(np.full([1] * t.rank, value), t.dtype)
        return self.expand(scalar, [1] * t.rank, t.shape)

    def unsupported(self, why: str) -> UnsupportedOpError:
        return UnsupportedOpError(
            f"the onnx backend cannot lower {self.op_name!r}{self.loc}: {why}; "
            f"use backend='reference' or 'xla' for this graph"
        )
