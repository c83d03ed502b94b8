"""The ONNX backend's executable: a graph bound to an onnxruntime session, called through
IOBinding.

Inputs (NumPy arrays or CPU torch tensors, bfloat16 included) are bound in place, and
outputs are NumPy arrays allocated here and bound as ORT's output buffers, so nothing is
copied on the way in or out (docs/backends/onnx.md has the per-call measurements).

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, f32
    >>> from parity.backends.onnx.backend import OnnxBackend
    >>> b = GraphBuilder(); x = b.input(f32[2])
    >>> run = OnnxBackend().compile(b.build([b.add(x, x)]), "cpu")
    >>> isinstance(run, OnnxExecutable), run(np.array([1, 2], np.float32))[0].tolist()
    (True, [2.0, 4.0])
"""

from __future__ import annotations

import math
import sys
import threading
from typing import Any

import numpy as np
import onnxruntime as ort

from ...ir.dtypes import DType
from ...ir.errors import ParityError
from ...ir.graph import Graph
from ...ir.shapes import ShapeBindings
from .complex_numbers import carrier_type
from .emitter import ONNX_DTYPES

_NUMPY = {dtype: dtype.numpy for dtype in DType}

# Outputs at least this large are written by ORT straight into fresh NumPy arrays bound as
# its output buffers (binding costs ~7 µs); smaller ones are copied out of ORT's buffer
# (~1 µs). ORT reuses its own output buffers between runs, so views of them are never returned.
_BIND_OUTPUT_BYTES = 1 << 16
# Input shapes a symbolic graph remembers its output shapes for (a decode loop meets one per token).
_OUTPUT_SHAPES_KEPT = 4096


