"""parity backend plugin: IR graphs run by OpenVINO (entry point ``openvino``)."""

from .backend import OpenVinoBackend

__all__ = ["OpenVinoBackend"]
