"""What the benchmark runs: the anchors and one candidate per parity backend.

A candidate turns a :class:`~parity.bench.workloads.Case` into ``call()`` (what is
timed: one forward, one training step returning the loss and the gradients, or a whole
optimizer step when the case brings one) and
turns ``call()``'s result into NumPy arrays for the correctness check. Anchors:

- ``eager``: torch eager.
- ``inductor``: ``torch.compile`` with Inductor.
- ``jax``: the workload written directly in JAX, under ``jax.jit`` (inputs placed
  on the device once; the call blocks until the result is ready).
- ``ort``: ``torch.onnx.export`` (``dynamo=True``; ``dynamo=False`` with a printed note
  when that fails) run by onnxruntime with IOBinding: inputs and preallocated
  outputs bound once, so a call is ``run_with_iobinding`` alone.

``parity[NAME]``: ``parity.compile(fn, backend=NAME)`` — capture by Dynamo and
AOTAutograd, IR, the backend — called with torch tensors, the user's path.
"""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from .workloads import Case

# Backends whose only CPU path is an interpreter (Triton's TRITON_INTERPRET): checked for
# correctness, never timed.
INTERPRETED_ON_CPU = frozenset({"triton"})


class NotApplicable(Exception):
    """The candidate cannot run this kind of workload (e.g. ONNX export of a training step)."""


class Candidate:
    """Base class: ``prepare(case, threads)`` → ``call``; ``to_numpy(result)`` → arrays."""

    key = ""  # command-line name
    label = ""  # column name
    anchor = False
    note: str | None = None  # a remark for the report (e.g. an exporter fallback)
    timed = True  # False: correctness only (interpreters)

    def preload(self) -> None:
        """Import what ``prepare`` needs, so a cold-compile timing excludes library imports."""

    def prepare(self, case: Case, threads: int) -> Callable[[], Any]:
        raise NotImplementedError

    def to_numpy(self, result: Any) -> list[np.ndarray]:
        items = result if isinstance(result, (tuple, list)) else (result,)
        return [_numpy(r) for r in items]

    def kernels_per_call(self) -> int | None:
        return None


def _numpy(value) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    return np.asarray(value)


class TorchCandidate(Candidate):
    """Runs the torch function, wrapped by :meth:`wrap` (identity: eager)."""

    def wrap(self, fn: Callable) -> Callable:
        return fn

    def prepare(self, case: Case, threads: int) -> Callable[[], Any]:
        if case.make_step is not None:  # the whole step, optimizer included, is the wrapped function
            step, data = self.wrap(case.make_step()), case.inputs
            return lambda: step(*data)
        fn = self.wrap(case.torch_fn)
        if not case.training:
            inputs = case.inputs
            return lambda: fn(*inputs)
        data = case.inputs[:case.n_data]
        # own leaf copies: gradients of different candidates never mix
        params = [p.detach().clone().requires_grad_(True) for p in case.inputs[case.n_data:]]

        def step():
            for p in params:
                p.grad = None
            loss = fn(*data, *params)
            loss.backward()
            return (loss.detach(), *[p.grad for p in params])

        return step


class TorchEager(TorchCandidate):
    key, label, anchor = "eager", "torch eager", True


class Inductor(TorchCandidate):
    key, label, anchor = "inductor", "inductor", True

    def preload(self):
        import torch._dynamo  # noqa: F401
        import torch._inductor.compile_fx  # noqa: F401

    def wrap(self, fn):
        return torch.compile(fn, backend="inductor", dynamic=False)



class JaxJit(Candidate):
    key, label, anchor = "jax", "jax.jit", True

    def preload(self):
        import jax

        jax.devices("cpu")

    def prepare(self, case: Case, threads: int) -> Callable[[], Any]:
        import jax

        if case.jax_fn is None:
            raise NotApplicable("the workload is a torch optimizer's whole step; it has no JAX version")
        device = jax.devices("cpu")[0]
        arrays = [jax.device_put(t.detach().numpy(), device) for t in case.inputs]
        fn = jax.jit(case.jax_fn)
        if case.training:
            def call():
                loss, grads = fn(*arrays)
                return jax.block_until_ready((loss, *grads))
            return call
        return lambda: fn(*arrays).block_until_ready()


