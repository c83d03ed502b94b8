"""The ONNX backend: IR graphs lowered to ONNX models and run by onnxruntime.

``compile(graph, device)`` returns an :class:`OnnxExecutable`. Sessions are cached by
(graph content hash, device, input types); one key is never lowered or built twice,
even when threads race for it. Symbolic dims stay symbolic in the model, so one
session serves every size.

I/O goes through IOBinding with raw pointers: inputs (NumPy arrays or CPU torch
tensors, bfloat16 included) are bound in place, and outputs are NumPy arrays allocated
here and bound as ORT's output buffers, so nothing is copied on the way in or out. For
a tiny graph this costs less per call than ``session.run`` with NumPy feeds (see
docs/backends/onnx.md for the measurement).

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, i32
    >>> b = GraphBuilder(); x = b.input(i32[2])
    >>> run = OnnxBackend().compile(b.build([b.div(x, b.constant(np.array([2, -2], np.int32)))]), "cpu")
    >>> run(np.array([-7, 7], np.int32))[0].tolist()  # truncates toward zero, like C
    [-3, -3]
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import NamedTuple

import onnxruntime as ort

from ...ir.dims import Symbol, parse_dim, substitute
from ...ir.errors import ParityError
from ...ir.graph import Graph
from ...ir.ops import OP_TABLE
from ...ir.precision import Precision
from ..base import Backend, CompilePrior, OpClaim, check_not_declined
from ..cache import BuildOnceCache
from .composites import NATIVE
from .deviations import DEVIATIONS, SUMMATION
from .emitter import with_subgraphs
from .executable import OnnxExecutable, writable_inputs
from .legalize import UNSUPPORTED
from .lowering import CLAIM_PREDICATES, COMPLEX_LOWERINGS, LOWERINGS, to_model

PROVIDERS = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider"}


class OnnxDeviceError(ParityError):
    """The requested device is not available to onnxruntime here."""


def _session_options() -> ort.SessionOptions:
    options = ort.SessionOptions()
    # ORT's own log lines repeat what the raised exception says (or are warnings about
    # our models' unused initializers): not the user's business.
    options.log_severity_level = 4
    # ORT sizes its intra-op pool by the machine's physical cores, not by the CPUs this
    # process may run on: under a CPU mask (taskset, containers, `parity bench --threads`)
    # its extra threads spin on the same CPUs as the caller. Measured with one allowed CPU
    # (8192×1024 softmax + layer norm): 66 ms a run with ORT's default, 6.2 ms with this.
    options.intra_op_num_threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 0
    # Pool threads wait for work asleep, not spinning. Each session has its own pool, and a
    # process holds many (forward and backward graphs, auto's candidates, the conformance
    # suite's thousands): after each run the idle pools spun on the cores the next run
    # needed. The onnx column of `parity conform --quick` on 2 cores: 16.4 s spinning, 2.8 s
    # not. (One process-wide pool did as well, but then onnxruntime refuses every other
    # session in the process that keeps its own pool: the user's own sessions.)
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


def make_session(model, device: str = "cpu") -> ort.InferenceSession:
    """An onnxruntime session for ``model`` on ``device`` (no caching)."""
    return ort.InferenceSession(model.SerializeToString(), _session_options(), providers=[PROVIDERS[device]],
                                disabled_optimizers=DISABLED_OPTIMIZERS)


class OpenSession(NamedTuple):
    """What the backend keeps per model: its session, and the outputs that may be written into
    an input's own memory (:func:`~.executable.writable_inputs`: output index -> input index)."""

    session: ort.InferenceSession
    writable_inputs: dict[int, int]


def open_session(model, device: str = "cpu") -> OpenSession:
    """:func:`make_session` for ``model`` (a ModelProto, or what persist.py keeps: its bytes)."""
    return OpenSession(make_session(model, device), writable_inputs(model))


# ORT rewrites that skip a rounding the IR requires. MatMulScaleFusion folds a Mul/Div by a
# constant into FusedMatMul's alpha, so the scaled operand is never rounded (fuzz regression
# onnx-matmul-f32-50e0a663: log2 = Log / ln 2 feeding a matmul, 1.58 of its bound).
# MatMulAddFusion makes MatMul + Add a Gemm with beta = 1, and MLAS adds the bias inside the
# accumulation instead of to the rounded product: 32 of 40 random shapes differed from the
# IR's round(round(a @ w) + b), in up to half the elements (tests/backends/onnx/test_views.py).
DISABLED_OPTIMIZERS = ["MatMulScaleFusion", "MatMulAddFusion"]


def _renamed_dim(text: str, dim_names: dict[str, str]) -> str:
    """A dim_param (an IR dim's text: ``s6*4``) with its symbols renamed (``batch*4``); a
    name that is not an identifier replaces a lone symbol only."""
    if text in dim_names:
        return dim_names[text]
    renames = {old: Symbol(new) for old, new in dim_names.items() if new.isidentifier()}
    return str(substitute(parse_dim(text), renames))


