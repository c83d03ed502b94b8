"""What an inductor lowering rule sees, and how IR dtypes are carried in torch tensors.

A rule is ``rule(ctx, *operands) -> tensor | tuple[tensor, ...]``: operands and results
are torch tensors (fake ones while the ATen graph is traced), ``ctx`` the node's
attributes and types. Every IR dtype is carried by the torch dtype of the same name,
except ``u32``: torch has almost no uint32 kernels, so a ``u32`` value travels as an
int64 holding 0 … 2**32 - 1, and :func:`~.lowering.lower_node` wraps every ``u32``
result back into that range (two's complement wrap, as the IR's integers do).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ...ir.context import NodeContext
from ...ir.dtypes import DType
from ...ir.graph import Node

TORCH_DTYPES: dict[DType, torch.dtype] = {
    DType.bool: torch.bool,
    DType.int8: torch.int8,
    DType.int16: torch.int16,
    DType.int32: torch.int32,
    DType.int64: torch.int64,
    DType.uint8: torch.uint8,
    DType.uint32: torch.int64,  # carried wide: see the module docstring
    DType.float16: torch.float16,
    DType.bfloat16: torch.bfloat16,
    DType.float32: torch.float32,
    DType.float64: torch.float64,
    DType.complex64: torch.complex64,
    DType.complex128: torch.complex128,
}

U32_MASK = 0xFFFFFFFF

# The signed integer of each float's width: bitcasts go through it.
FLOAT_BITS: dict[DType, torch.dtype] = {DType.float16: torch.int16, DType.bfloat16: torch.int16,
                                        DType.float32: torch.int32, DType.float64: torch.int64}


def carried(dtype: DType) -> torch.dtype:
    """The torch dtype that carries IR ``dtype`` inside a compiled graph."""
    return TORCH_DTYPES[dtype]


@dataclass(frozen=True)
class InductorNodeContext(NodeContext):
    """One IR node as an inductor lowering rule sees it."""

    op_name: str = ""

    @property
    def dtype(self) -> DType:
        """The dtype of operand 0 (or of the result for ops without operands)."""
        return (self.in_types or self.out_types)[0].dtype

    @property
    def out_dtype(self) -> torch.dtype:
        return carried(self.out.dtype)


def as_tensor(array: np.ndarray, dtype: DType) -> torch.Tensor:
    """A NumPy array of IR ``dtype`` as the torch tensor that carries it (u32 widened)."""
    if not (array.flags.c_contiguous and array.flags.writeable):  # (torch warns on read-only memory)
        array = array.copy(order="C")
    if dtype is DType.bfloat16:
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    if dtype is DType.uint32:
        return torch.from_numpy(array.astype(np.int64))
    return torch.from_numpy(array)


def is_inline_constant(node: Node) -> bool:
    """A one-element constant: traced as ``torch.full``, which Inductor folds into kernels."""
    return node.op == "constant" and node.attrs["value"].size == 1
