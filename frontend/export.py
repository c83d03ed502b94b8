"""What :func:`parity.export` runs: a function or ``nn.Module`` captured whole, as a file another runtime runs.

The model is captured whole, then handed to the backend that writes the format. Capture
is one ``make_fx`` pass with parity's decomposition table (flat tensor arguments, static
shapes, no buffer updates: most inference exports), else
:func:`parity.frontend.capture.capture_program` (strict torch.export, needed for dynamic
dims). :data:`EXPORTERS` maps each
format to a backend name in the registry and the method that writes it (``"onnx"``: the
onnx backend, a self-contained ``.onnx`` file; ``"stablehlo"``: the xla backend, StableHLO
text whose header comment names the inputs and outputs; ``"jax"``: the xla backend,
``jax.export``'s serialized form, which ``jax.export.deserialize(data).call(...)`` runs in
any process). The method, ``(graph, path, input_names=, output_names=, dim_names=)``,
writes the file and returns its in-memory form. Dynamic dims stay symbolic in every
format. Adding a format is one row here and one method on a backend.

Parameters and buffers become constants by default (``params="constants"``: folded into
the graph, so the file is self-contained), or named graph inputs (``params="inputs"``,
named like ``fc1.weight``, ahead of the user's inputs). ``dynamic_dims`` makes dims
symbolic: ``{"x": {0: "batch"}}`` (input name → axis → the dim's name in the file).

Example (``parity.export``'s docstring has one that writes a file)::

    >>> EXPORTERS["stablehlo"], SUFFIXES[".mlir"]
    (('xla', 'export'), 'stablehlo')
"""

from __future__ import annotations

import functools
import inspect
import re
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..ir.graph import Graph, Node
from ..ir.types import Symbol
from ..ir.usage import UsageError
from .export_capture import keywords_as_positional, quiet_torch_logs, without_wrapper_prefix

# format -> (the registry name of the backend, its method that writes the format)
EXPORTERS: dict[str, tuple[str, str]] = {"onnx": ("onnx", "export"), "stablehlo": ("xla", "export"),
                                         "jax": ("xla", "export_serialized")}


# file extension -> the format it names: a path ending in another format's is refused before the capture
SUFFIXES: dict[str, str] = {".onnx": "onnx", ".mlir": "stablehlo", ".stablehlo": "stablehlo", ".jax": "jax"}

# formats whose file checks the graph's size constraints when it runs (jax.export's shape
# assertions); an ONNX runtime has no such check, so parity.export warns with the list
ASSERTS_SIZES: frozenset[str] = frozenset({"stablehlo", "jax"})


class ExportError(UsageError):
    """An export that cannot be done as asked (unknown format, names that do not fit, a path it cannot write)."""


class UnexportableOp(ExportError):
    """An op of the model that parity's IR cannot hold, so no file can be written: its line and the fix."""

    def __init__(self, aten_op: str, loc, why: str, format: str, dynamic: bool):
        self.aten_op, self.loc, self.why = aten_op, loc, why
        where = f" at {loc}" if loc else " (source line unknown)"
        sizes = "; if it works on a size, try exporting without dynamic_dims" if dynamic else ""
        super().__init__(f"{aten_op}{where} cannot be exported to {format}\n"
                         f"  why: {why}\n"
                         f"  fix: the file holds the whole model in parity's IR, so rewrite that line with ops "
                         f"parity translates (`parity aten` lists them){sizes}")

    @classmethod
    def of(cls, error, locate, format: str, dynamic: bool) -> UnexportableOp:
        """``error`` (an UnsupportedAtenOp) for export; without a source line, ``locate()``
        captures again with torch.export, whose nodes carry the user's frames."""
        from .errors import UnsupportedAtenOp

        if error.loc is None:
            try:
                with quiet_torch_logs():
                    locate()
            except UnsupportedAtenOp as located:
                error = located if located.aten_op == error.aten_op else error
        return cls(error.aten_op, error.loc, error.why, format, dynamic)