class OnnxExecutable:
    """A graph bound to an onnxruntime session; call it with arrays or CPU torch tensors.

    Inputs are bound in place (no copy); an input passed again as the same object is not
    bound again (a torch tensor: if it still has the same memory, shape, dtype and is
    contiguous; binding has a cost per input, and a model's parameters come back every call:
    docs/backends/onnx.md).
    Returns NumPy arrays that are the caller's alone: never views of the inputs or of ORT's
    reused buffers, and a large output's array is written again only once the caller has
    dropped every reference to it.
    """

    def __init__(self, graph: Graph, device: str, session: ort.InferenceSession, *,
                 writable_inputs: dict[int, int] | None = None):
        self.graph = graph
        self.device = device
        self.session = session
        self._writable = writable_inputs or {}  # see writable_inputs(); in_place() picks from them
        self._in_place: dict[int, int] = {}  # output -> input written in place (an in_place() copy's)
        # ONNX types: a complex value travels as its float carrier [..., 2] (complex_numbers.py)
        self._in = [(f"in{i}", carrier_type(v.type)) for i, v in enumerate(graph.inputs)]
        self._out = [(f"out{i}", carrier_type(v.type)) for i, v in enumerate(graph.outputs)]
        self._complex_in = [v.type.dtype if v.type.dtype.is_complex else None for v in graph.inputs]
        self._complex_out = [v.type.dtype if v.type.dtype.is_complex else None for v in graph.outputs]
        self._any_complex_out = any(self._complex_out)  # read per call: computed once
        self._ir_in = [v.type for v in graph.inputs]  # the caller's types (a complex input: before its carrier)
        self._static = all(t.is_static for _, t in self._in)
        self._static_in = [t.is_static for t in self._ir_in]  # checked when bound; the others per call below
        self._symbolic_in = tuple(i for i, t in enumerate(self._ir_in) if not t.is_static)
        # Outputs ORT allocates (and we copy out): bound once per thread when shapes are static.
        self._copied = [self._static and not _bind_buffer(t.dtype, t.shape) for _, t in self._out]
        # inputs a torch tensor may be bound for by address (not complex, not bfloat16), and the
        # tensor dtype each one takes (set at the first tensor call: torch is not imported here)
        self._by_pointer = [t.dtype is not DType.bfloat16 and c is None for (_, t), c in zip(self._in, self._complex_in)]
        self._onnx_in = [ONNX_DTYPES[t.dtype] for _, t in self._in]
        self._local = threading.local()  # one IOBinding per thread
        self._output_shapes: dict[tuple, list[list[int]]] = {}  # symbolic graphs: input shapes -> output shapes
        # CompiledGraph hands a CPU executable torch tensors as they are (see the class
        # docstring); for another device it converts them to host arrays first
        self.takes_torch_tensors = device == "cpu"
        # Results are arrays made for the call (copied out of ORT, or bound buffers nothing else
        # holds: _run_recycled), so the frontend wraps them without checks (CompiledGraph.positional).
        self.fresh_results = True

    def _binding(self):
        local = self._local
        if not hasattr(local, "binding"):
            binding = local.binding = self.session.io_binding()
            local.bound = [None] * len(self._in)  # (array, shape) bound to each input last time
            for (name, _), copied in zip(self._out, self._copied):
                if copied:
                    binding.bind_output(name, "cpu")
            # The pybind objects under ORT's Python wrappers, which cost a measurable share of a
            # tiny graph's call (docs/backends/onnx.md); the public API is the fallback.
            raw, sess = getattr(binding, "_iobinding", None), getattr(self.session, "_sess", None)
            if raw is not None and sess is not None and hasattr(sess, "run_with_iobinding"):
                options = ort.RunOptions()
                local.bind_input = raw.bind_input
                local.bind_ortvalue = lambda name, value: raw.bind_ortvalue_input(name, value._ortvalue)
                local.run = lambda: sess.run_with_iobinding(raw, options)
                local.copy_out = raw.copy_outputs_to_cpu
                # the wrapper makes an OrtDevice per bind_output: a fifth of a decode step's
                # binding (5 outputs of symbolic shape, rebound every call)
                cpu = ort.OrtDevice.make("cpu", 0)._get_c_device()
                local.clear_outputs = raw.clear_binding_outputs
                local.bind_output = lambda name: raw.bind_output(name, cpu)
                local.bind_output_buffer = lambda name, dtype, shape, ptr: raw.bind_output(name, cpu, dtype,
                                                                                          shape, ptr)
                local.bind_pointer = lambda name, dtype, shape, ptr: raw.bind_input(name, cpu, dtype, shape, ptr)
            else:
                local.bind_input = binding.bind_cpu_input
                local.bind_ortvalue = binding.bind_ortvalue_input
                local.run = lambda: self.session.run_with_iobinding(binding)
                local.copy_out = binding.copy_outputs_to_cpu
                local.clear_outputs = binding.clear_binding_outputs
                local.bind_output = binding.bind_output
                local.bind_output_buffer = lambda name, dtype, shape, ptr: binding.bind_output(name, "cpu", 0, dtype,
                                                                                              shape, ptr)
                local.bind_pointer = None
        return local

    def __call__(self, *inputs: Any) -> list[np.ndarray]:
        if len(inputs) != len(self._in):
            raise ParityError(f"@{self.graph.name} takes {len(self._in)} inputs, got {len(inputs)}")
        local = self._local if hasattr(self._local, "binding") else self._binding()
        bound = local.bound
        keep = []  # buffers that must outlive the run
        for i, value in enumerate(inputs):
            last = bound[i]
            if last is not None and last[0] is value:
                # the same array or tensor as last call, still over the bound buffer (inlined: a
                # decode step checks its ~30 parameters here every call)
                buffer = last[2]
                if value.shape == last[1] and (buffer is None or (
                        value.data_ptr() == buffer[0] and value.dtype is buffer[1] and value.is_contiguous())):
                    continue
            if local.bind_pointer is not None and self._by_pointer[i] and _plain_cpu_tensor(value) \
                    and _torch_dtype_name(value.dtype) == self._in[i][1].dtype.name:
                # a contiguous CPU tensor of the graph's dtype: ORT reads its memory by address,
                # without the NumPy view and ORT's conversion of it (a third of a decode step's
                # binding, where the KV cache's tensors are new every call)
                if self._static_in[i] and tuple(value.shape) != self._ir_in[i].shape:
                    raise ParityError(f"input {i} of @{self.graph.name} has shape {list(value.shape)}, "
                                      f"expected {self._ir_in[i]}")
                local.bind_pointer(self._in[i][0], self._onnx_in[i], value.shape, value.data_ptr())
                bound[i] = (value, value.shape, (value.data_ptr(), value.dtype))
                continue
            name, t = self._in[i]
            complex_dtype = self._complex_in[i]
            array = _as_array(value, complex_dtype or t.dtype, i, self.graph.name)
            if self._static_in[i] and array.shape != self._ir_in[i].shape:
                raise ParityError(f"input {i} of @{self.graph.name} has shape {list(array.shape)}, "
                                  f"expected {self._ir_in[i]}")
            if complex_dtype is not None:
                array = _carrier(array, complex_dtype)
            keep.append(array)
            if t.dtype is DType.bfloat16:  # no NumPy buffer format ORT knows: its raw bits, typed
                raw = ort.OrtValue.ortvalue_from_numpy_with_onnx_type(array.view(np.uint16), ONNX_DTYPES[t.dtype])
                keep.append(raw)
                local.bind_ortvalue(name, raw)
            else:
                local.bind_input(name, array)  # zero-copy: ORT reads the array's buffer
            # a complex input's carrier is a view the caller does not hold: bound again each call
            bound[i] = (value, value.shape, _buffer(value)) if (
                complex_dtype is None and _is_view_of(array, value, t.dtype)) else None
        if self._static:
            if self._in_place:
                return self._run_in_place(local, inputs)
            if all(self._copied):  # small outputs: bound once, copied out
                local.run()
                return self._complex(local.copy_out())
            return self._complex(self._run_recycled(local))
        return self._complex(self._run_general(local, inputs))

    def in_place(self, pairs: dict[int, int]) -> OnnxExecutable | None:
        """This executable for a caller whose input ``i`` is updated in place with output ``k``
        (``pairs[k] = i``: an input a step mutates, a static KV cache), or None where no pair can
        be written in place. ORT writes each such output straight into the input tensor's own
        memory, and the call returns that tensor itself as the output: no output buffer, no copy
        out, and the caller's write-back (``cache.copy_(out)``) finds the same tensor and copies
        nothing. Only the pairs :func:`writable_inputs` found safe in the model (a scatter into
        an input nothing else reads), for static graphs and plain CPU tensors of the graph's
        dtype (any other input takes the ordinary call). A caller must not pass a pair whose input
        it reads afterwards expecting the old value: that is what "updated in place" means.
        """
        pairs = {k: i for k, i in pairs.items() if self._writable.get(k) == i and self._by_pointer[i]}
        if not self._static or not pairs or self.device != "cpu":
            return None
        variant = OnnxExecutable(self.graph, self.device, self.session, writable_inputs=self._writable)
        variant._in_place = pairs
        # None: no output is ORT's to copy out; True: every output is small (copied out all at once)
        rest = [c for k, c in enumerate(self._copied) if k not in pairs]
        variant._copies_out = all(self._copied) if any(rest) else None
        variant._arrays_out = not all(rest)  # outputs bound to arrays of ours (recycled: _run_recycled)
        variant._plain = self  # the ordinary call, for inputs that are not plain CPU tensors
        return variant

    def unchecked(self):
        """:meth:`__call__` for inputs the caller has checked are of the compiled types, as a
        function of them; None where it would not be shorter (symbolic sizes, complex or
        bfloat16 values, outputs bound to buffers of ours or to inputs: in_place()). When every input is the tensor
        bound last time, over the same memory, it only runs and copies out; anything else goes
        through :meth:`__call__`, which binds it. The frontend's fast-path hits use it: their
        tensor guards have checked dtypes and shapes (0.3 µs of a tiny call).
        """
        ir_types = [t for _, t in self._in]
        if not (self._static and all(self._copied)) or self._in_place or self._any_complex_out or any(self._complex_in) \
                or any(t.dtype is DType.bfloat16 for t in ir_types):
            return None
        call, local_state = self.__call__, self._local

        def run(*values):
            local = local_state if hasattr(local_state, "binding") else self._binding()
            for value, last in zip(values, local.bound):
                if last is None or last[0] is not value or not _same_buffer(value, last[2]):
                    return call(*values)
            local.run()
            return local.copy_out()

        return run

    def _complex(self, outs: list[np.ndarray]) -> list[np.ndarray]:
        """Complex outputs as complex arrays: views of their carriers [..., 2] (no copy)."""
        if not self._any_complex_out:
            return outs
        return [out if dtype is None else _from_carrier(out, dtype) for out, dtype in zip(outs, self._complex_out)]

    def _run_recycled(self, local) -> list[np.ndarray]:
        """Static shapes with large outputs: ORT writes them into arrays of ours, and an array
        the caller has let go of since the last call is written again, not reallocated.

        A fresh large output pays its page faults on every call, on top of the run (figures in
        docs/backends/onnx.md); the exported model in raw ORT writes into one buffer every time.
        Reuse needs proof that nothing else holds the array: its reference count is that of
        our own list (torch.from_numpy, NumPy views and memoryviews all hold a reference).
        """
        arrays = getattr(local, "arrays", None)
        if arrays is None or _held(arrays):
            arrays = local.arrays = self._bind_outputs(local.binding, {})
        local.run()
        if not any(self._copied):
            return list(arrays)
        values = local.binding.get_outputs()  # ORT's reused buffers: copied out
        return [a if a is not None else values[i].numpy().copy() for i, a in enumerate(arrays)]

    def _bind_outputs(self, binding, into: dict[int, int]) -> list:
        """Every output bound, in graph order (get_outputs follows binding order): output ``k``
        to the address ``into[k]``, a small one to ORT's buffer (copied out after the run), a
        large one to a fresh array of ours; the arrays in their slots, None in the others."""
        binding.clear_binding_outputs()
        arrays: list = []
        for k, ((name, t), copied) in enumerate(zip(self._out, self._copied)):
            if copied and k not in into:
                binding.bind_output(name, "cpu")
                arrays.append(None)
                continue
            out = None if k in into else np.empty(t.shape, t.dtype.numpy)
            binding.bind_output(name, "cpu", 0, ONNX_DTYPES[t.dtype], list(t.shape),
                                into[k] if out is None else out.ctypes.data)
            arrays.append(out)
        return arrays

    def _run_in_place(self, local, inputs) -> list:
        """:meth:`_run_recycled` with the in_place() outputs bound to their inputs' memory and
        returned as those very tensors (bound again when an input's tensor or memory changes)."""
        targets = {k: inputs[i] for k, i in self._in_place.items()}
        key = [(id(t), t.data_ptr() if hasattr(t, "data_ptr") else None) for t in targets.values()]
        if getattr(local, "in_place_key", None) != key or (self._arrays_out and _held(local.arrays)):
            if not all(_plain_cpu_tensor(t) and _torch_dtype_name(t.dtype) == self._out[k][1].dtype.name
                       for k, t in targets.items()):
                local.in_place_key = None
                return self._plain(*inputs)  # a NumPy array, a strided or other-dtype tensor: no writing into it
            local.arrays = self._bind_outputs(local.binding, {k: t.data_ptr() for k, t in targets.items()})
            local.in_place_key = key
        local.run()
        arrays = local.arrays
        if self._copies_out is None:  # nothing ORT allocated
            return [targets[k] if k in targets else a for k, a in enumerate(arrays)]
        # ORT's reused buffers copied out: all outputs at once where all are small (in-place ones
        # too: copy_outputs_to_cpu copies every output, at a fifth of get_outputs' cost, which
        # wraps each), else one by one
        values = local.copy_out() if self._copies_out else local.binding.get_outputs()
        return [targets[k] if k in targets else a if a is not None else
                values[k] if self._copies_out else values[k].numpy().copy() for k, a in enumerate(arrays)]

    def _resolve_output_shapes(self, sizes: tuple) -> list[list[int]]:
        """The output shapes for inputs of these shapes, checked against the graph's size rules
        (N//3 of N=7 is an error of ours, not ORT's), remembered per input shapes: binding the
        symbols was a tenth of a small model's call in a service whose batch size varies."""
        bindings = ShapeBindings(error=ParityError)
        for i, shape in zip(self._symbolic_in, sizes):
            bindings.bind(self.graph.inputs[i].type, shape, f"input {i} of @{self.graph.name}")
        bindings.check_graph(self.graph)
        shapes = [list(bindings.resolve(t).shape) for _, t in self._out]
        if len(self._output_shapes) < _OUTPUT_SHAPES_KEPT:
            self._output_shapes[sizes] = shapes
        return shapes

    def _run_general(self, local, inputs) -> list[np.ndarray]:
        """Outputs of symbolic shape or bound to fresh arrays of ours."""
        binding = local.binding
        # the shapes of the symbolic inputs decide the outputs' (static ones were checked when bound)
        sizes = tuple(tuple(inputs[i].shape) if hasattr(inputs[i], "shape") else np.shape(inputs[i])
                      for i in self._symbolic_in)
        shapes = self._output_shapes.get(sizes)
        if shapes is None:
            shapes = self._resolve_output_shapes(sizes)
        fresh: list[np.ndarray | None] = []
        local.clear_outputs()  # bound below in graph order (get_outputs follows binding order)
        for (name, t), shape in zip(self._out, shapes):
            if _bind_buffer(t.dtype, shape):
                out = np.empty(shape, t.dtype.numpy)
                local.bind_output_buffer(name, ONNX_DTYPES[t.dtype], shape, out.ctypes.data)
                fresh.append(out)
            else:
                local.bind_output(name)
                fresh.append(None)
        local.run()
        if all(out is not None for out in fresh):
            return fresh
        if all(out is None for out in fresh):
            return local.copy_out()
        # copy_outputs_to_cpu converts every output, and bfloat16 ones have no NumPy type
        values = binding.get_outputs()
        return [out if out is not None else values[i].numpy().copy() for i, out in enumerate(fresh)]


