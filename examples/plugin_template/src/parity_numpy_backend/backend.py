"""NumpyBackend: a complete parity backend in one lowering table of NumPy kernels.

It claims every *primitive* of the op table, in every real dtype the op accepts (complex
numbers it declines), and no composite: softmax, layer_norm, attention, dropout, ... reach it already decomposed into
primitives by parity, so it runs every op and every model of the zoo.

Compiling a graph checks it once (every node claimed, inputs typed) and returns a
closure that walks the nodes in order, calling one kernel per node.
"""

from __future__ import annotations

import numpy as np

from parity.backends import Backend, Deviation, OpClaim, declining_complex
from parity.ir import OP_TABLE, primitives

from .kernels import KERNELS


class NumpyBackend(Backend):
    """The template backend (entry point ``numpy`` in the group ``parity.backends``)."""

    name = "numpy"
    devices = ("cpu",)
    # What this backend knowingly does differently, measured, with the reason: the conformance
    # runner reports a covered failure as a recorded deviation, and a deviation that no longer
    # happens as stale. This backend has none; an example entry would be
    # Deviation("tanh", "the runtime's float32 tanh polynomial", "5 ulp (measured 4.9)", dtype=f32)
    deviations: tuple[Deviation, ...] = ()
    # What it does not claim on purpose, with why (errors name it): complex numbers.
    declined, declined_dtypes = declining_complex("the numpy template has no complex kernels")

    def __init__(self):
        # Claim only what has a kernel: a primitive a newer parity adds shows as unsupported.
        self._claims = {op.name: OpClaim(frozenset(d for d in op.dtypes if d not in self.declined_dtypes))
                        for op in primitives() if op.name in KERNELS}

    def claims(self):
        return self._claims

    def compile(self, graph, device: str = "cpu"):
        if device != "cpu":
            raise ValueError(f"the numpy backend runs on cpu only, not {device!r}")
        for node in graph.nodes:
            if node.op not in self._claims:
                kind = OP_TABLE[node.op].kind.value
                raise NotImplementedError(f"numpy backend: {kind} {node.op!r} is not claimed ({node.loc})")
        dtypes = [v.type.dtype for v in graph.inputs]

        def run(*arrays):
            env = {v: _as_numpy(a, d) for v, a, d in zip(graph.inputs, arrays, dtypes)}
            with np.errstate(all="ignore"):  # IEEE results (inf, NaN) are results, not warnings
                for node in graph.nodes:
                    _step(node, env)
            return [env[v] for v in graph.outputs]

        return run


def _step(node, env) -> None:
    """Run one node: its kernel on its operands' arrays, results typed as the graph says."""
    outs = [v.type for v in node.outputs]
    result = KERNELS[node.op](node.attrs, outs, *[env[v] for v in node.inputs])
    for v, r in zip(node.outputs, result if isinstance(result, tuple) else (result,)):
        env[v] = np.asarray(r).astype(v.type.dtype.numpy, copy=False).reshape(v.type.shape)


def _as_numpy(array, dtype) -> np.ndarray:
    """Graph inputs as NumPy arrays of their IR dtype (torch tensors cross via their bits for bf16)."""
    if type(array).__module__.startswith("torch"):
        import torch

        tensor = array.detach().cpu().contiguous()
        if tensor.dtype is torch.bfloat16:
            return tensor.view(torch.int16).numpy().view(dtype.numpy)
        return tensor.numpy()
    return np.asarray(array, dtype=dtype.numpy)
