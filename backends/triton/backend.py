"""The Triton backend: parity writes fused Triton kernels from the IR.

``compile(graph, device)`` decomposes every composite (fusion recovers softmax and
layer_norm as single kernels, so none is claimed natively), folds constants, and returns
a :class:`TritonExecutable`. On the first call with given input types it schedules the
graph into kernels (schedule.py), generates one Python module with the kernels and a
host function (program.py), writes it to the cache directory and imports it. Modules are
cached by (graph content hash, device, input types, mode).

Two execution modes, fixed per process by ``TRITON_INTERPRET`` (Triton reads it when a
kernel is defined, so it must be set before the first kernel is made):

* ``device="cuda"``: Triton compiles the kernels for the GPU; transcendental functions
  call libdevice.
* ``device="cpu"``: ``TRITON_INTERPRET=1``; Triton's interpreter runs the same kernels
  with NumPy. It has no libdevice, so transcendental functions are built from
  primitives in float64 (mathlib.py) and rounded once.

Inputs are torch tensors (NumPy arrays are wrapped without copies); outputs are torch
tensors on the device.

Example (running a graph needs ``TRITON_INTERPRET=1`` on CPU; see docs/backends/triton.md)::

    >>> backend = TritonBackend(TritonOptions(interpret=True))
    >>> backend.available_devices(), backend.claim_status("exp"), backend.claim_status("sort")
    (('cpu',), 'native', 'extern')
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...ir.builder import GraphBuilder
from ...ir.dtypes import DType
from ...ir.errors import ParityError
from ...ir.graph import Graph
from ...ir.ops import OP_TABLE
from ...ir.passes import PASSES, decompose, run_pipeline
from ...ir.shapes import ShapeBindings
from ...ir.types import TensorType
from ..base import Backend, Deviation, OpClaim
from .lowerings import lowered_ops
from .schedule import KernelStep, Options, Plan, Scheduler

_VERSION = "1"  # part of every cache key: bump when generated code changes meaning


class TritonModeError(ParityError):
    """The device asked for does not match how Triton runs in this process."""


def _default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "parity" / "triton"


@dataclass(frozen=True)
class TritonOptions:
    """Everything the backend reads from its environment, read once, passed down."""

    interpret: bool = False
    cache_dir: Path = field(default_factory=_default_cache_dir)
    schedule: Options = Options()

    @classmethod
    def from_environment(cls, **overrides) -> TritonOptions:
        return cls(interpret=os.environ.get("TRITON_INTERPRET", "0") == "1", **overrides)


# Measured by tests/backends/triton/test_math.py against the float64 oracle.
DEVIATIONS = (
    Deviation("pow", "float64 pow in Triton's interpreter is exp(y * log|x|) in float64 (no libdevice, "
              "no wider type): the rounding error of y * log|x| is amplified by |y * log x|",
              "2048 ulp (grows with |y log x|; measured 818 with |y log x| < 700)", DType.float64, "cpu"),
)


class TritonBackend(Backend):
    name = "triton"
    devices = ("cpu", "cuda")
    deviations = DEVIATIONS

    def __init__(self, options: TritonOptions | None = None):
        self.options = options or TritonOptions.from_environment()
        # Exactly the ops the rule tables lower (lowerings.py), in op-table order.
        parts = lowered_ops()
        self._claims = {name: OpClaim(frozenset(op.dtypes), extern=parts[name] == "extern")
                        for name, op in OP_TABLE.items() if name in parts}
        self._modules: dict[tuple, Any] = {}
        self._lock = threading.Lock()

    def claims(self):
        return self._claims

    def available_devices(self) -> tuple[str, ...]:
        if self.options.interpret:
            return ("cpu",)
        return ("cuda",) if _cuda_available() else ()

    def compile(self, graph: Graph, device: str = "cpu") -> TritonExecutable:
        self._check_device(device)
        claimed = functools.partial(decompose, claimed=lambda op: False)
        lowered, _ = run_pipeline(graph, [claimed, *PASSES.values()])
        return TritonExecutable(self, lowered, device)

    def _check_device(self, device: str) -> None:
        if device not in self.devices:
            raise TritonModeError(f"the triton backend has no device {device!r}; choose 'cpu' (Triton's "
                                  f"interpreter) or 'cuda'")
        if device == "cpu" and not self.options.interpret:
            raise TritonModeError(
                "the triton backend runs on the CPU only through Triton's interpreter, and "
                "TRITON_INTERPRET=1 is not set in this process. Set it before Python starts (e.g. "
                "`TRITON_INTERPRET=1 python ...`; scripts/test.sh does) — Triton reads it when kernels are "
                "defined — or use device='cuda' on a machine with a GPU, or another backend (xla, reference)."
            )
        if device == "cuda" and self.options.interpret:
            raise TritonModeError(
                "TRITON_INTERPRET=1 is set, so Triton interprets every kernel on the CPU; use device='cpu', "
                "or unset TRITON_INTERPRET to compile for the GPU."
            )
        if device == "cuda" and not _cuda_available():
            raise TritonModeError("device 'cuda' asked for, but torch sees no CUDA device here; use device='cpu' "
                                  "with TRITON_INTERPRET=1, or another backend.")

    def _module(self, graph: Graph, key: tuple, device: str):
        """The generated module for a graph with static shapes (cached)."""
        with self._lock:
            entry = self._modules.get(key)
            if entry is None:
                from .program import load_module, module_source

                cuda = device == "cuda"
                plan = Scheduler(graph, self.options.schedule, cuda).plan()
                source = module_source(plan, cuda=cuda)
                entry = (plan, source, load_module(source, self.options.cache_dir))
                self._modules[key] = entry
            return entry


@functools.cache
def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


class TritonExecutable:
    """A graph bound to a device. Call it with tensors; inspect what it runs.

    ``kernel_sources`` (name → Triton source), ``explain()`` (the plan and the whole
    generated module) and ``kernels_per_call`` describe the most recent specialization
    (the only one for graphs with static shapes).
    """

    def __init__(self, backend: TritonBackend, graph: Graph, device: str):
        self.backend = backend
        self.graph = graph
        self.device = device
        self._hash = graph.content_hash()
        self._last = None
        if all(t.is_static for t in graph.input_types):
            self._specialize(graph.input_types)

    def _specialize(self, types: Sequence[TensorType]):
        key = (self._hash, self.device, tuple(str(t) for t in types), self.backend.options.interpret, _VERSION)
        graph = self.graph if list(types) == self.graph.input_types else _with_input_types(self.graph, types)
        self._last = (key, *self.backend._module(graph, key, self.device))
        return self._last

    # -- running ----------------------------------------------------------------------

    def __call__(self, *inputs: Any) -> list:
        import torch

        if len(inputs) != len(self.graph.inputs):
            raise ParityError(f"@{self.graph.name} takes {len(self.graph.inputs)} inputs, got {len(inputs)}")
        dev = torch.device(self.device)
        tensors = [_as_tensor(x, v.type.dtype, dev, i, self.graph.name)
                   for i, (x, v) in enumerate(zip(inputs, self.graph.inputs))]
        types = ShapeBindings(error=ParityError).bind_inputs(self.graph, [tuple(t.shape) for t in tensors])
        last = self._last
        if last is None or last[0][2] != tuple(str(t) for t in types):
            last = self._specialize(types)
        _, plan, _, module = last
        constants = self._constants(plan, dev)
        if self.backend.options.interpret:
            # the interpreter computes masked-off lanes too (e.g. x / 0 there): IEEE results, no warnings
            with np.errstate(all="ignore"):
                return module.run(tensors, constants, dev)
        return module.run(tensors, constants, dev)

    def _constants(self, plan: Plan, dev):
        cached = getattr(plan, "_device_constants", None)
        if cached is None or cached[0] != dev:
            # (copies: constant arrays are read-only, torch tensors never are)
            cached = (dev, [_as_tensor(np.array(a), DType.from_numpy(a.dtype), dev, 0, "")
                            for a in plan.constants.values()])
            plan._device_constants = cached
        return cached[1]

    # -- inspecting -------------------------------------------------------------------

    @property
    def plan(self) -> Plan:
        if self._last is None:
            raise ParityError(f"@{self.graph.name} has symbolic shapes; call it once to specialize it")
        return self._last[1]

    @property
    def kernels_per_call(self) -> int:
        """Generated kernels launched per call (extern library calls not counted)."""
        return self.plan.kernels_per_call

    @property
    def externs_per_call(self) -> int:
        return self.plan.externs_per_call

    @property
    def kernel_sources(self) -> dict[str, str]:
        return {s.name: s.source for s in self.plan.steps if isinstance(s, KernelStep)}

    @property
    def source(self) -> str:
        """The whole generated module (kernels and host function)."""
        self.plan  # noqa: B018 - raises for unspecialized graphs
        return self._last[2]

    def explain(self) -> str:
        """The schedule (one line per kernel or extern call) followed by the generated module."""
        plan = self.plan
        mode = "CUDA" if self.device == "cuda" else "Triton interpreter (CPU)"
        lines = [f"@{self.graph.name} on triton/{self.device} [{mode}]: {plan.kernels_per_call} kernel(s), "
                 f"{plan.externs_per_call} extern call(s) per call"]
        for step in plan.steps:
            if isinstance(step, KernelStep):
                outs = ", ".join(str(v.type) for v in step.outputs)
                state = "" if step.launched else " (empty: not launched)"
                lines.append(f"  {step.name}: {step.kind} grid={step.grid} -> {outs}; ops: {' '.join(step.ops)}{state}")
            else:
                lines.append(f"  extern {step.node.op} (torch) -> {', '.join(str(v.type) for v in step.node.outputs)}")
        return "\n".join(lines) + "\n\n" + self.source


# -- inputs --------------------------------------------------------------------------------

def _as_tensor(x: Any, dtype: DType, dev, i: int, graph: str):
    import torch

    from .program import TORCH_DTYPE

    if isinstance(x, np.ndarray) or np.isscalar(x):
        array = np.asarray(x)
        if not array.flags.c_contiguous:
            array = array.copy()  # (np.ascontiguousarray would make a 0-d array 1-d)
        if array.dtype != dtype.numpy:
            raise ParityError(f"input {i} of @{graph} is {array.dtype}, expected {dtype.short}; convert it "
                              f"before the call (parity never converts inputs implicitly)")
        if dtype is DType.bfloat16:  # no NumPy buffer format in torch: cross as raw 16-bit words
            x = torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
        elif dtype is DType.uint32:
            x = torch.from_numpy(array.view(np.int32)).view(torch.uint32)
        else:
            x = torch.from_numpy(array)
    if not isinstance(x, torch.Tensor):
        raise ParityError(f"input {i} of @{graph} is a {type(x).__name__}; pass a torch tensor or a NumPy array")
    if x.dtype != TORCH_DTYPE[dtype]:
        raise ParityError(f"input {i} of @{graph} is {x.dtype}, expected {dtype.short}; convert it before the "
                          f"call (parity never converts inputs implicitly)")
    if x.device.type != dev.type:
        raise ParityError(f"input {i} of @{graph} is on {x.device}, but this executable runs on {dev}; move it "
                          f"with .to({str(dev)!r})")
    return x.detach().contiguous()


def _with_input_types(graph: Graph, types: Sequence[TensorType]) -> Graph:
    """The graph rebuilt with concrete input types (symbols bound, attributes resolved)."""
    bindings = ShapeBindings()
    for v, t in zip(graph.inputs, types):
        bindings.bind_unchecked(v.type, t.shape)
    b = GraphBuilder(graph.name)
    env = {v: b.input(t) for v, t in zip(graph.inputs, types)}
    for node in graph.nodes:
        with b.location(node.loc):
            out = b.op(node.op, *[env[v] for v in node.inputs], **bindings.resolve_attrs(node.attrs, strict=True))
        outs = out if isinstance(out, tuple) else (out,)
        env.update(zip(node.outputs, outs))
    return b.build([env[v] for v in graph.outputs])
