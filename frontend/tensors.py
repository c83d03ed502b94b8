"""Crossing between torch tensors and the arrays backends take and return.

Tensors go to backends as NumPy arrays (zero-copy for contiguous CPU tensors);
bfloat16 has no NumPy buffer format, so it crosses as its raw 16 bits and is viewed as
``ml_dtypes.bfloat16`` on the other side. Results come back from NumPy arrays or from
anything that speaks DLPack (jax, cupy, torch itself).

Example::

    >>> import torch
    >>> from parity.frontend.tensors import to_array, to_torch
    >>> from parity.ir import DType
    >>> a = to_array(torch.tensor([1.5, -2.0], dtype=torch.bfloat16))
    >>> a.dtype.name, to_torch(a, DType.bfloat16).tolist()
    ('bfloat16', [1.5, -2.0])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from ..ir.dtypes import DType

TORCH_TO_IR: dict[torch.dtype, DType] = {
    torch.bool: DType.bool,
    torch.int8: DType.int8,
    torch.int16: DType.int16,
    torch.int32: DType.int32,
    torch.int64: DType.int64,
    torch.uint8: DType.uint8,
    torch.uint32: DType.uint32,
    torch.float16: DType.float16,
    torch.bfloat16: DType.bfloat16,
    torch.float32: DType.float32,
    torch.float64: DType.float64,
    torch.complex64: DType.complex64,
    torch.complex128: DType.complex128,
}
IR_TO_TORCH: dict[DType, torch.dtype] = {v: k for k, v in TORCH_TO_IR.items()}


def ir_dtype(dtype: torch.dtype) -> DType:
    """The IR dtype for a torch dtype; raises ValueError for dtypes the IR lacks (complex32, fp8)."""
    try:
        return TORCH_TO_IR[dtype]
    except KeyError:
        raise ValueError(f"torch dtype {dtype} has no parity IR dtype") from None


def to_array(tensor: torch.Tensor) -> np.ndarray:
    """A NumPy view of a CPU tensor (a copy only when it is not contiguous or not on CPU)."""
    tensor = tensor.detach()
    if tensor.device.type != "cpu":
        tensor = tensor.cpu()
    tensor = tensor.contiguous()
    if tensor.dtype is torch.bfloat16:
        return tensor.view(torch.int16).numpy().view(DType.bfloat16.numpy)
    return tensor.numpy()


def array_converter(dtype: DType) -> Callable[[torch.Tensor], np.ndarray]:
    """:func:`to_array` for inputs of IR dtype ``dtype``, specialised once per graph input."""
    return to_array if dtype is DType.bfloat16 else _numpy_view


def _numpy_view(tensor: torch.Tensor) -> np.ndarray:
    # to_array without the bfloat16 case: numpy(force=True) detaches and moves to CPU itself.
    if not tensor.is_contiguous():
        tensor = tensor.contiguous()
    return tensor.numpy(force=True)


def result_converter(dtype: DType) -> Callable[[Any, Sequence[np.ndarray]], torch.Tensor]:
    """``convert(result, inputs)``: :func:`to_torch` of a backend result that never aliases ``inputs``.

    A result sharing memory with an input array (a backend may return a view of its
    input) is copied, as are read-only and non-contiguous NumPy results (torch needs a
    writable C-contiguous buffer); any other NumPy result is wrapped without a copy, and
    DLPack-capable results (large XLA outputs) go through ``torch.from_dlpack``, also
    without one.
    """
    want = dtype.numpy

    def convert(result: Any, inputs: Sequence[np.ndarray]) -> torch.Tensor:
        if type(result) is not np.ndarray or dtype is DType.bfloat16:
            tensor = to_torch(_unaliased(result, inputs), dtype)
            if inputs and tensor.device.type == "cpu" and not isinstance(result, np.ndarray) and _shares_memory(
                    tensor.numpy(force=True) if dtype is not DType.bfloat16 else tensor.view(torch.int16).numpy(),
                    inputs):
                tensor = tensor.clone()  # a DLPack result over an input's memory
            return tensor
        if result.dtype != want:
            return torch.from_numpy(result.astype(want, order="C"))  # a fresh array already
        flags = result.flags
        if not (flags.writeable and flags.c_contiguous) or _shares_memory(result, inputs):
            result = result.copy()
        return torch.from_numpy(result)

    return convert


def fresh_result_converter(dtype: DType) -> Callable[[Any, Sequence[np.ndarray]], torch.Tensor]:
    """:func:`result_converter` for a backend whose results are NumPy arrays made for the call
    (writable, C-contiguous, held by nothing else: ``fresh_results`` on the executable):
    ``torch.from_numpy`` with no checks when the dtype is the IR's (0.3 µs a tiny call saves).

    Example::

        >>> fresh_result_converter(DType.float32)(np.ones(2, np.float32), ()).tolist()
        [1.0, 1.0]
    """
    general = result_converter(dtype)
    if dtype is DType.bfloat16:
        return general
    want, from_numpy = dtype.numpy, torch.from_numpy
    return lambda result, inputs: from_numpy(result) if result.dtype == want else general(result, inputs)


def tensor_result_converter(dtype: DType) -> Callable[[Any, Sequence[np.ndarray]], torch.Tensor]:
    """:func:`result_converter` for an executable that takes and returns torch tensors
    (``takes_torch_tensors``: its results never alias its inputs): a tensor result as it is.

    Example::

        >>> tensor_result_converter(DType.float32)(torch.ones(2), ()).tolist()
        [1.0, 1.0]
    """
    general = result_converter(dtype)
    return lambda result, inputs: result if type(result) is torch.Tensor else general(result, inputs)


def _shares_memory(array: np.ndarray, inputs: Sequence[np.ndarray]) -> bool:
    for other in inputs:
        if np.may_share_memory(array, other):
            return True
    return False


def _unaliased(result: Any, inputs: Sequence[np.ndarray]) -> Any:
    if isinstance(result, np.ndarray) and _shares_memory(result, inputs):
        return result.copy()
    return result


def to_torch(array: Any, dtype: DType) -> torch.Tensor:
    """A torch tensor from a backend result (NumPy array or DLPack-capable array)."""
    if isinstance(array, torch.Tensor):
        return array
    if not isinstance(array, np.ndarray) and hasattr(array, "__dlpack__") and dtype is not DType.bfloat16:
        return torch.from_dlpack(array)
    array = np.asarray(array)
    if dtype is DType.bfloat16:
        bits = np.ascontiguousarray(array.astype(DType.bfloat16.numpy, copy=False)).view(np.int16)
        return _from_numpy(bits).view(torch.bfloat16)
    if array.dtype != dtype.numpy:
        array = array.astype(dtype.numpy)
    return _from_numpy(array)


def _from_numpy(array: np.ndarray) -> torch.Tensor:
    # torch refuses read-only and non-contiguous buffers; copy only then.
    if not array.flags.writeable or not array.flags.c_contiguous:
        array = np.array(array, copy=True, order="C")
    return torch.from_numpy(array)