class DataDependentShape(ExportError):
    """An op whose output's shape depends on its inputs' values (``F.ctc_loss``'s CPU kernel):
    a file of symbolic shapes cannot hold it. Names the op, the user's line and the fix."""

    def __init__(self, exc: BaseException):
        import traceback

        from .source import is_user_file

        self.aten_op = str(exc.args[0]) if exc.args else "an op"  # torch gives the OpOverload
        user = [f for f in traceback.extract_tb(exc.__traceback__) if is_user_file(f.filename)]
        where = f" at {user[-1].filename}:{user[-1].lineno} in {user[-1].name}" if user else " (source line unknown)"
        code = f"\n  code: {user[-1].line.strip()}" if user and user[-1].line else ""
        super().__init__(f"{self.aten_op}{where} cannot be exported: the shape of its output depends on the "
                         f"input's values{code}\n"
                         "  why: an exported file holds one graph whose shapes are known from the input's shapes\n"
                         "  fix: compute that value outside the exported function (export the model up to it), "
                         "or run it with parity.compile, which runs such an op in eager torch")


class ExportWarning(UserWarning):
    """Part of the model's output that is not in the file (a value that is not a tensor), one line each."""


def export_model(fn_or_module, args: Sequence[Any], *, format: str, path: Path,
                 input_names: Sequence[str] | None = None, output_names: Sequence[str] | None = None,
                 dynamic_dims: Mapping[str, Mapping[int, str]] | None = None, params: str = "constants",
                 kwargs: Mapping[str, Any] | None = None):
    """Capture ``fn_or_module(*args, **kwargs)`` and write it to ``path`` in ``format``: what
    :func:`parity.export` runs once it has checked the options and the path (the options are its)."""
    from torch._subclasses.fake_tensor import DynamicOutputShapeException

    from ..backends.registry import get_backend
    from .capture import DataDependentCapture, capture_program, unwrap_compiled
    from .errors import UnsupportedAtenOp

    fn = unwrap_compiled(fn_or_module)
    args = tuple(args)
    user_names = list(input_names) if input_names is not None else _parameter_names(fn, len(args))
    if len(user_names) != len(args):
        raise ExportError(f"{len(user_names)} input names for {len(args)} arguments: {user_names}")
    not_inputs = set(dynamic_dims or {}) - set(user_names) - set(kwargs or {})
    if not_inputs:
        raise ExportError(f"dynamic_dims names {sorted(not_inputs)}, which are not inputs "
                          f"{user_names + list(kwargs or {})}")
    if kwargs and dynamic_dims and any(k in dynamic_dims for k in kwargs):
        # torch.export fails on dynamic dims of a forward(**kwargs)'s keyword arguments:
        # capture a wrapper that takes the keyword tensors positionally, as the model is called
        fn, args, user_names, kwargs = keywords_as_positional(fn, args, user_names, kwargs)
    rename = dict(zip(_parameter_names(fn, len(args)), user_names))
    # captured inputs of forward(*args) are labelled args[0], ...: the caller's names too
    starred = dict(zip(_parameter_names(fn, len(args), starred=True), user_names))
    shapes = _dynamic_shapes(user_names, list(rename), args, kwargs, dynamic_dims)
    def capture():
        return capture_program(fn, *args, dynamic_shapes=shapes, **dict(kwargs or {}))

    try:
        with quiet_torch_logs():
            program = _trace_or_capture(fn, args, list(rename), capture) \
                if _traceable(fn, args, kwargs, dynamic_dims) else capture()
    except UnsupportedAtenOp as exc:
        raise UnexportableOp.of(exc, capture, format, dynamic=bool(dynamic_dims)) from None
    except DataDependentCapture as exc:  # its last fix (parity.compile's graph break) is not export's
        raise ExportError(str(exc).split("; parity.compile(")[0]) from None
    except DynamicOutputShapeException as exc:
        raise DataDependentShape(exc) from None
    program = without_wrapper_prefix(program)
    for note in program.notes:
        warnings.warn(f"parity.export: {note}", ExportWarning, stacklevel=3)  # the caller of parity.export
    graph, names = _named_inputs(program, {**rename, **starred}, params)
    outputs = _output_names(program, output_names)
    dim_names = {}
    for value, name in zip(graph.inputs, names):
        for axis, declared in (dynamic_dims or {}).get(name, {}).items():
            dim, label = value.type.shape[axis], dim_name(declared)
            # Never specialize silently (capture refuses first; this is the last check)
            if not isinstance(dim, Symbol):
                raise ExportError(f"the dynamic dim {label!r} (input {name!r}, axis {axis}) was captured as "
                                  f"{dim}, not as a symbol; the file would accept only that size")
            if dim_names.setdefault(dim.name, label) != label:
                raise ExportError(f"the dynamic dims {dim_names[dim.name]!r} and {label!r} were captured as "
                                  "one size; the file would need them equal")
    backend_name, method = EXPORTERS[format]
    write = getattr(get_backend(backend_name), method)
    written = write(graph, str(path), input_names=names, output_names=outputs,
                    dim_names=dim_names)
    warn_unchecked_sizes(graph, dim_names, format, "parity.export", stacklevel=4)  # the caller of parity.export
    return written


