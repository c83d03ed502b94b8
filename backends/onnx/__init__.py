"""The ONNX backend: IR graphs lowered to ONNX models and run by onnxruntime.

Example::

    >>> from parity.backends.onnx import OnnxBackend
    >>> OnnxBackend().claim_status("add")
    'native'
"""

from .backend import OnnxBackend, OnnxExecutable
from .lowering import LOWERINGS, OPSET, to_model

__all__ = ["LOWERINGS", "OPSET", "OnnxBackend", "OnnxExecutable", "to_model"]
