"""``parity.capture``: one whole forward graph of a function or module, as parity IR.

Capture goes through ``torch.export`` in strict mode (whole graph, no graph breaks: code that cannot
be exported is an error here, unlike ``parity.compile``), then torch's core ATen
decompositions (parity's table: attention stays fused, see ``aten_decompositions.decomposition_table``),
then the frontend's aten → IR translation. The graph is for inspection and export:
``print(graph)`` shows every IR node with the user's source line as ``loc(file, line,
function)``.

**Graph inputs.** Parameters and buffers (those the forward reads) become graph
*inputs*, not constants, so
weights can change without re-capturing and large models print small. The order is
torch.export's graph signature: parameters, buffers, lifted tensor constants, then the
user's tensor arguments (flattened), then one ``u32[2]`` key per random op.
**Graph outputs** are the updated buffers first (BatchNorm's running statistics in
training mode), then the user's outputs (flattened). :func:`capture_program` returns
the graph together with those names and the parameter values; :meth:`CapturedProgram.run`
runs it on the reference interpreter.

Example::

    >>> import torch, parity
    >>> graph = parity.capture(lambda x: torch.relu(x) * 2, torch.ones(3))
    >>> [n.op for n in graph.nodes]
    ['relu', 'constant', 'broadcast_in_dim', 'mul']
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field

import torch

from ..ir.graph import Graph
from .errors import FrontendError
from .outputs import PREFIX, FlatOutputs
from .sharding import caller_site
from .source import is_user_file
from .specialize import GuardedDimension, GuardLog, SpecializedDimension, size_bounds, suggested_ranges, with_ranges


@dataclass
class CapturedProgram:
    """A captured graph plus what its inputs and outputs are.

    ``input_names[k]`` names IR input ``k``: ``"param fc1.weight"``, ``"buffer
    bn.running_mean"``, ``"constant NAME"``, ``"input x"`` (the user's argument, by
    torch.export's placeholder name) or ``"key K"`` (a random key). ``output_names``
    likewise: ``"buffer NAME"`` (an updated buffer) or ``"output K"``. ``state`` holds
    the tensors of the parameter, buffer and constant inputs by name. ``output_paths[K]``
    is the name of ``"output K"`` in the model's output (``logits``, ``cache.0.key``,
    ``output0``: :mod:`.outputs`), and ``notes`` says, one line each, what the output
    held that is not in the graph (values that are not tensors, inputs passed through).
    """

    graph: Graph
    input_names: list[str]
    output_names: list[str]
    state: dict[str, torch.Tensor]
    output_paths: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def run(self, *args, keys: list | None = None, **kwargs) -> list[torch.Tensor]:
        """Evaluate the graph on the reference interpreter with the captured state.

        ``args``/``kwargs`` are the user's arguments (flattened like at capture time);
        ``keys`` gives one ``u32[2]`` array per random op.
        """
        from ..ir import evaluate
        from .tensors import to_array, to_torch

        user = [a for a in torch.utils._pytree.tree_leaves((args, kwargs)) if isinstance(a, torch.Tensor)]
        keys = list(keys or [])
        arrays = []
        for name in self.input_names:
            kind, _, label = name.partition(" ")
            if kind == "input":
                arrays.append(to_array(user.pop(0)))
            elif kind == "key":
                arrays.append(keys.pop(0))
            else:
                arrays.append(to_array(self.state[label]))
        results = evaluate(self.graph, arrays)
        return [to_torch(r, v.type.dtype) for r, v in zip(results, self.graph.outputs)]


def capture(fn, *args, **kwargs) -> Graph:
    """The whole forward of ``fn(*args, **kwargs)`` as an ``ir.Graph`` (see the module doc).

    ``fn`` is a function or an ``nn.Module`` (or what ``parity.compile`` made of one); parameters and buffers become graph inputs.
    Raises torch's export error for code that cannot be captured whole, and
    :class:`~parity.frontend.errors.UnsupportedAtenOp` for an op parity cannot translate.
    """
    return capture_program(fn, *args, **kwargs).graph


def capture_program(fn, *args, dynamic_shapes=None, **kwargs) -> CapturedProgram:
    """Like :func:`capture`, with the names of the graph's inputs/outputs and the state.

    ``dynamic_shapes`` is torch.export's (e.g. ``({0: torch.export.Dim("batch")},)``): those
    dims become IR symbols."""
    from torch.export.graph_signature import InputKind, OutputKind

    from ..ir.passes import dce
    from .aten_decompositions import decomposition_table
    from .translate import fx_to_ir

    fn = unwrap_compiled(fn)
    # The model runs inside a wrapper that flattens its output to named tensors (caches and
    # ModelOutput dataclasses included: .outputs); its state's names gain the wrapper's prefix.
    # strict=True traces with Dynamo, which records the user's whole stack per node;
    # non-strict export keeps only frames named "forward" (a plain function has none).
    module = FlatOutputs(fn)
    strict, bounded = True, False
    for _ in range(3):
        try:
            with GuardLog() as guards:  # which op and line added each guard: named if a dynamic dim is fixed
                exported = torch.export.export(module, tuple(args), kwargs or None, strict=strict,
                                               dynamic_shapes=_wrapper_dynamic_shapes(fn, dynamic_shapes, kwargs,
                                                                                     len(args)))
            break
        except torch._dynamo.exc.TorchDynamoException as exc:
            # A bound the model has (seq <= max positions) is no specialization: export within it
            ranges = suggested_ranges(exc)
            if ranges and not bounded:
                dynamic_shapes, bounded = with_ranges(dynamic_shapes, ranges), True
                continue
            error = (DataDependentCapture.of(exc, fn, kwargs) or SpecializedDimension.of(exc, guards)
                     or GuardedDimension.of(exc, guards))
            if error is None and strict and type(exc) is torch._dynamo.exc.Unsupported:
                # Dynamo cannot trace some Python construct (segformer's context manager):
                # non-strict export runs the Python itself and traces only the tensor ops
                # (its nodes keep fewer of the user's frames).
                strict = False
                continue
            if error is None:
                raise
            raise error from exc
        except KeyError:
            # torch 2.13's strict export fails with a KeyError on the lifted name of a parameter of
            # a module the function closes over (`lambda x: gru(x)[0]`); non-strict export lifts it as a constant
            if not strict:
                raise
            strict = False
        except AssertionError as exc:
            if "tree_name" not in str(exc) or not kwargs or not dynamic_shapes:
                raise
            raise FrontendError(  # torch 2.13's export of forward(*args, **kwargs) with dynamic kwargs
                f"dynamic dims of keyword arguments ({', '.join(kwargs)}) cannot be captured: torch.export fails "
                f"on them ({exc})\n  fix: pass those tensors positionally, e.g. parity.export(model, "
                f"({', '.join(kwargs)},), input_names={list(kwargs)}, dynamic_dims=...)") from exc
    with warnings.catch_warnings():
        # torch 2.13's run_decompositions deep-copies its own treespecs, which trips torch's
        # deprecation of LeafSpec: noise from torch's code, not the user's; silenced only here
        warnings.filterwarnings("ignore", message=r"`isinstance\(treespec, LeafSpec\)` is deprecated",
                                category=FutureWarning)
        exported = exported.run_decompositions(decomposition_table())
    signature = exported.graph_signature
    translation = fx_to_ir(exported.graph_module, name=_graph_name(fn), backend=None)
    graph, _ = dce(translation.graph)
    _locate_in_user_code(graph, caller_site())
    graph.assumptions = graph.assumptions + size_bounds(exported)

    user_names = iter(_user_input_names(fn, args, kwargs, signature))
    placeholder_names, user_labels = [], {}  # user_labels: placeholder -> the user's name of that input
    state: dict[str, torch.Tensor] = {}
    params, buffers, constants = exported.state_dict, dict(exported.named_buffers()), exported.constants
    for spec in signature.input_specs:
        name = _unprefixed(spec.target) if spec.target else spec.target
        if spec.kind is InputKind.PARAMETER:
            placeholder_names.append(f"param {name}")
            state[name] = params[spec.target]
        elif spec.kind is InputKind.BUFFER:
            placeholder_names.append(f"buffer {name}")
            state[name] = buffers[spec.target] if spec.target in buffers else constants[spec.target]
        elif spec.kind in (InputKind.CONSTANT_TENSOR, InputKind.CUSTOM_OBJ):
            placeholder_names.append(f"constant {name}")
            state[name] = constants[spec.target]
        else:
            user_labels[spec.arg.name] = next(user_names)
            placeholder_names.append(f"input {user_labels[spec.arg.name]}")
    input_names = [placeholder_names[j] for j in translation.inputs]
    input_names += [f"key {k}" for k in range(translation.num_keys)]

    paths, notes = _output_layout(exported)
    user = iter(paths)
    output_names, output_paths = [], []
    written_back: set[int] = set()  # graph outputs that are an input's in-place update
    for spec, where in zip(signature.output_specs, translation.outputs):
        if spec.kind is OutputKind.BUFFER_MUTATION:
            if where[0] == "ir":
                output_names.append(f"buffer {_unprefixed(spec.target)}")
            continue
        if spec.kind is OutputKind.USER_INPUT_MUTATION:  # not one of the model's outputs: out of the graph
            notes.append(f"the model updates its input {user_labels.get(spec.target, spec.target)!r} in place: "
                         "the graph computes with "
                         "the updated value but does not write it back")
            if where[0] == "ir":
                written_back.add(where[1])
            continue
        path = next(user)
        if path is None:
            continue  # a note's placeholder (a constant None)
        if where[0] != "ir":
            notes.append(f"output {path!r} is {_not_computed(where[0])}: left out of the graph's outputs")
        else:
            output_names.append(f"output {len(output_paths)}")
            output_paths.append(path)
    if written_back:
        kept = [v for k, v in enumerate(graph.outputs) if k not in written_back]
        graph, _ = dce(Graph(graph.name, graph.inputs, graph.nodes, kept, sharding=graph.sharding,
                             assumptions=graph.assumptions))
    return CapturedProgram(graph, input_names, output_names, state, output_paths, notes)


def _locate_in_user_code(graph: Graph, site) -> None:
    """Nodes whose stack holds no frame of the user's (the layers of an ``nn.Sequential``
    passed as it is: only torch's and parity's frames called them) are located at the
    user's line that called capture, not in torch's or parity's files."""
    for node in graph.nodes:
        if site is not None and (node.loc is None or not is_user_file(node.loc.file)):
            node.loc = site