def warn_unchecked_sizes(graph: Graph, dim_names: Mapping[str, str], format: str, door: str, stacklevel: int) -> None:
    """An :class:`ExportWarning` listing what ``graph`` relies on about its sizes, when ``format``
    cannot assert it (ONNX); ``stacklevel`` counts from this function to the user's call of ``door``."""
    facts = size_facts(graph, dim_names)
    if facts and format not in ASSERTS_SIZES:
        warnings.warn(f"{door}: the {format} file holds for sizes where these hold: {'; '.join(facts)}. "
                      f"{format} cannot check sizes, so a run outside them gives undefined results "
                      "(format='jax' or 'stablehlo' asserts them)", ExportWarning, stacklevel=stacklevel)


def size_facts(graph: Graph, dim_names: Mapping[str, str]) -> list[str]:
    """What ``graph`` relies on about its sizes, in the file's dim names (``seq must be <= 64``)."""
    from ..ir.dims import substitute
    from ..ir.shapes import graph_constraints

    renames = {old: Symbol(new) for old, new in dim_names.items() if new.isidentifier()}
    facts = []
    for c in graph_constraints(graph):
        if c.kind == ">=" and c.rhs == 0:
            continue  # a size is never negative: true of every file
        renamed = type(c)(c.kind, substitute(c.lhs, renames), substitute(c.rhs, renames))
        facts.append(renamed.fact)
    return list(dict.fromkeys(facts))


def _traceable(fn, args, kwargs, dynamic_dims) -> bool:
    """Whether the fast tracer fits: flat tensor arguments, static shapes, no buffer updates."""
    import torch

    module = fn if isinstance(fn, torch.nn.Module) else None
    updates_buffers = module is not None and module.training and any(True for _ in module.buffers())
    return (not kwargs and not dynamic_dims and not updates_buffers
            and all(isinstance(a, torch.Tensor) for a in args))


def _trace_or_capture(fn, args, arg_names, capture):
    """:func:`_trace`, or ``capture()`` (torch.export) when the code branches on data: make_fx
    fails there with torch's 70-line guard error, torch.export's failure names the user's line.

    A trace that kept an in-place op (``ReLU(inplace=True)``, the ``masked_fill_`` of a
    TransformerEncoder's padding mask) is traced again functionalized. What still fails goes
    to torch.export: functionalize leaves the real tensors a function closes over (a GRU's
    weights in ``lambda x: gru(x)[0]``, which ``_VF.gru`` updates in place), which
    torch.export lifts as constants first; and an RNN module goes there at once (functionalize
    fails on its weights with torch's internal assert and leaves them unusable)."""
    import torch
    from torch._subclasses.fake_tensor import DataDependentOutputException
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

    from .errors import UnsupportedAtenOp

    try:
        return _trace(fn, args, arg_names)
    except (GuardOnDataDependentSymNode, DataDependentOutputException):
        # (torch.stft's `window.equal(...)` check: make_fx reads a value, torch.export does not)
        return capture()
    except UnsupportedAtenOp as exc:
        if not _in_place(exc.aten_op):
            raise
    if isinstance(fn, torch.nn.Module) and any(isinstance(m, torch.nn.RNNBase) for m in fn.modules()):
        return capture()
    try:
        return _trace(fn, args, arg_names, functional=True)
    except UnsupportedAtenOp as exc:
        if not _in_place(exc.aten_op):
            raise
    except RuntimeError:  # functionalize's own failures: torch.export's capture says what is wrong
        pass
    return capture()


