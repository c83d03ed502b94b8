"""The inductor backend: IR graphs traced to ATen FX graphs and compiled by TorchInductor.

``compile(graph, device)`` returns an :class:`InductorExecutable`. A static graph is traced to
ATen (:func:`~.lowering.to_fx`) and compiled with Inductor's ``compile_fx`` right there: C++/OpenMP
kernels on CPU (a C++ compiler is needed), Triton kernels on CUDA. A graph with symbolic dims is
traced once with symbolic sizes at its first call and compiled to dynamic kernels that serve every
later size (:mod:`.symbolic`); sizes 0 and 1, and sizes a kernel's guards do not admit, compile per
shape, as does a graph with no symbolic form (one :class:`PerShapeCompileWarning` says why).
Compiled graphs are kept by the backend per (graph content hash, device, shapes or size hints), so
a graph is never compiled twice in a process; Inductor's own on-disk caches
(``$TORCHINDUCTOR_CACHE_DIR``) make a second process's compile cheaper.

Inductor's global configuration is never changed: each compile runs inside
``torch._inductor.config.patch`` with :data:`.compiling.INDUCTOR_CONFIG`.

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, i32
    >>> b = GraphBuilder(); x = b.input(i32[2])
    >>> run = InductorBackend().compile(b.build([b.div(x, b.constant(np.array([2, 0], np.int32)))]), "cpu")
    >>> run(np.array([-7, 7], np.int32))[0].tolist()  # truncates toward zero; x / 0 is -1 (the IR's rule)
    [-3, -1]
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from ...ir.dtypes import DType
from ...ir.errors import ParityError
from ...ir.graph import Graph
from ...ir.ops import OP_TABLE
from ...ir.passes import decompose
from ...ir.shapes import ShapeBindings
from ..base import Backend, CompilePrior, OpClaim, check_not_declined
from ..cache import BuildOnceCache
from ..program_compiles import compiling_for_a_program
from .compiling import compile_kernel, compile_symbolic_kernel, in_fresh_thread
from .context import TORCH_DTYPES, U32_MASK
from .deviations import DEVIATIONS, UNSUPPORTED
from .in_place import writable_outputs
from .lowering import CLAIM_PREDICATES, LOWERINGS, as_tensor, declined
from .symbolic import DynamicKernel, NoSymbolicForm, no_symbolic_form

# The torch dtype a caller's tensor has for each IR dtype (u32 is torch.uint32 outside).
_USER_DTYPES = {**TORCH_DTYPES, DType.uint32: torch.uint32}


# Size values (i64[] inputs a frontend adds) whose tensors InductorExecutable.guarded keeps per executable
_SIZE_VALUES_KEPT = 4096


class PerShapeCompileWarning(UserWarning):
    """A graph with symbolic dims compiles per concrete shape on inductor (it has no symbolic form)."""


class InductorDeviceError(ParityError):
    """The requested device is not available to the inductor backend here."""


class InductorExecutable:
    """A graph compiled by Inductor, per set of input shapes; call it with arrays or tensors.

    Takes NumPy arrays or torch tensors (of the IR dtypes; on the executable's device) and
    returns torch tensors on that device that never alias the inputs.
    """

    takes_torch_tensors = True  # CompiledGraph hands over its tensors as they are

    def __init__(self, backend: InductorBackend, graph: Graph, device: str, key: str,
                 writes: dict[int, int] | None = None):
        """``key``: the content hash of the graph given to compile (``graph`` is it decomposed);
        ``writes``: outputs computed into the input they update (:meth:`in_place`)."""
        self.backend = backend
        self.graph = graph
        self.device = device
        self._key = key
        # (output, input) pairs in output order, worked out once: _finish inserts them per call
        self._writes = tuple(sorted((writes or {}).items()))
        # a frontend's compile: a static graph's code is kept in Inductor's caches for the next process
        self._for_a_program = compiling_for_a_program()
        # shapes -> [compiled callable, which outputs alias an input (None before its first call)]
        self._compiled: dict[tuple, list] = {}
        # What each call checks, worked out once (a decode step passes ~30 tensors per call).
        self._device_type = torch.device(device).type
        self._input_types = tuple((_USER_DTYPES[v.type.dtype], v.type.dtype is DType.uint32) for v in graph.inputs)
        self._u32_outputs = tuple(v.type.dtype is DType.uint32 for v in graph.outputs)

    def __call__(self, *inputs: Any) -> list[torch.Tensor]:
        if len(inputs) != len(self._input_types):
            raise ParityError(f"@{self.graph.name} takes {len(self.graph.inputs)} inputs, got {len(inputs)}")
        return self._run(inputs)

    def _run(self, inputs: Sequence[Any]) -> list[torch.Tensor]:
        # No detach per input: Inductor's compiled call returns results with no autograd history
        # even from inputs that require grad in grad mode (test_results_carry_no_autograd_history).
        on_cpu = self._device_type == "cpu"
        tensors = []
        for x, (want, u32) in zip(inputs, self._input_types):  # the common case inline (~30 inputs a decode step)
            if isinstance(x, torch.Tensor) and x.dtype is want and not u32 and (x.is_cpu if on_cpu else x.is_cuda):
                tensors.append(x.contiguous())
            else:
                tensors.append(self._tensor(x, len(tensors)))
        return self._finish(self._entry(tensors), tensors)

    def _entry(self, tensors: list[torch.Tensor]) -> list:
        """[the compiled callable for these inputs' shapes, which results alias an input or None]."""
        shapes = tuple([t.shape for t in tensors])  # torch.Size hashes and compares as the tuple it is
        entry = self._compiled.get(shapes)
        if entry is None:
            entry = self._compiled[shapes] = [self._kernel_for(shapes), None]
        return entry

    def _finish(self, entry: list, tensors: list[torch.Tensor]) -> list[torch.Tensor]:
        results = entry[0](tensors)
        if self._writes:  # the written outputs are their inputs, updated (the graph returns the rest)
            results = list(results)
            for k, i in self._writes:
                results.insert(k, tensors[i])
        if entry[1] is None:
            written = {k for k, _ in self._writes}
            flags = _aliasing(results, tensors)  # (a written output, None: returned as it is)
            entry[1] = tuple(None if k in written else f for k, f in enumerate(flags))
        return [r if alias is None else self._result(r, u32, alias)
                for r, u32, alias in zip(results, self._u32_outputs, entry[1])]

    def in_place(self, pairs: dict[int, int]) -> InductorExecutable | None:
        """This executable for a caller whose input ``i`` is updated with output ``k``
        (``pairs[k] = i``: a static KV cache, frontend/input_updates.py), or None where no pair
        can be: Inductor computes each such output into the input tensor's own memory, and the
        call returns that tensor itself as the output (the caller's write-back finds the same
        tensor). Only outputs that scatter into their input (in_place.py), not u32 inputs (they
        are converted to a carrier). A caller must not read such an input afterwards expecting
        its old value: that is what "updated" means. An input that is not contiguous is updated
        in a contiguous copy, which is returned (the caller's write-back copies it)."""
        writable = writable_outputs(self.graph)
        pairs = {k: i for k, i in pairs.items() if writable.get(k) == i and not self._input_types[i][1]}
        if not pairs:
            return None
        variant = InductorExecutable(self.backend, self.graph, self.device, self._key, writes=pairs)
        variant._for_a_program = self._for_a_program
        if all(v.type.is_static for v in self.graph.inputs):  # compiled here, as compile() does
            shapes = tuple(tuple(v.type.shape) for v in self.graph.inputs)
            variant._compiled[shapes] = [self.backend.compiled(self.graph, self._key, self.device, shapes,
                                                               variant._writes, self._for_a_program), None]
        return variant

    def guarded(self, checked: int, picks: tuple[int, ...] | None = None):
        """:meth:`__call__` for a caller whose guards have checked the dtypes, devices and static
        sizes of the first ``checked`` inputs (Dynamo's, through the frontend's CompiledGraph; the
        rest, arrays the frontend adds, are converted as ``__call__`` does), as a function of the
        inputs: no per-input checks, and the compiled kernel looked up by the values of the
        graph's distinct symbolic dims alone (one or two numbers a decode step, where the full
        key is ~30 shapes). None where a checked input needs converting (u32 is carried in int64).
        With ``picks`` (one per input, all checked), a function of the caller's boxed argument
        list instead, input ``i`` being ``args[picks[i]]``: no tuple of the inputs built.

        The guards make the lookup sound: inputs of the graph's types whose symbolic dims have
        the same values have the same shapes, so they take the kernel ``__call__`` would. From
        the second call at a size, where the results need nothing of :meth:`_finish` (no input
        written, no u32 result, none aliasing an input) and grad mode is off, Inductor's code is
        called from here (:meth:`.direct_call.Kernel.direct_parts`): a decode step's call runs
        two frames of parity's where it ran five.
        """
        if any(u32 for _, u32 in self._input_types[:checked]):
            return None
        first = {}  # each distinct symbolic dim expression -> where it first appears: (input, axis)
        for i, v in enumerate(self.graph.inputs):
            for axis, dim in enumerate(v.type.shape):
                if not isinstance(dim, int):
                    first.setdefault(str(dim), (i, axis))
        positions = tuple(first.values())
        plain = not self._writes and not any(self._u32_outputs)  # _finish may only clone a result
        by_sizes: dict[tuple, list] = {}  # sizes -> [entry (_entry's), direct parts (False: none), None: not yet]

        def sized(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
            key = tuple([tensors[i].shape[axis] for i, axis in positions])
            found = by_sizes.get(key)
            if found is not None and found[1] and not torch.is_grad_enabled():
                inner, constants, lock = found[1]
                if constants:
                    tensors += constants
                with lock:
                    results = inner.current_callable(tensors)  # (empties the list: nothing reads it after)
                return [r if r.is_contiguous() else r.clone(memory_format=torch.contiguous_format) for r in results]
            if found is None:
                found = by_sizes[key] = [self._entry(tensors), None]
            outputs = self._finish(found[0], tensors)
            if found[1] is None:  # decided once, after the first call at these sizes: parts, or False
                parts = getattr(found[0][0], "direct_parts", None) if plain and not any(found[0][1]) else None
                found[1] = (parts() if parts is not None else None) or False
            return outputs

        if picks is not None:
            return lambda args: sized([args[j].contiguous() for j in picks])

        # The i64[] inputs after the checked ones are sizes used as values (frontend/compiled_graph.py:
        # a decode step's ALiBi slice start, MPT): each value's tensor is made once and kept (the
        # graph never writes into it; a result that is one is cloned by _finish), where converting
        # the NumPy scalar cost more than a dict lookup. At most _SIZE_VALUES_KEPT values.
        scalars = frozenset(i for i, v in enumerate(self.graph.inputs[checked:], checked)
                            if v.type.dtype is DType.int64 and v.type.shape == ())
        kept: dict[tuple[int, int], torch.Tensor] = {}

        def extra(i: int, x: Any) -> torch.Tensor:
            if i not in scalars or type(x) is not np.ndarray or x.dtype != np.int64:
                return self._tensor(x, i)
            tensor = kept.get((i, int(x)))
            if tensor is None:
                tensor = self._tensor(x, i)
                if len(kept) < _SIZE_VALUES_KEPT:
                    kept[(i, int(x))] = tensor
            return tensor

        def run(*inputs):
            tensors = [x.contiguous() for x in inputs[:checked]]
            if len(inputs) > checked:
                tensors += [extra(i, x) for i, x in enumerate(inputs[checked:], checked)]
            return sized(tensors)

        return run

    @property
    def compiles_per_shape(self) -> bool:
        """Whether this graph, with symbolic dims, compiles again for each new shape: it has no
        symbolic form on inductor (:meth:`InductorBackend.per_shape_reason` says why)."""
        return self.backend.per_shape_reason(self.graph, self._key, self.device) is not None

    def _kernel_for(self, shapes: tuple):
        """The compiled graph for a first call at ``shapes``: the graph's dynamic kernel where it
        has one that admits these sizes (sizes 0 and 1 are specialised, as torch does), else a
        compile at these shapes."""
        if all(v.type.is_static for v in self.graph.inputs):
            return self.backend.compiled(self.graph, self._key, self.device, shapes, self._writes,
                                         self._for_a_program)
        bindings = ShapeBindings(error=ParityError)
        bindings.bind_inputs(self.graph, shapes)  # a shape the graph cannot take fails here
        sizes = bindings.sizes
        why = self.backend.per_shape_reason(self.graph, self._key, self.device)
        if why is not None:
            self.backend.record_per_shape(self.graph, self._key, self.device, why)
        elif min(sizes.values(), default=2) >= 2:
            kernel = self.backend.dynamic(self.graph, self._key, self.device, sizes, self._writes)
            if kernel is not None:
                return kernel
        return self.backend.compiled(self.graph, self._key, self.device, shapes, self._writes,
                                     self._for_a_program)

    def _tensor(self, x: Any, i: int) -> torch.Tensor:
        want, u32 = self._input_types[i]
        if isinstance(x, torch.Tensor):
            if x.dtype != want or x.device.type != self._device_type:
                self._reject(x, i)
            x = x.contiguous()
            return (x.view(torch.int32).to(torch.int64) & U32_MASK) if u32 else x
        dtype = self.graph.inputs[i].type.dtype
        array = np.asarray(x)
        if array.dtype != dtype.numpy:
            raise ParityError(f"input {i} of @{self.graph.name} has dtype {array.dtype}, expected {dtype.short}; "
                              f"convert it before the call (parity never converts inputs implicitly)")
        return as_tensor(array, dtype).to(self.device)

    def _reject(self, x: torch.Tensor, i: int):
        if x.dtype != self._input_types[i][0]:
            raise ParityError(f"input {i} of @{self.graph.name} is a {x.dtype} tensor, expected "
                              f"{self.graph.inputs[i].type.dtype.short}; convert it before the call (parity never "
                              f"converts inputs implicitly)")
        raise ParityError(f"input {i} of @{self.graph.name} is on {x.device}, but this executable runs "
                          f"on {self.device}; move it with .to({self.device!r})")

    @staticmethod
    def _result(r: torch.Tensor, u32: bool, alias: bool) -> torch.Tensor:
        if u32:
            return r.to(torch.int32).view(torch.uint32)  # a fresh tensor: the low 32 bits
        if alias or not r.is_contiguous():
            return r.clone(memory_format=torch.contiguous_format)  # a view of an input (reshape, slice, ...)
        return r


def _aliasing(results: Sequence[torch.Tensor], inputs: Sequence[torch.Tensor]) -> tuple[bool, ...]:
    """Which of a compiled graph's results share memory with an input, on its first call.

    Inductor's generated code is straight-line: a result is an input (or a view of one:
    a reshape, a no-op convert Inductor removed) in every call, or a buffer it allocates in
    every call. So the first call's answer holds for the compiled graph, and later calls skip
    the per-result scan over every input (a decode step passes ~30 tensors).
    """
    storages = {t.untyped_storage().data_ptr() for t in inputs if t.numel()}
    return tuple(r.numel() > 0 and r.untyped_storage().data_ptr() in storages for r in results)


class InductorBackend(Backend):
    """Lowers every primitive to ATen and compiles it with TorchInductor."""

    name = "inductor"
    devices = ("cpu", "cuda")
    deviations = DEVIATIONS
    declined_cells = UNSUPPORTED
    # A symbolic graph is traced once with symbolic sizes and compiled to dynamic kernels that serve
    # every size (symbolic.py). A graph that has no symbolic form compiles per concrete shape, with
    # a warning: compiles_per_shape_for says which graphs (auto reads it per graph).
    compiles_per_shape = False
    # A cold compile generates and builds C++ (g++) and, first in a process, loads Inductor.
    compile_priors = (CompilePrior("cpu", per_graph_s=10.0, per_node_s=0.1,
                                   basis="measured per graph on cpu, docs/frontend.md (auto's budget)"),)
    # Conformance compiles 32 op × dtype bundles as one graph: one g++ build instead of 32 (the
    # build's fixed cost dominates a small bundle's compile; docs/conformance.md, "The quick run's cost").
    compile_batch = 32

    def __init__(self):
        self._graphs = BuildOnceCache()
        self._kernels: dict[tuple, list[DynamicKernel]] = {}  # (graph hash, device, writes) -> kernels
        self._no_symbolic_form: dict[tuple[str, str], str] = {}  # (graph hash, device) -> why
        self._lock = threading.Lock()

    @property
    def compile_count(self) -> int:
        """Graphs (per set of input shapes) Inductor compiled for this backend (tests watch it)."""
        return self._graphs.builds

    def claims(self):
        out = {}
        for name in LOWERINGS:
            opdef = OP_TABLE[name]
            out[name] = OpClaim(frozenset(d for d in opdef.dtypes
                                          if (name, d) not in UNSUPPORTED and d not in self.declined_dtypes),
                                when=CLAIM_PREDICATES.get(name))
        return out

    def available_devices(self) -> tuple[str, ...]:
        return ("cpu", "cuda") if torch.cuda.is_available() else ("cpu",)

    def compile(self, graph: Graph, device: str = "cpu") -> InductorExecutable:
        if device not in self.devices:
            raise InductorDeviceError(f"the inductor backend has no device {device!r}; choose one of {list(self.devices)}")
        if device not in self.available_devices():
            raise InductorDeviceError(f"device {device!r} is not available to the inductor backend: torch here "
                                      f"sees no CUDA device. Use device='cpu'.")
        check_not_declined(self, graph)
        key = graph.content_hash()  # of the graph as given: what compiles_per_shape_for is asked about
        graph, _ = decompose(graph, claimed=lambda op: op in LOWERINGS, declined=declined)
        executable = InductorExecutable(self, graph, device, key)
        if all(v.type.is_static for v in graph.inputs) and not writable_outputs(graph):
            # Inductor's compile is the expensive part: do it here, where callers (auto's budget,
            # the disk cache) time a compile, not at the first call. A symbolic graph compiles at its
            # first call: that call's sizes are the hints Inductor compiles its dynamic kernels for.
            # A graph that updates an input (a static KV cache) compiles at its first call too: a
            # frontend may first ask for it in place (InductorExecutable.in_place), a compile of its own.
            shapes = tuple(tuple(v.type.shape) for v in graph.inputs)
            executable._compiled[shapes] = [self.compiled(graph, executable._key, device, shapes,
                                                          for_a_program=executable._for_a_program), None]
        return executable

    def compiled(self, graph: Graph, key: str, device: str, shapes: tuple, writes: tuple = (),
                 for_a_program: bool = False):
        """The Inductor-compiled callable of ``graph`` at ``shapes`` (built once per process), with
        ``writes`` ((output, input) pairs) computed into their inputs (in_place.py); ``for_a_program``:
        the code is also kept in Inductor's caches for the next process (backends/program_compiles.py)."""
        return self._graphs.get_or_build(
            (key, device, shapes, writes), lambda: in_fresh_thread(compile_kernel, graph, device, shapes, writes, for_a_program))

    def compiles_per_shape_for(self, graph: Graph, device: str = "cpu") -> bool:
        """Whether ``graph``, with symbolic dims, compiles again for each concrete shape on ``device``:
        a size symbol is no input's whole dim (known before any trace), or a trace in this process
        found an op that needs a size as a number. ``backend="auto"`` reads it per graph."""
        return self.per_shape_reason(graph, graph.content_hash(), device) is not None

    def per_shape_reason(self, graph: Graph, key: str, device: str) -> str | None:
        """Why ``graph``, with symbolic dims, compiles per concrete shape on ``device``; None when it
        has a symbolic form as far as known so far, or is static (it has one shape)."""
        if all(v.type.is_static for v in graph.inputs):
            return None
        return self._no_symbolic_form.get((key, device)) or no_symbolic_form(graph)

    def dynamic(self, graph: Graph, key: str, device: str, sizes: dict[str, int],
                writes: tuple = ()) -> DynamicKernel | None:
        """A dynamic kernel of ``graph`` whose guards admit ``sizes``, compiled with them as hints
        when none does yet; None when the graph has no symbolic form (warned once, with why).
        ``writes``: as for :meth:`compiled`."""
        variant = (key, device, writes)
        with self._lock:
            kernels = list(self._kernels.get(variant, ()))
        for kernel in kernels:
            if kernel.fits(sizes):
                return kernel

        def build(hints: dict[str, int]) -> DynamicKernel:
            return self._graphs.get_or_build((*variant, "symbolic", tuple(sorted(hints.items()))),
                                             lambda: in_fresh_thread(compile_symbolic_kernel, graph, device, hints, writes))

        try:
            kernel = build(sizes)
        except NoSymbolicForm as exc:
            # These sizes may be special to the graph (B = 2 makes B - 1 a size 1, which torch
            # specialises): trace at larger hints, multiples of these (a size that must divide by 3
            # still does). Only a graph that fixes a size there too has no symbolic form.
            larger = {name: size * 8 for name, size in sizes.items()}
            if any(k.fits(larger) for k in kernels):
                return None  # a kernel serves the larger sizes: these ones compile on their own
            try:
                kernel = build(larger)
            except NoSymbolicForm:
                self.record_per_shape(graph, key, device, str(exc))
                return None
        with self._lock:
            known = self._kernels.setdefault(variant, [])
            if kernel not in known:
                known.append(kernel)
        return kernel if kernel.fits(sizes) else None

    def record_per_shape(self, graph: Graph, key: str, device: str, why: str) -> None:
        """Record that ``graph`` compiles per shape on ``device``, and why; warn the first time."""
        with self._lock:
            first = (key, device) not in self._no_symbolic_form
            self._no_symbolic_form[(key, device)] = why
        if first:
            warnings.warn(PerShapeCompileWarning(
                f"the inductor backend compiles @{graph.name} again for each new input shape: {why}, so it has no "
                f"symbolic form with dynamic kernels.\n  fix: nothing is needed for correct results; each new size costs "
                f"a compile (seconds). For sizes that change every call, choose backend='onnx' or 'reference', or "
                f"keep the sizes fixed (dynamic=False)"), stacklevel=2)