_SCATTERS = ("ScatterElements", "ScatterND")


def writable_inputs(model) -> dict[int, int]:
    """The graph outputs ORT may write into an input's own memory, as ``{output: input}``
    (indices): output ``k`` is made by a ScatterElements or ScatterND whose data is graph
    input ``i``, and nothing else reads input ``i`` (no other node, no subgraph, no graph
    output), so no node can read it after the scatter has written. ORT's scatter kernels copy
    their data to the output only where the two buffers differ, then write the updates.
    ``model`` is a ModelProto or anything with its bytes (``SerializeToString``).

    Example::

        >>> from parity.ir import GraphBuilder, f32, i64
        >>> from parity.backends.onnx.lowering import to_model
        >>> b = GraphBuilder(); cache = b.input(f32[4, 2]); at = b.input(i64[1, 2]); row = b.input(f32[1, 2])
        >>> writable_inputs(to_model(b.build([b.scatter(cache, at, row, axis=0, reduce="replace")])))
        {0: 0}
        >>> writable_inputs(to_model(b.build([b.scatter(cache, at, row, axis=0, reduce="replace"), b.neg(cache)])))
        {}
    """
    if not hasattr(model, "graph"):
        import onnx

        model = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph
    if any(a.type == a.GRAPH for node in graph.node for a in node.attribute):
        return {}  # a subgraph may read any outer value: not traced here
    readers: dict[str, int] = {}
    for name in [name for node in graph.node for name in node.input] + [v.name for v in graph.output]:
        readers[name] = readers.get(name, 0) + 1
    inputs = {v.name: i for i, v in enumerate(graph.input)}
    made_by = {name: node for node in graph.node for name in node.output}
    returned = [v.name for v in graph.output]
    found = {}
    for k, name in enumerate(returned):
        node = made_by.get(name)
        # (nodes after the scatter may read its output: that is the input's memory, updated)
        if node is not None and node.op_type in _SCATTERS and node.input[0] in inputs \
                and readers[node.input[0]] == 1 and returned.count(name) == 1:
            found[k] = inputs[node.input[0]]
    return found