class _AsModule(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


@contextlib.contextmanager
def quiet():
    """The exporters print progress and warnings; keep the benchmark's output readable."""
    logger = logging.getLogger("torch.onnx")
    level = logger.level
    logger.setLevel(logging.ERROR)
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        try:
            yield
        finally:
            logger.setLevel(level)


def export_onnx(case: Case) -> tuple[bytes, str | None]:
    """The case's torch function as ONNX bytes, and a note when dynamo=True had to be dropped."""
    names = [f"in{i}" for i in range(len(case.inputs))]
    module = _AsModule(case.torch_fn).eval()
    try:
        with quiet():
            program = torch.onnx.export(module, case.inputs, input_names=names, dynamo=True)
        return program.model_proto.SerializeToString(), None
    except Exception as exc:  # noqa: BLE001 - any exporter failure falls back, with a note
        note = f"torch.onnx.export(dynamo=True) failed ({type(exc).__name__}: {str(exc)[:120]}); used dynamo=False"
        print(f"note: {note}")
        buffer = io.BytesIO()
        with quiet():
            torch.onnx.export(module, case.inputs, buffer, input_names=names, dynamo=False)
        return buffer.getvalue(), note


class OnnxRuntime(Candidate):
    key, label, anchor = "ort", "onnx+ORT", True

    def preload(self):
        import onnxruntime  # noqa: F401
        import torch.onnx._internal.exporter._core  # noqa: F401

    def prepare(self, case: Case, threads: int) -> Callable[[], Any]:
        if case.training:
            raise NotApplicable("torch.onnx.export exports inference graphs only")
        model, self.note = export_onnx(case)
        arrays = {f"in{i}": np.ascontiguousarray(t.detach().numpy()) for i, t in enumerate(case.inputs)}
        return bound_ort_call(model, arrays, threads)


def bound_ort_call(model: bytes, arrays: Mapping[str, np.ndarray], threads: int,
                   disabled_optimizers: Sequence[str] = ()) -> Callable[[], list[np.ndarray]]:
    """A call of ``model`` in a fresh ORT session, with every input and output bound once by pointer."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 4
    # Pool threads wait asleep, as parity's own sessions do (backends/onnx/backend.py): on a
    # few cores a spinning pool takes the core the next candidate in the round needs.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"],
                                   disabled_optimizers=list(disabled_optimizers))
    # one plain run gives the output shapes; then everything is bound once, by pointer
    feeds = {meta.name: arrays[meta.name] for meta in session.get_inputs()}
    outputs = [np.empty_like(o) for o in session.run(None, feeds)]
    binding = session.io_binding()
    for name, array in feeds.items():
        binding.bind_input(name, "cpu", 0, array.dtype, array.shape, array.ctypes.data)
    for meta, out in zip(session.get_outputs(), outputs):
        binding.bind_output(meta.name, "cpu", 0, out.dtype, out.shape, out.ctypes.data)

    def call():
        session.run_with_iobinding(binding)
        return outputs

    call.keep = (session, feeds, binding)  # bound pointers must stay alive
    return call


class Parity(TorchCandidate):
    """``parity.compile(fn, backend=NAME)``, called exactly as a user calls it."""

    anchor = False

    def __init__(self, backend: str):
        self.backend = backend
        self.key = self.label = f"parity[{backend}]"  # not the bare name: "inductor" is also an anchor
        self.timed = backend not in INTERPRETED_ON_CPU  # the bench runs on CPU only
        self._before: set[int] = set()

    def preload(self):
        import torch._dynamo  # noqa: F401

        from parity.backends.registry import backend_names, get_backend
        from parity.frontend import api  # noqa: F401

        # auto is not a backend: it compiles on every installed one (frontend/auto.py)
        for name in backend_names() if self.backend == "auto" else [self.backend]:
            get_backend(name)

    def wrap(self, fn):
        import parity

        self._before = {id(e) for e in _frontend_executables()}
        return parity.compile(fn, backend=self.backend, device="cpu")

    def kernels_per_call(self) -> int | None:
        """Sum of ``kernels_per_call`` over the executables compiled for this workload."""
        new = [e for e in _frontend_executables() if id(e) not in self._before]
        counts = [getattr(e, "kernels_per_call", None) for e in new]
        if not counts or any(c is None for c in counts):
            return None
        return int(sum(counts))


def _frontend_executables() -> list:
    # the frontend keeps its executables in a cache keyed by (IR hash, backend, device)
    from parity.frontend import compiled_graph

    return list(getattr(compiled_graph, "_EXECUTABLES", {}).values())


ANCHORS: dict[str, type[Candidate]] = {c.key: c for c in (TorchEager, Inductor, JaxJit, OnnxRuntime)}


def make_candidate(key: str) -> Candidate:
    """An anchor by key (eager, inductor, jax, ort), or ``parity[NAME]`` for a parity backend
    (a bare backend name is accepted where no anchor has it)."""
    if key.startswith("parity[") and key.endswith("]"):
        return Parity(key[len("parity["):-1])
    cls = ANCHORS.get(key)
    return cls() if cls is not None else Parity(key)
