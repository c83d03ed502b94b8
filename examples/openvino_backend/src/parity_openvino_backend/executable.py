"""OpenVinoExecutable: one parity graph compiled by OpenVINO's CPU plugin, called with arrays.

Inputs are handed to OpenVINO as tensors over the caller's memory (``shared_memory=True``: a
DLPack tensor from ``parity.compile`` is read in place, no copy); parameters are set once on the
infer request (``bind``) and stay there until parity binds them again. A graph with symbolic
dims is lowered and compiled once per concrete input shape.
"""

from __future__ import annotations

import threading

import numpy as np
import openvino as ov

from parity.ir import DType
from parity.ir.shapes import ShapeBindings

from .lowering import to_model


class OpenVinoExecutable:
    """``executable(*arrays) -> [np.ndarray, ...]``; ``bind({index: array})`` keeps parameters."""

    def __init__(self, graph, core: ov.Core, config: dict, parameters=frozenset(), compiled=None):
        self.graph, self.core, self.config = graph, core, dict(config)
        self.parameters = frozenset(parameters)
        self.binds = 0  # how many times parity bound parameters (tests read it)
        self._dtypes = [v.type.dtype for v in graph.inputs]
        self._bound: dict[int, np.ndarray] = {}  # index -> the array OpenVINO reads in place (kept alive here)
        self._static = all(v.type.is_static for v in graph.values())
        self._requests: dict[tuple, _Request] = {}  # input shapes -> request (one, for a static graph)
        self._lock = threading.Lock()  # one infer request is not reentrant
        if self._static:
            model, self._fed, held = to_model(graph)
            self.compiled = compiled or core.compile_model(model, "CPU", self.config)
            self._requests[()] = self._new_request(self.compiled, self._fed, held)

    def bind(self, values) -> None:
        with self._lock:
            self.binds += 1
            for k, value in values.items():
                self._bound[k] = _as_numpy(value, self._dtypes[k])
                for request in self._requests.values():
                    request.set(k, self._bound[k])

    def __call__(self, *arrays):
        given = {k: _as_numpy(a, self._dtypes[k]) for k, a in enumerate(arrays) if a is not None}
        with self._lock:
            request = self._request({**self._bound, **given})
            for k, array in given.items():
                request.set(k, array)
            request.infer()
            return self._outputs(request, {**self._bound, **given})

    def _outputs(self, request, arrays) -> list[np.ndarray]:
        """The graph's outputs: OpenVINO's results in order, an input passed through as a copy of
        it. The request's output buffers are reused by the next call: every result is a copy."""
        results, outputs = iter(range(len(self.graph.outputs))), []
        for v in self.graph.outputs:
            if v in self.graph.inputs:
                given = np.array(arrays[self.graph.inputs.index(v)], copy=True)
                outputs.append(given.reshape(-1).view(np.int64).reshape(given.shape[:-1])
                               if v.type.dtype is DType.int64 else given)
            elif v.type.dtype is DType.int64:  # int32 pairs (wide.py): the int64 array's own bytes
                pairs = np.array(request.get_output_tensor(next(results)).data, dtype=np.int32)
                outputs.append(pairs.reshape(-1).view(np.int64).reshape(pairs.shape[:-1]))
            else:
                outputs.append(np.array(request.get_output_tensor(next(results)).data, dtype=v.type.dtype.numpy))
        return outputs

    def _request(self, arrays) -> _Request:
        if self._static:
            return self._requests[()]
        shapes = tuple(arrays[k].shape[:-1] if d is DType.int64 else arrays[k].shape for k, d in enumerate(self._dtypes))
        request = self._requests.get(shapes)
        if request is None:
            sizes = ShapeBindings(error=ValueError)
            sizes.bind_inputs(self.graph, list(shapes))
            model, fed, held = to_model(self.graph, sizes)
            request = self._requests[shapes] = self._new_request(self.core.compile_model(model, "CPU", self.config),
                                                                 fed, held)
        return request

    def _new_request(self, compiled, fed, held) -> _Request:
        """An infer request with the held constants and the bound parameters already set."""
        request = _Request(compiled.create_infer_request(), {k: i for i, k in enumerate(fed)})
        for k, array in self._bound.items():
            request.set(k, array)
        for i, array in enumerate(held, len(fed)):
            request.infer_request.set_input_tensor(i, ov.Tensor(array, shared_memory=True))
        self._keep = getattr(self, "_keep", []) + held  # OpenVINO reads them in place
        return request


class _Request:
    """An OpenVINO infer request and which model input each graph input is (one no node reads is
    not in the model)."""

    def __init__(self, infer_request, fed: dict[int, int]):
        self.infer_request, self.fed = infer_request, fed

    def set(self, k, array) -> None:
        """Graph input ``k`` read in place, from ``array``'s memory."""
        if k in self.fed:
            self.infer_request.set_input_tensor(self.fed[k], ov.Tensor(array, shared_memory=True))

    def infer(self) -> None:
        self.infer_request.infer()

    def get_output_tensor(self, i):
        return self.infer_request.get_output_tensor(i)


def _as_numpy(array, dtype) -> np.ndarray:
    """A contiguous NumPy array of the IR dtype over the same memory where possible (DLPack)."""
    if not isinstance(array, np.ndarray) and hasattr(array, "__dlpack__"):
        array = np.from_dlpack(array)
    array = np.asarray(array)
    if array.dtype != dtype.numpy:
        array = array.astype(dtype.numpy)
    array = array if array.flags.c_contiguous else array.copy(order="C")  # (ascontiguousarray makes 0-d 1-d)
    if dtype is DType.int64:  # read by OpenVINO as int32 pairs (wide.py), in place
        return array.reshape(-1).view(np.int32).reshape(array.shape + (2,))
    return array