def _held(arrays: list) -> bool:
    """Whether anyone besides ``arrays`` references one of its arrays."""
    for i in range(len(arrays)):
        # an array nobody else holds has 2 references here: the list's slot, getrefcount's argument
        if arrays[i] is not None and sys.getrefcount(arrays[i]) > 2:
            return True
    return False


def _carrier(array: np.ndarray, dtype: DType) -> np.ndarray:
    """A C-contiguous complex array as its float carrier [..., 2] (a view: real, imaginary)."""
    return array.reshape(-1).view(dtype.real_dtype.numpy).reshape(*array.shape, 2)


def _from_carrier(carrier: np.ndarray, dtype: DType) -> np.ndarray:
    """A float carrier [..., 2] as the complex array it holds (a view)."""
    return carrier.reshape(-1).view(dtype.numpy).reshape(carrier.shape[:-1])


def _bind_buffer(dtype: DType, shape) -> bool:
    """Whether an output is bound to a fresh array of ours (else ORT allocates and we copy)."""
    return dtype is DType.bfloat16 or math.prod(shape) * dtype.numpy.itemsize >= _BIND_OUTPUT_BYTES


def _buffer(value: Any):
    """What must not change for a binding of ``value`` to stand: a tensor's address (its
    object can be given other memory, ``p.data = ...``); nothing for a NumPy array."""
    return (value.data_ptr(), value.dtype) if type(value) is not np.ndarray else None