class DataDependentCapture(FrontendError):
    """The forward branches on a tensor's value (``if labels.max() >= n: raise``; a size
    from ``nonzero``), which one static graph cannot express. The message names the
    user's line and the inputs that could be left out."""

    def __init__(self, name: str, frame, why: str, tensor_kwargs: list[str]):
        where = f" at {frame.filename}:{frame.lineno} in {frame.name}" if frame else ""
        code = f"\n  code: {frame.line.strip()}" if frame and frame.line else ""
        drop = [k for k in tensor_kwargs if frame and frame.line and re.search(rf"\b{re.escape(k)}\b", frame.line)]
        leave_out = (f"leave out {', '.join(repr(k) for k in drop)} (the branch reads it) and compute what needs "
                     f"it outside the exported model, or " if drop else "")
        super().__init__(
            f"{name} cannot be captured as one graph: it branches on a tensor's value{where}{code}\n"
            f"  why: capture and export need one static graph, and torch.export cannot follow a Python "
            f"branch on data ({why})\n"
            f"  fix: {leave_out}make that code branchless (torch.where, torch.cond); "
            f"parity.compile(..., strict=False) runs it with a graph break instead")

    @classmethod
    def of(cls, exc: BaseException, fn, kwargs) -> DataDependentCapture | None:
        """The error for torch.export's ``exc`` when it is a branch on data, else ``None``."""
        from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

        causes, cause = [], exc
        while cause is not None and len(causes) < 8:
            causes.append(cause)
            cause = cause.__cause__ or cause.__context__
        if getattr(exc, "gb_type", "") == "Data-dependent branching":
            why = "Dynamo: data-dependent branching"
        elif any(isinstance(c, GuardOnDataDependentSymNode) for c in causes):
            why = "a guard on a data-dependent size"
        else:
            return None
        stack = getattr(exc, "real_stack", None)
        frame = stack[-1] if stack else None
        tensors = [k for k, v in (kwargs or {}).items() if isinstance(v, torch.Tensor)]
        return cls(_graph_name(fn), frame, why, tensors)


