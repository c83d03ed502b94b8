"""What a translation function of the aten table gets as its first argument: a
:class:`TranslationContext` (the IR builder, the FX node, torch's result types, promotion
and broadcasting made explicit), and the helpers those functions share.

Example::

    >>> import torch
    >>> from parity.frontend.context import TranslationContext, unsupported
    >>> def translate_relu(ctx: TranslationContext, x):
    ...     if x.type.dtype.is_bool:
    ...         unsupported("relu of a bool tensor")
    ...     return ctx.b.max(x, ctx.full(0, x.type.dtype, x.type.shape))
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.fx

from ..ir.dtypes import DType
from ..ir.graph import Value
from ..ir.ops.rules import dims_differ
from ..ir.types import DimExpr, TensorType
from .sizes import UntranslatedCase, dim_of, shape_of
from .tensors import IR_TO_TORCH, ir_dtype

_GETITEM = operator.getitem


def broadcast_shapes(*shapes: Sequence) -> tuple:
    """Numpy-style broadcast of shapes (symbols broadcast against 1 or themselves)."""
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(rank):
        dims = [s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0]
        chosen = 1
        for d in dims:
            if d == 1:
                continue
            if chosen != 1 and d != chosen:
                raise UntranslatedCase(f"shapes {[tuple(s) for s in shapes]} do not broadcast")
            chosen = d
        out.append(chosen)
    return tuple(out)


class TranslationContext:
    """What a translation function gets as its first argument: builder, node, helpers.

    ``ctx.b`` is the :class:`GraphBuilder` (``ctx.b.add(x, y)`` emits IR); ``ctx.out``
    is torch's result type (``ctx.out_type(i)`` for multi-result ops).
    """

    def __init__(self, translator, node: torch.fx.Node, name: str):
        self._t = translator
        self.node = node
        self.name = name
        self.b = translator.b

    # -- what torch computes --------------------------------------------------------------

    @property
    def val(self):
        return self.node.meta.get("val")

    def out_type(self, i: int | None = None) -> TensorType:
        val = self.val if i is None else self.val[i]
        return TensorType(ir_dtype(val.dtype), shape_of(val.shape))

    @property
    def out(self) -> TensorType:
        return self.out_type()

    def value_of(self, node: torch.fx.Node) -> Any:
        """The translation of an earlier FX node of the graph (its IR value, size or constant):
        for a translation that reads another tensor than its arguments (a view's storage root)."""
        return self._t.env[node]

    def users_of_result(self, i: int) -> bool:
        """Whether result ``i`` of a multi-result op is read by any node."""
        for user in self.node.users:
            if user.op == "call_function" and user.target is _GETITEM and user.args[1] == i:
                if user.users:
                    return True
            elif user.op == "output":
                return True
        return False

    # -- values -----------------------------------------------------------------------

    def const(self, value: Any, dtype: DType) -> Value:
        """A rank-0 constant of ``dtype`` (Python scalars are cast the way torch casts them)."""
        if dtype.is_bool:
            value = bool(value)
        elif dtype.is_integer:
            if isinstance(value, float) and not math.isfinite(value):
                raise UntranslatedCase(f"{value} is not representable in {dtype.short}")
            value = int(value)
        wide = np.complex128 if dtype.is_complex else np.float64 if dtype.is_float else None
        return self.b.constant(np.array(value, dtype=wide), dtype)

    def full(self, value: Any, dtype: DType, shape: Sequence) -> Value:
        return self.broadcast(self.const(value, dtype), tuple(shape))

    def convert(self, x: Value, dtype: DType) -> Value:
        return x if x.type.dtype is dtype else self.b.convert(x, dtype=dtype)

    def value(self, x: Any, dtype: DType) -> Value:
        """A Value of ``dtype`` from a Value (converted) or a Python scalar (a constant)."""
        if isinstance(x, Value):
            return self.convert(x, dtype)
        if isinstance(x, DimExpr):
            return self.convert(self.size_value(x), dtype)
        return self.const(x, dtype)

    def size_value(self, dim) -> Value:
        """A size (an int or an expression over symbols: ``s3-3``) as an ``i64[]`` tensor, for
        code that computes with sizes (``torch.arange(n, n + 3)``, a sliding window's offset).

        Under ``parity.compile`` it is an IR input that the call computes from the bound sizes
        (Translation.size_values): exact for any int, a negative int argument included. A graph
        that other programs call with the user's tensors alone (capture, export) computes it
        (GraphBuilder.size_value)."""
        if isinstance(dim, int):
            return self.const(dim, DType.int64)
        if self._t.sizes_as_inputs:
            return self._t.size_input(dim)
        return self.b.size_value(dim)

    def broadcast(self, x: Value, shape: Sequence) -> Value:
        """Numpy-style broadcast of ``x`` to ``shape`` (trailing dims aligned)."""
        shape = tuple(shape)
        if x.type.shape == shape:
            return x
        offset = len(shape) - x.type.rank
        if offset < 0:
            raise UntranslatedCase(f"cannot broadcast {x.type} to {shape}")
        dims = tuple(range(offset, len(shape)))
        return self.b.broadcast_in_dim(x, shape=shape, broadcast_dimensions=dims)

    def reshape(self, x: Value, shape: Sequence) -> Value:
        shape = tuple(shape)
        return x if x.type.shape == shape else self.b.reshape(x, shape=shape)

    def assume_shape(self, x: Value, shape: Sequence, what: str) -> Value:
        """``x`` typed as ``shape``, for an op whose operands must agree in sizes that torch
        never compared (Dynamo gave a KV cache's keys and values separate symbols, equal at
        run time). Each dim that differs only by symbol becomes a graph assumption
        (``s94+1 == s87+1``, checked when sizes are bound: unequal sizes raise naming
        ``what``), and a reshape gives ``x`` the symbols of ``shape`` from here on.
        Dims that can never be equal are not assumed: :class:`UntranslatedCase`."""
        shape = tuple(shape)
        if x.type.shape == shape:
            return x
        if x.type.rank != len(shape):
            raise UntranslatedCase(f"{what}: {x.type} must have rank {len(shape)}")
        where = f"{self.name}" + (f" at {self.b.loc}" if self.b.loc is not None else "")
        for have, want in zip(x.type.shape, shape):
            if have == want:
                continue
            if dims_differ(have, want):
                raise UntranslatedCase(f"{what}: size {have} of {x.type} can never equal {want}")
            self.b.assume("==", have, want, f"{where}: {what}")
        return self.b.reshape(x, shape=shape)

    def promote(self, *args: Any, kind: str = "DEFAULT") -> tuple[DType, DType]:
        """(computation dtype, result dtype) by torch's elementwise promotion rules.

        ``kind`` is a ``torch._prims_common.ELEMENTWISE_TYPE_PROMOTION_KIND`` name:
        DEFAULT, INT_TO_FLOAT, ALWAYS_BOOL, COMPLEX_TO_FLOAT, BOOL_TO_LONG, NO_OPMATH.
        """
        from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND, elementwise_dtypes

        probes = []
        for a in args:
            if isinstance(a, Value):
                probes.append(torch.empty((1,) * a.type.rank, dtype=IR_TO_TORCH[a.type.dtype], device="meta"))
            elif isinstance(a, DimExpr):  # a symbolic size is a Python int to torch's promotion
                probes.append(0)
            elif a is not None:
                probes.append(a)
        compute, result = elementwise_dtypes(*probes, type_promotion_kind=getattr(ELEMENTWISE_TYPE_PROMOTION_KIND, kind))
        return ir_dtype(compute), ir_dtype(result)

    def elementwise(self, args: Sequence[Any], dtype: DType, shape: Sequence | None = None) -> list[Value]:
        """Every arg as a Value of ``dtype``, broadcast to one shape (``shape`` or the common one)."""
        if shape is None:
            shape = broadcast_shapes(*(a.type.shape for a in args if isinstance(a, Value)))
        return [self.broadcast(self.value(a, dtype), shape) for a in args]

    # -- axes -------------------------------------------------------------------------

    @staticmethod
    def axis(dim: int, rank: int) -> int:
        """Normalize a (possibly negative) torch dim; rank-0 tensors accept dim 0 and -1."""
        if rank == 0 and dim in (0, -1):
            return 0
        if not -rank <= dim < rank:
            raise UntranslatedCase(f"dim {dim} is out of range for rank {rank}")
        return dim % rank

    def axes(self, dims: Sequence[int] | int | None, rank: int) -> tuple[int, ...]:
        """Normalized reduction axes; None or [] means every axis (torch's convention)."""
        if dims is None:
            return tuple(range(rank))
        if isinstance(dims, int):
            dims = [dims]
        if len(dims) == 0:
            return tuple(range(rank))
        return tuple(sorted({self.axis(d, rank) for d in dims})) if rank else ()

    def shape(self, sizes: Sequence) -> tuple:
        return tuple(s if isinstance(s, DimExpr) else dim_of(s) for s in sizes)

    def translation_of(self, op):
        """The translation function of aten overload ``op`` (an op another op runs: the op a
        random-state wrapper replays, aten/rng_state.py), or None when it has none."""
        return self._t.translation(op)

    # -- randomness ---------------------------------------------------------------------

    def new_key(self) -> Value:
        """A fresh u32[2] random key: an extra graph input drawn per call (docs/frontend.md)."""
        key = self.b.input(TensorType(DType.uint32, (2,)))
        self._t.keys.append(key)
        return key


def unsupported(message: str):
    """Raise from a translation function: this case of the op has no translation
    (:class:`UntranslatedCase`; the user sees ``message`` as the reason)."""
    raise UntranslatedCase(message)