_TORCH_DTYPE_NAMES: dict = {}  # torch.float32 -> "float32" (the IR's names are torch's)


def _torch_dtype_name(dtype) -> str:
    name = _TORCH_DTYPE_NAMES.get(dtype)
    if name is None:
        name = _TORCH_DTYPE_NAMES[dtype] = str(dtype).removeprefix("torch.")
    return name


def _plain_cpu_tensor(value: Any) -> bool:
    """Whether ``value`` is a torch tensor whose memory ORT can read as it is: on the CPU,
    contiguous, not empty, with no lazy negation (its dtype is the caller's to check)."""
    return (type(value).__module__.startswith("torch") and value.is_cpu and value.is_contiguous()
            and value.numel() > 0 and not value.is_neg())


def _same_buffer(value: Any, buffer) -> bool:
    if type(value) is np.ndarray:
        return True
    # same address, dtype and (checked by the caller) shape, and contiguous: the same bytes
    # in the same layout
    return value.data_ptr() == buffer[0] and value.dtype == buffer[1] and value.is_contiguous()


def _is_view_of(array: np.ndarray, value: Any, dtype: DType) -> bool:
    """Whether ``array`` (what was bound) reads ``value``'s own memory, not a copy."""
    if array is value:
        return True
    return type(value) is not np.ndarray and dtype is not DType.bfloat16 and value.is_contiguous()