def _in_place(aten_op: str) -> bool:
    """Whether ``aten.add_.Tensor`` (an aten op's name) updates its input in place."""
    parts = aten_op.split(".")
    return len(parts) >= 2 and parts[1].endswith("_") and not parts[1].endswith("__")


def _trace(fn, args, arg_names, functional: bool = False):
    """The fast capture: one ``make_fx`` pass with parity's decomposition table straight to
    core ATen (what torch.export + run_decompositions give, without Dynamo's bytecode
    analysis or a second decomposition pass), then the frontend's translation;
    ``functional``: through ``torch.func.functionalize`` (in-place ops become out-of-place).
    Parameters and buffers are the leading placeholders, as in torch.export."""
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    from .aten_decompositions import mkldnn_off
    from .capture import CapturedProgram
    from .outputs import flatten_outputs
    from .translate import fx_to_ir

    module = fn if isinstance(fn, torch.nn.Module) else None
    params = dict(module.named_parameters()) if module is not None else {}
    buffers = dict(module.named_buffers()) if module is not None else {}
    state = {**params, **buffers}
    names = list(state)

    notes: list[str] = []
    paths: list[str] = []

    def flat(*values):
        if module is None:
            result = fn(*values)
        else:
            result = torch.func.functional_call(module, dict(zip(names, values[:len(names)])), values[len(names):])
        tensors = flatten_outputs(result, notes)
        paths[:] = tensors
        return tuple(tensors.values())  # make_fx keeps a dict whole in its output node

    # tensors the function closes over (a module's weights in `lambda x: model(x)[0]`) are
    # real, not fake: they are traced as the graph's constants
    # without oneDNN: torch's LSTM on CPU picks its oneDNN kernel (mkldnn_rnn_layer, which no
    # decomposition opens) by the weights, real here; the generic path decomposes into matmuls
    with mkldnn_off():
        traced = torch.func.functionalize(flat) if functional else flat
        gm = make_fx(traced, decomposition_table=_decompositions(), tracing_mode="fake",
                     record_stack_traces=True, _allow_non_fake_inputs=True)(*state.values(), *args)
    name = type(fn).__name__ if module is not None else getattr(fn, "__name__", "main")
    translation = fx_to_ir(gm, name=name if name.isidentifier() else "main")
    labels = [f"param {n}" for n in params] + [f"buffer {n}" for n in buffers] + [f"input {n}" for n in arg_names]
    input_names = [labels[j] for j in translation.inputs] + [f"key {k}" for k in range(translation.num_keys)]
    kept = [path for path, where in zip(paths, translation.outputs) if where[0] == "ir"]
    notes += [f"output {path!r} is not computed by the graph (an input or a constant): left out of its outputs"
              for path, where in zip(paths, translation.outputs) if where[0] != "ir"]
    outputs = [f"output {k}" for k in range(len(kept))]
    return CapturedProgram(translation.graph, input_names, outputs, dict(state), kept, notes)


@functools.cache
def _decompositions() -> dict:
    """The frontend's decomposition table, built once (building it is not free), with
    :data:`TRACE_DECOMPOSITIONS`."""
    import torch
    from torch._decomp import decomposition_table as torchs

    from .aten_decompositions import decomposition_table

    table = decomposition_table()
    for name in TRACE_DECOMPOSITIONS:
        packet, overload = name.split(".")
        op = getattr(getattr(torch.ops.aten, packet), overload)
        table[op] = torchs[op]
    return table


# ops the fast trace meets that torch.export's core decompositions never leave (make_fx
# reaches F.interpolate's .default overload, torch.export its .vec, which the core table
# decomposes): torch's own decomposition of each
TRACE_DECOMPOSITIONS = ("upsample_bicubic2d.default",)


