"""The torch frontend's half of a backend's runtime interface (backends/runtime.py; the user's
``backend_options`` are checked in runtime_options.py): the graph inputs that are
module parameters or buffers, and :class:`BoundExecutable`, which binds those once, refreshes
them only when they change, and hands DLPack tensors to a backend that takes them.

Which inputs are parameters comes from AOTAutograd: the FX graph it hands parity for a forward
or inference graph takes the flat arguments, and ``fw_metadata.static_input_indices`` names
those that are parameters and buffers (as Inductor's CUDA graphs read them). A parameter counts
as changed when its tensor's ``data_ptr`` or its ``_version`` counter changed: every in-place
update through the tensor (an optimizer step, ``load_state_dict``, ``with torch.no_grad():
p.add_(...)``) bumps the counter. A write through ``p.data`` does not, and is not seen.

Example::

    >>> from parity.frontend.session import CompileOptions
    >>> runtime_request(CompileOptions(backend_options={"threads": 2}), frozenset({0})).key()
    "([('threads', 2)], [0])"
"""

from __future__ import annotations

import threading

import numpy as np
import torch

from ..backends.runtime import RuntimeRequest, binds_parameters, takes_dlpack
from ..ir.graph import Graph
from .tensors import IR_TO_TORCH, array_converter, to_torch

#: the FX graph's ``meta`` key under which compile_fx_graph records its parameter placeholders
PARAMETERS_META = "parity_parameter_placeholders"


def mark_parameter_placeholders(gm: torch.fx.GraphModule, kind: str) -> None:
    """Record on ``gm`` which of its placeholders are parameters or buffers (AOTAutograd's
    static inputs), for a forward or inference graph whose placeholders are the flat arguments."""
    if kind == "backward":
        return
    from torch._guards import TracingContext

    context = TracingContext.try_get()
    metadata = getattr(context, "fw_metadata", None)
    static = getattr(metadata, "static_input_indices", None)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if not static or len(placeholders) != len(getattr(metadata, "input_info", ())):
        return  # not the flat arguments (a synthetic base merged some): nothing is marked
    # by name: a partition of gm (strict=False) names its placeholders after gm's values
    gm.meta[PARAMETERS_META] = frozenset(placeholders[i].name for i in static)


def parameter_inputs(gm: torch.fx.GraphModule, inputs: list[int]) -> frozenset[int]:
    """The IR inputs that are parameters: ``inputs[k]`` is the FX placeholder feeding IR input ``k``."""
    marked = gm.meta.get(PARAMETERS_META)
    if not marked:
        return frozenset()
    names = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    return frozenset(k for k, j in enumerate(inputs) if names[j] in marked)


def runtime_request(options, parameters: frozenset[int] = frozenset()) -> RuntimeRequest:
    """The request for one compile under ``options`` (a CompileOptions)."""
    return RuntimeRequest(dict(options.backend_options or {}), parameters)


def adapt(executable, backend, graph: Graph, request: RuntimeRequest | None):
    """``executable`` as the frontend calls it: wrapped in a :class:`BoundExecutable` when the
    backend takes DLPack tensors or binds parameters, else as it is."""
    parameters = request.parameters if request is not None and binds_parameters(backend) else frozenset()
    if not parameters and not takes_dlpack(backend):
        return executable
    if parameters and not callable(getattr(executable, "bind", None)):
        raise TypeError(f"the {backend.name} backend declares binds_parameters, but its executable "
                        f"({type(executable).__name__}) has no bind(values) method (docs/plugins.md)")
    return BoundExecutable(executable, graph, parameters, takes_dlpack(backend))


class BoundExecutable:
    """A backend's executable behind parity's side of the runtime interface: called with torch
    tensors (``takes_torch_tensors``), it binds the parameters (``executable.bind({index: value})``)
    at the first call and again only for those whose tensor changed, passes None in their places,
    hands the other inputs over as DLPack tensors or host arrays, and returns torch tensors that
    never alias an input."""

    takes_torch_tensors = True

    def __init__(self, executable, graph: Graph, parameters: frozenset[int], dlpack: bool):
        self.executable = executable
        self.parameters = tuple(sorted(parameters))
        self._parameter_set = frozenset(parameters)
        self._convert = [_dlpack_view if dlpack else array_converter(v.type.dtype) for v in graph.inputs]
        self._dtypes = [v.type.dtype for v in graph.outputs]
        self._stamps: dict[int, tuple] = {}  # parameter index -> what its bound tensor looked like
        self._lock = threading.Lock()  # one binding per executable: calls that bind run one at a time
        self.binds = 0  # bind calls made (tests)

    def __call__(self, *inputs):
        if not self.parameters:
            return self._results(self.executable(*[self._pass(k, x) for k, x in enumerate(inputs)]), inputs)
        with self._lock:
            self._refresh(inputs)
            arrays = [None if k in self._parameter_set else self._pass(k, x) for k, x in enumerate(inputs)]
            return self._results(self.executable(*arrays), inputs)

    def _pass(self, k: int, value):
        return value if type(value) is np.ndarray else self._convert[k](value)

    def _refresh(self, inputs) -> None:
        changed = {}
        for k in self.parameters:
            stamp = _stamp(inputs[k])
            if self._stamps.get(k) != stamp:
                changed[k] = (inputs[k], stamp)
        if changed:
            self.executable.bind({k: self._pass(k, tensor) for k, (tensor, _) in changed.items()})
            self.binds += 1
            self._stamps.update({k: stamp for k, (_, stamp) in changed.items()})

    def _results(self, results, inputs) -> list:
        spans = None
        outputs = []
        for result, dtype in zip(results, self._dtypes):
            tensor = to_torch(result, dtype)
            if tensor.dtype != IR_TO_TORCH[dtype]:  # a DLPack result in another dtype: the graph's, as for arrays
                tensor = tensor.to(IR_TO_TORCH[dtype])
            spans = spans if spans is not None else [_span(x) for x in inputs]
            if tensor.numel() and _overlaps(_span(tensor), spans):
                tensor = tensor.clone()  # a view of an input (or a bound parameter): the caller owns its results
            outputs.append(tensor)
        return outputs


def _stamp(tensor) -> tuple:
    """What must not change for a binding of ``tensor`` to stand."""
    return (tensor.data_ptr(), tensor._version, tuple(tensor.shape), tensor.dtype)


def _dlpack_view(tensor: torch.Tensor) -> torch.Tensor:
    """A tensor the backend reads through DLPack: detached (DLPack refuses one that requires grad)
    and contiguous (a copy only when it is not)."""
    tensor = tensor.detach()
    return tensor if tensor.is_contiguous() else tensor.contiguous()


def _span(value) -> tuple[int, int]:
    """The bytes ``value`` (a torch tensor or NumPy array) may reach: its storage's, for a tensor."""
    if isinstance(value, torch.Tensor):
        storage = value.untyped_storage()
        return storage.data_ptr(), storage.data_ptr() + storage.nbytes()
    if isinstance(value, np.ndarray):
        start = value.__array_interface__["data"][0]
        return start, start + value.nbytes
    return 0, 0


def _overlaps(span: tuple[int, int], spans) -> bool:
    return any(start < span[1] and span[0] < end for start, end in spans if end > start)
