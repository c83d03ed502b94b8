"""The reference backend runs graphs on the reference interpreter (NumPy, CPU).

It claims every primitive in every dtype and no composite, so it also proves that the
decompositions are complete. Slow by design; it is the spec, not a product.

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, f32
    >>> b = GraphBuilder(); x = b.input(f32[2])
    >>> run = ReferenceBackend().compile(b.build([b.neg(x)]), "cpu")
    >>> run(np.array([1.0, -2.0], np.float32))[0].tolist()
    [-1.0, 2.0]
"""

from __future__ import annotations

import numpy as np

from ...ir.dtypes import DType
from ...ir.errors import ParityError
from ...ir.interpreter import evaluate
from ...ir.ops import primitives
from ..base import Backend, OpClaim


class ReferenceBackend(Backend):
    name = "reference"
    devices = ("cpu",)

    def __init__(self):
        self._claims = {op.name: OpClaim(frozenset(op.dtypes)) for op in primitives()}

    def claims(self):
        return self._claims

    def compile(self, graph, device: str = "cpu"):
        if device != "cpu":
            raise ParityError(
                f"the reference backend runs on cpu only, not {device!r}; "
                f"use device='cpu' or another backend"
            )
        dtypes = [v.type.dtype for v in graph.inputs]

        def run(*arrays) -> list[np.ndarray]:
            return evaluate(graph, [_as_numpy(a, d) for a, d in zip(arrays, dtypes)])

        return run


def _as_numpy(array, dtype: DType) -> np.ndarray:
    if isinstance(array, np.ndarray):
        return array
    # torch tensors (and anything with the buffer protocol); bfloat16 has no NumPy
    # buffer format, so it crosses as its 16 raw bits.
    module = type(array).__module__
    if module.startswith("torch"):
        tensor = array.detach()
        if dtype is DType.bfloat16:
            import torch

            return tensor.contiguous().view(torch.int16).numpy().view(dtype.numpy)
        return tensor.numpy()
    return np.asarray(array, dtype=dtype.numpy)
