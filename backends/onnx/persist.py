"""The onnx backend's half of the disk cache: the ONNX model's bytes.

A warm process skips lowering the graph to ONNX and builds the onnxruntime session
straight from the stored model (with the backend's own session options, so the same
optimizers stay disabled). The session is handed to the backend's in-process cache under
the key :meth:`OnnxBackend.compile` looks up.
"""

from __future__ import annotations

from ...ir.precision import Precision
from ..base import compile_at
from .backend import OnnxExecutable, open_session, session_key
from .lowering import to_model


class _Serialized:
    """What :func:`open_session` needs of a model: its bytes."""

    def __init__(self, data: bytes):
        self.data = data

    def SerializeToString(self) -> bytes:  # noqa: N802 - ModelProto's name
        return self.data


class OnnxPersister:
    native_code = False  # a model: onnxruntime compiles it when the session opens

    def build(self, backend, graph, device: str, precision: Precision = Precision.EXACT):
        model = to_model(graph, precision=precision)
        backend._sessions.get_or_build(session_key(graph, device, precision), lambda: open_session(model, device))
        return compile_at(backend, graph, device, precision), model.SerializeToString()

    def load(self, backend, graph, device: str, payload: bytes, precision: Precision = Precision.EXACT) -> OnnxExecutable:
        opened = open_session(_Serialized(payload), device)
        backend._sessions.get_or_build(session_key(graph, device, precision), lambda: opened)
        return compile_at(backend, graph, device, precision)