def _parameter_names(fn, count: int, starred: bool = False) -> list[str]:
    """The names of ``count`` positional arguments: the forward's parameters, then ``input2``...
    for the rest (``starred``: ``args[2]``..., as capture labels what ``*args`` takes)."""
    target = fn.forward if hasattr(fn, "forward") else fn
    try:
        names = [p.name for p in inspect.signature(target).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    names = names[:count]
    return names + [f"args[{i}]" if starred else f"input{i}" for i in range(len(names), count)]


def dim_name(d) -> str:
    """A ``dynamic_dims`` value's name: a str, or a ``torch.export.Dim``'s name."""
    if isinstance(d, str):
        return d
    name = getattr(d, "__name__", None)
    if not isinstance(name, str) or not hasattr(d, "min"):
        raise ExportError(f"dynamic_dims values are dim names or torch.export.Dim objects, got {d!r}")
    return name


def _dynamic_shapes(names, params, args, kwargs, dynamic_dims):
    """torch.export's dynamic_shapes for ``dynamic_dims`` (one Dim object per dim name): a
    tuple for positional arguments (``names``: the caller's names for them), or, when a
    keyword argument has dynamic dims, a dict keyed by parameter names (``params``)."""
    if not dynamic_dims:
        return None
    import torch

    dims = {}

    def dim(d):
        if isinstance(d, str):
            return dims.setdefault(d, torch.export.Dim(d))
        return dims.setdefault(dim_name(d), d)  # the user's torch.export.Dim, with its min and max

    def spec(name):
        return {axis: dim(d) for axis, d in dynamic_dims[name].items()}

    if not any(k in dynamic_dims for k in kwargs or {}):
        return tuple(spec(n) if n in dynamic_dims else None for n, _ in zip(names, args))
    shapes = {p: spec(n) for p, n in zip(params, names) if n in dynamic_dims}
    return shapes | {k: spec(k) for k in kwargs if k in dynamic_dims}


def _named_inputs(program, rename: Mapping[str, str], params: str) -> tuple[Graph, list[str]]:
    """The graph with parameters bound as constants (folded) or kept as inputs, and its input names.

    A user input is named by its parameter (``x``; ``xs[1]`` inside a list; a keyword
    argument's key), with ``rename`` (parameter name → the caller's ``input_names``) applied."""
    from ..ir.passes import dce, fold_constants
    from .tensors import to_array

    names, bound = [], {}
    for i, label in enumerate(program.input_names):
        kind, _, name = label.partition(" ")
        if kind == "input":
            base = re.match(r"[^\[]*", name).group()
            names.append(rename[name] if name in rename else rename.get(base, base) + name[len(base):])
        elif kind == "key":
            names.append(f"key{name}")
        elif params == "inputs":
            names.append(name)
        else:
            bound[i] = to_array(program.state[name])
    graph = program.graph
    if bound:
        graph, _ = fold_constants(_bind(graph, bound))
    graph, _ = dce(graph)  # capture keeps values the user's code never returns (max_pool's indices)
    return graph, names


def _bind(graph: Graph, values: Mapping[int, Any]) -> Graph:
    """``graph`` with the inputs at the given positions replaced by constants."""
    from ..ir.builder import GraphBuilder

    b = GraphBuilder(graph.name)
    env = {v: b.constant(values[i], v.type.dtype) if i in values else b.input(v.type)
           for i, v in enumerate(graph.inputs)}
    for node in graph.nodes:
        new = Node(node.op, [env[v] for v in node.inputs], node.attrs, [v.type for v in node.outputs], node.loc)
        b.nodes.append(new)
        env.update(zip(node.outputs, new.outputs))
    return b.build([env[v] for v in graph.outputs])


def _output_names(program, given: Sequence[str] | None) -> list[str]:
    """``output K`` → the given name, by default its path in the model's output (``logits``,
    ``cache.0.key``, ``output0``); ``buffer NAME`` (an updated buffer) → NAME."""
    labels = program.output_names
    user = [label for label in labels if label.startswith("output ")]
    if given is not None and len(given) != len(user):
        raise ExportError(f"{len(given)} output names for {len(user)} outputs: the model's outputs are "
                          f"{program.output_paths}")
    names = iter(given if given is not None else program.output_paths)
    return [next(names) if label.startswith("output ") else label.partition(" ")[2] for label in labels]