class OnnxBackend(Backend):
    """Lowers every primitive to ONNX (opset :data:`~.lowering.OPSET`) for onnxruntime."""

    name = "onnx"
    devices = ("cpu", "cuda")
    deviations = DEVIATIONS
    summation = SUMMATION
    compile_priors = (CompilePrior("cpu", per_graph_s=0.05, per_node_s=0.002,
                                   basis="measured per graph on cpu, docs/frontend.md (auto's budget)"),)

    def __init__(self):
        self._sessions = BuildOnceCache()

    @property
    def session_count(self) -> int:
        """Sessions built by this backend (tests watch it)."""
        return self._sessions.builds

    def claims(self):
        out = {}
        for name in {**LOWERINGS, **COMPLEX_LOWERINGS}:
            opdef = OP_TABLE.get(name)
            if opdef is None:
                continue
            native = NATIVE.get(name)  # a composite: only the dtypes its ONNX op was measured in
            real = frozenset(
                d for d in opdef.dtypes if not d.is_complex and (name, d) not in UNSUPPORTED
                and d not in self.declined_dtypes and (native is None or d in native.dtypes)
            ) if name in LOWERINGS else frozenset()
            # complex rules (complex_numbers.py): the complex dtypes, and every dtype of the ops
            # that have no real rule (complex, rfft take real parts)
            cplx = frozenset(
                d for d in opdef.dtypes if (d.is_complex or name not in LOWERINGS) and d not in self.declined_dtypes
            ) if name in COMPLEX_LOWERINGS else frozenset()
            out[name] = OpClaim(real | cplx, when=CLAIM_PREDICATES.get(name))
        return out

    def export(self, graph: Graph, path, *, input_names: Sequence[str] | None = None,
               output_names: Sequence[str] | None = None, dim_names: dict[str, str] | None = None):
        """Write ``graph`` to ``path`` as an ONNX file that plain onnxruntime runs; return the model.

        Inputs and outputs get the names given (else ``in0..``/``out0..``); constants are
        initializers, so the file is self-contained. Symbolic dims stay symbolic, a loop body's too
        (``dim_param``), renamed by ``dim_names`` (IR symbol → name in the file). The model
        passes ``onnx.checker`` with the full check before it is written.
        """
        import onnx

        model = to_model(graph, input_names=input_names, output_names=output_names)
        for info in _interface(model.graph):
            for dim in info.type.tensor_type.shape.dim:
                if dim.HasField("dim_param"):
                    dim.dim_param = _renamed_dim(dim.dim_param, dim_names or {})
        used = {name for node in with_subgraphs(model.graph.node) for name in node.input} | {o.name for o in model.graph.output}
        kept = [t for t in model.graph.initializer if t.name in used]  # plain ORT warns about unused ones
        del model.graph.initializer[:]
        model.graph.initializer.extend(kept)
        model.doc_string = f"@{graph.name}, exported by parity"
        onnx.checker.check_model(model, full_check=True)
        onnx.save(model, str(path))
        return model

    def available_devices(self) -> tuple[str, ...]:
        have = set(ort.get_available_providers())
        return tuple(d for d in self.devices if PROVIDERS[d] in have and (d == "cpu" or _cuda_works()))

    # FAST: ORT's native Sigmoid for logistic (elementwise.logistic), within FAST_BOUNDS.
    precisions = (Precision.EXACT, Precision.FAST)

    def compile(self, graph: Graph, device: str = "cpu", precision: Precision = Precision.EXACT) -> OnnxExecutable:
        if device not in PROVIDERS:
            raise OnnxDeviceError(f"the onnx backend has no device {device!r}; choose one of {list(PROVIDERS)}")
        if device not in self.available_devices():
            raise OnnxDeviceError(
                f"device {device!r} is not available to the onnx backend: onnxruntime here has the "
                f"providers {ort.get_available_providers()}. Install onnxruntime-gpu for 'cuda' or use device='cpu'."
            )
        check_not_declined(self, graph)
        key = session_key(graph, device, precision)
        opened = self._sessions.get_or_build(key, lambda: open_session(to_model(graph, precision=precision), device))
        return OnnxExecutable(graph, device, opened.session, writable_inputs=opened.writable_inputs)


def _interface(graph):
    """The inputs and outputs of ``graph`` and of its subgraphs (a loop's Scan body)."""
    yield from (*graph.input, *graph.output)
    for node in with_subgraphs(graph.node):
        for attribute in node.attribute:
            if attribute.HasField("g"):
                yield from (*attribute.g.input, *attribute.g.output)


def session_key(graph: Graph, device: str, precision: Precision) -> tuple:
    """The in-process cache key of one onnxruntime session (the disk cache's persister uses it too)."""
    return (graph.content_hash(), device, tuple(map(str, graph.input_types)), precision.value)


_cuda_state: list[bool] = []


def _cuda_works() -> bool:
    """Whether a CUDA session really runs on the GPU (the provider can be built in without one)."""
    if not _cuda_state:
        try:
            from ...ir.builder import GraphBuilder
            from ...ir.dtypes import f32

            b = GraphBuilder("cuda_probe")
            x = b.input(f32[1])
            session = make_session(to_model(b.build([b.neg(x)])), "cuda")
            _cuda_state.append("CUDAExecutionProvider" in session.get_providers())
        except Exception:
            _cuda_state.append(False)
    return _cuda_state[0]