def _unprefixed(name: str) -> str:
    """A state name without the output wrapper's submodule prefix."""
    return name[len(PREFIX):] if name.startswith(PREFIX) else name


def _wrapper_dynamic_shapes(fn, dynamic_shapes, kwargs=None, positional_count=0):
    """torch.export's ``dynamic_shapes`` for the wrapper's ``forward(*args, **kwargs)``: a
    tuple is the positional arguments'; a dict keyed by ``fn``'s parameter names is split
    into the positional ones and those passed as keyword arguments (``kwargs``: a BERT's
    ``input_ids=``)."""
    if dynamic_shapes is None:
        return None
    if isinstance(dynamic_shapes, (tuple, list)):
        return {"args": tuple(dynamic_shapes)}
    import inspect

    target = fn.forward if isinstance(fn, torch.nn.Module) else fn
    passed = set(kwargs or ())
    positional = [p.name for p in inspect.signature(target).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name not in passed]
    given = [n for n in positional if n in dynamic_shapes]
    args = tuple(dynamic_shapes.get(n) for n in positional[:positional.index(given[-1]) + 1]) if given else ()
    named = {k: v for k, v in dynamic_shapes.items() if k not in positional}
    if not passed:
        return {"args": args, "kwargs": named}
    # torch.export wants one entry per keyword argument, and no "args" when none are passed
    named = {k: named.get(k) for k in kwargs}
    return {"args": args, "kwargs": named} if args or positional_count else {"kwargs": named}


