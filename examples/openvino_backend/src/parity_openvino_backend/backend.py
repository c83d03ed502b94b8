"""OpenVinoBackend: parity graphs run by OpenVINO's CPU plugin, built with its opset API.

It claims the primitives its lowering table (``lowering.RULES``) has a rule for, in the dtypes
OpenVINO computes as the IR says (``NOT_CLAIMED`` lists the measured exceptions, with why), and
declines what OpenVINO cannot run at all, with the reason (``declined``, ``declined_dtypes``).
Composites reach it decomposed. What it does differently within a bound is recorded, measured,
in ``deviations.py``.

The exact tier forces float32 inference precision (``INFERENCE_PRECISION_HINT``): OpenVINO's CPU
plugin computes float32 graphs in bfloat16 by default on processors with bfloat16 units.

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, f32
    >>> b = GraphBuilder(); x = b.input(f32[3])
    >>> run = OpenVinoBackend().compile(b.build([b.exp(x)]), "cpu")
    >>> run(np.zeros(3, np.float32))[0].tolist()
    [1.0, 1.0, 1.0]
"""

from __future__ import annotations

import hashlib
import io
import os

import openvino as ov

from parity.backends import Backend, OpClaim, declining_complex
from parity.backends.runtime import BackendOption, resolve_options
from parity.ir import OP_TABLE, DType, primitives

from .claims import DECLINED, DECLINED_DTYPES, NOT_CLAIMED, NOT_NATIVE_UNDER_ISA_CAP, UNCLAIMED_DTYPES, isa_capped
from .composites import COMPOSITE_DTYPES
from .composites import RULES as COMPOSITE_RULES
from .deviations import DEVIATIONS, SUMMATION
from .executable import OpenVinoExecutable
from .lowering import RULES
from .wide import WIDE_RULES

_ARTIFACT_MAGIC = b"parity-openvino-artifact 1\n"


class OpenVinoBackend(Backend):
    """The OpenVINO backend (entry point ``openvino`` in the group ``parity.backends``)."""

    name = "openvino"
    devices = ("cpu",)
    deviations = DEVIATIONS
    summation = SUMMATION
    declined = {**declining_complex("OpenVINO has no complex element type")[0], **DECLINED}
    declined_dtypes = {**declining_complex("OpenVINO has no complex element type")[1], **DECLINED_DTYPES}

    backend_options = (
        BackendOption("threads", int, 0, "OpenVINO's INFERENCE_NUM_THREADS (0: the runtime's choice)"),
        BackendOption("performance_hint", str, "LATENCY", "OpenVINO's PERFORMANCE_HINT",
                      choices=("LATENCY", "THROUGHPUT")),
    )
    binds_parameters = True  # compile takes parameters=; the executable sets them once on its infer request
    takes_dlpack = True  # inputs are read in place through DLPack (torch tensors from parity.compile)
    artifact_version = f"openvino {ov.get_version()} export 1"  # export_model's blob in parity's disk cache
    artifact_native_code = True  # the blob holds kernels compiled for this CPU

    def __init__(self):
        def claimed(op, dtype):
            if dtype is DType.int64 and op.name not in WIDE_RULES:  # int64 runs only as int32 pairs
                return False
            return dtype not in self.declined_dtypes and dtype not in UNCLAIMED_DTYPES and \
                dtype not in NOT_CLAIMED.get(op.name, {})

        self._claims = {op.name: OpClaim(frozenset(d for d in op.dtypes if claimed(op, d)))
                        for op in primitives() if op.name in RULES and op.name not in self.declined}
        capped = isa_capped(os.environ)  # the runtime's own setting, read where its kernels are claimed
        self._claims.update({name: OpClaim(COMPOSITE_DTYPES) for name in COMPOSITE_RULES
                             if not (capped and name in NOT_NATIVE_UNDER_ISA_CAP)})
        self._core = None  # created on the first compile: the constructor does no native work

    def claims(self):
        return self._claims

    def core(self) -> ov.Core:
        if self._core is None:
            self._core = ov.Core()
        return self._core

    def config(self, options) -> dict:
        config = {"INFERENCE_PRECISION_HINT": "f32", "PERFORMANCE_HINT": options["performance_hint"]}
        if options["threads"]:
            config["INFERENCE_NUM_THREADS"] = options["threads"]
        return config

    def compile(self, graph, device: str = "cpu", *, backend_options=None, parameters=frozenset()):
        options = resolve_options(self, backend_options)  # conformance passes none: the defaults
        if device != "cpu":
            raise ValueError(f"the openvino backend runs on cpu only, not {device!r}")
        for node in graph.nodes:
            if node.op not in self._claims:
                kind = OP_TABLE[node.op].kind.value
                raise NotImplementedError(f"openvino backend: {kind} {node.op!r} is not claimed ({node.loc})")
        return OpenVinoExecutable(graph, self.core(), self.config(options), parameters)

    def save_artifact(self, executable) -> bytes | None:
        if not executable._static:
            return None  # compiled per shape at call time: nothing single to keep
        blob = executable.compiled.export_model()
        return _ARTIFACT_MAGIC + _graph_digest(executable.graph) + b"\n" + blob.getvalue()

    def load_artifact(self, graph, device, payload, *, backend_options=None, parameters=frozenset()):
        # The bytes come from a directory only this user can write (checked by parity); they are
        # still read as data: the header names the graph they were compiled from.
        header, digest, blob = _split_artifact(payload)
        if header != _ARTIFACT_MAGIC or digest != _graph_digest(graph):
            raise ValueError("the openvino backend's artifact holds another graph or another format")
        options = resolve_options(self, backend_options)
        config = self.config(options)
        compiled = self.core().import_model(io.BytesIO(blob), "CPU", config)
        return OpenVinoExecutable(graph, self.core(), config, parameters, compiled=compiled)


def _graph_digest(graph) -> bytes:
    return hashlib.sha256(str(graph.content_hash()).encode()).hexdigest().encode()


def _split_artifact(payload: bytes) -> tuple[bytes, bytes, bytes]:
    magic_end = len(_ARTIFACT_MAGIC)
    digest_end = payload.find(b"\n", magic_end)
    if digest_end < 0:
        return b"", b"", b""
    return payload[:magic_end], payload[magic_end:digest_end], payload[digest_end + 1:]
