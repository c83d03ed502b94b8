"""Test plugins for the runtime interface (backends/runtime.py): a backend that behaves like a
device runtime, counting what crosses to it.

:class:`DeviceLike` copies every array it is handed into its own memory, as a runtime with
device memory must (``copied_bytes`` counts them): at each call for the inputs, and at
``bind`` for the parameters. It declares two options, binds parameters, and keeps its
executables in parity's disk cache (the artifact is the graph's text format, read back with
``parity.ir.parse``). :class:`DlpackDevice` takes DLPack tensors and records what it got.
"""

from __future__ import annotations

import contextlib
import json

import ml_dtypes
import numpy as np

from parity.backends.base import Backend, OpClaim
from parity.backends.registry import register_backend, unregister_backend
from parity.backends.runtime import BackendOption, VendorTier
from parity.ir import evaluate, parse, primitives
from parity.ir.precision import Precision


class _Primitives(Backend):
    devices = ("cpu",)

    def claims(self):
        return {op.name: OpClaim(frozenset(op.dtypes)) for op in primitives()}


class DeviceLike(_Primitives):
    name = "device_like"
    backend_options = (BackendOption("threads", int, 1, "worker threads"),
                       BackendOption("mode", str, "exact", "how it computes", choices=("exact", "approximate")))
    binds_parameters = True
    artifact_version = "device-like 1"

    def __init__(self):
        self.compiles: list[dict] = []  # the keywords of each compile
        self.loads: list[dict] = []  # the keywords of each load_artifact
        self.copied_bytes = 0
        self.binds = 0
        self.refresh = True  # False: a planted fault, bind() ignores new values after the first

    def compile(self, graph, device="cpu", *, backend_options=None, parameters=frozenset()):
        self.compiles.append({"backend_options": backend_options, "parameters": parameters})
        return DeviceExecutable(self, graph, parameters)

    def save_artifact(self, executable):
        return json.dumps({"graph": str(executable.graph), "parameters": sorted(executable.parameters)}).encode()

    def load_artifact(self, graph, device, payload, *, backend_options=None, parameters=frozenset()):
        self.loads.append({"backend_options": backend_options, "parameters": parameters})
        saved = json.loads(payload)
        return DeviceExecutable(self, parse(saved["graph"]), frozenset(saved["parameters"]))


class DeviceExecutable:
    """Runs the graph with the spec's interpreter on copies of its inputs ("device memory")."""

    def __init__(self, backend: DeviceLike, graph, parameters):
        self.backend, self.graph, self.parameters = backend, graph, frozenset(parameters)
        self.bound: dict[int, np.ndarray] = {}

    def bind(self, values):
        self.backend.binds += 1
        for k, value in values.items():
            if k in self.bound and not self.backend.refresh:
                continue
            self.bound[k] = self._to_device(value)

    def __call__(self, *arrays):
        device = [self.bound[k] if k in self.parameters and k in self.bound else self._to_device(a)
                  for k, a in enumerate(arrays)]
        return evaluate(self.graph, device)

    def _to_device(self, value) -> np.ndarray:
        copy = np.array(value, copy=True)
        self.backend.copied_bytes += copy.nbytes
        return copy


class DlpackDevice(_Primitives):
    """Takes and returns DLPack tensors; ``seen`` records, per call, each input's type and whether
    ``np.from_dlpack`` read it without a copy."""

    name = "dlpack_device"
    takes_dlpack = True

    def __init__(self):
        self.seen: list[list[tuple[str, bool]]] = []
        self.returned: list[int] = []  # the address of each result it returned

    def compile(self, graph, device="cpu"):
        def run(*tensors):
            views = [np.from_dlpack(t) for t in tensors]
            self.seen.append([(type(t).__name__, _address(v) == _pointer(t)) for t, v in zip(tensors, views)])
            results = [np.ascontiguousarray(r) for r in evaluate(graph, views)]
            self.returned = [_address(r) for r in results]
            return results

        return run


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def _pointer(tensor) -> int:
    return tensor.data_ptr() if hasattr(tensor, "data_ptr") else _address(tensor)


@contextlib.contextmanager
def registered(backend):
    """``backend`` registered, with parity's executable cache empty, for the block's length."""
    from parity.frontend import compiled_graph

    compiled_graph.reset_caches()
    register_backend(backend)
    try:
        yield backend
    finally:
        unregister_backend(backend.name)
        compiled_graph.reset_caches()


# bf16 units: a transcendental result rounded to bfloat16 (8 bits of mantissa) is within half a
# bfloat16 ULP, 2^15 float32 ULPs, of the exact one, plus the float32 rounding: 32769 ULP.
BF16_COMPUTE = VendorTier("bf16-compute", {"tanh": 32769, "exp": 32769}, "tanh and exp in bfloat16 units")


class Bf16Device(_Primitives):
    """At its vendor tier, a graph that holds tanh or exp has its float results rounded to
    bfloat16 (as bf16 units would give them); every other graph, and every graph at exact, runs
    the spec."""

    name = "bf16_device"
    precisions = (Precision.EXACT, BF16_COMPUTE)

    def __init__(self):
        self.asked: list = []  # the precision= of each compile

    def compile(self, graph, device="cpu", precision=None):
        self.asked.append(precision)
        in_bf16 = getattr(precision, "value", None) == "bf16-compute" and any(
            n.op in ("tanh", "exp") for n in graph.nodes)

        def run(*arrays):
            results = evaluate(graph, arrays)
            if not in_bf16:
                return results
            return [r.astype(ml_dtypes.bfloat16).astype(r.dtype) if r.dtype.kind == "f" else r for r in results]

        return run


def artifact_round(cache: str) -> dict:
    """One process's use of the disk cache with :class:`DeviceLike`: compile (or load) ``tanh(w * x)``
    with options and one parameter, bind ``w`` = 2, run it on 0, 1, 2; what happened, as data."""
    from parity.backends import disk_cache
    from parity.backends.runtime import RuntimeRequest
    from parity.ir import GraphBuilder, f32

    backend, stores = DeviceLike(), disk_cache.STATS["stores"]
    b = GraphBuilder()
    w, x = b.input(f32[3]), b.input(f32[3])
    run, loaded = disk_cache.compile_cached(b.build([b.tanh(b.mul(w, x))]), backend, "cpu", cache,
                                            request=RuntimeRequest({"threads": 3}, frozenset({0})))
    run.bind({0: np.full(3, 2, np.float32)})
    out = run(None, np.arange(3, dtype=np.float32))[0]
    return {"compiles": len(backend.compiles), "loaded": loaded, "stores": disk_cache.STATS["stores"] - stores,
            "loads": [{"threads": a["backend_options"]["threads"], "parameters": sorted(a["parameters"])}
                      for a in backend.loads], "out": out.tolist()}