def _output_layout(exported) -> tuple[list[str | None], list[str]]:
    """Each user output's name in the model's output (``None`` for the notes' placeholders),
    in the exported program's order, and the notes (the wrapper returns ``(tensors, notes)``)."""
    spec = exported.call_spec.out_spec
    tensors, notes = spec.unflatten(list(range(spec.num_leaves)))
    paths: list[str | None] = [None] * spec.num_leaves
    for name, k in tensors.items():
        paths[k] = name
    return paths, list(notes)


def _not_computed(kind: str) -> str:
    return {"input": "an input or parameter returned unchanged", "sym": "a symbolic size"}.get(kind, "a constant")


def unwrap_compiled(fn):
    """The user's own function or module behind a ``parity.compile`` result (else ``fn``)."""
    from .api import CompiledFunction, CompiledModule

    if isinstance(fn, CompiledFunction):
        return fn.fn
    if isinstance(fn, CompiledModule):
        return fn.module
    return fn


def _user_input_names(fn, args, kwargs, signature) -> list[str]:
    """The user's name for each user input, ``x`` or ``xs[1]`` (torch.export's own when unsure)."""
    import inspect

    from torch.export.graph_signature import InputKind
    from torch.utils._pytree import tree_flatten_with_path

    fallback = [s.arg.name for s in signature.input_specs if s.kind is InputKind.USER_INPUT]
    target = fn.forward if isinstance(fn, torch.nn.Module) else fn
    try:
        params = [p for p in inspect.signature(target).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return fallback
    names = []
    for path, _ in tree_flatten_with_path((tuple(args), dict(kwargs)))[0]:
        top, arg, *rest = path
        if top.idx == 0:  # positional
            base = params[arg.idx].name if arg.idx < len(params) else f"args[{arg.idx}]"
        else:
            base = str(arg.key)
        names.append(base + "".join(f"[{getattr(k, 'idx', getattr(k, 'key', k))!r}]" for k in rest))
    return names if len(names) == len(fallback) else fallback


def _graph_name(fn) -> str:
    name = type(fn).__name__ if isinstance(fn, torch.nn.Module) else getattr(fn, "__name__", "main")
    return name if name.isidentifier() else "main"