def _as_array(value: Any, dtype: DType, i: int, graph: str) -> np.ndarray:
    """A C-contiguous NumPy view of a NumPy array or CPU torch tensor (copied only if strided)."""
    if type(value) is np.ndarray and value.flags.c_contiguous and value.dtype == _NUMPY[dtype]:
        return value
    if type(value).__module__.startswith("torch"):
        tensor = value.detach()
        if _torch_dtype_name(tensor.dtype) != dtype.name:
            raise ParityError(f"input {i} of @{graph} is a {tensor.dtype} tensor, expected {dtype.short}; "
                              f"convert it before the call (parity never converts inputs implicitly)")
        if tensor.device.type != "cpu":
            raise ParityError(f"input {i} of @{graph} is on {tensor.device}; the onnx backend's "
                              f"executables take CPU tensors (move it with .cpu())")
        tensor = tensor.resolve_conj().contiguous()  # (a lazily conjugated complex tensor has no NumPy view)
        if dtype is DType.bfloat16:
            import torch

            return tensor.view(torch.int16).numpy().view(dtype.numpy)
        return tensor.numpy()
    array = np.asarray(value)
    if array.dtype != dtype.numpy:
        raise ParityError(f"input {i} of @{graph} has dtype {array.dtype}, expected {dtype.short}; "
                          f"convert it before the call (parity never converts inputs implicitly)")
    if not array.flags.c_contiguous:  # (np.ascontiguousarray would make a 0-d array 1-d)
        array = array.copy(order="C")
    return array
