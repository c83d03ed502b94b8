"""A compiled FX graph at run time: :class:`CompiledGraph` (torch tensors in, the backend's
executable, torch tensors out), its executables from the frontends' shared cache
(frontend/executables.py) adapted to torch tensors, and the random keys drawn per call.

Example::

    >>> from parity.frontend.compiled_graph import STATS, reset_caches
    >>> reset_caches()
    >>> STATS["backend_compiles"]
    0
"""

from __future__ import annotations

import enum
from collections.abc import Callable

import numpy as np
import torch

from ..backends.runtime import RuntimeRequest
from ..ir.dims import Symbol, free_symbols, monomials
from ..ir.dims import evaluate as evaluate_dim
from ..ir.graph import Graph
from ..ir.precision import Precision
from .executables import _EXECUTABLES, STATS, reset_caches  # noqa: F401 - re-exported (tests, fast_path_disk)
from .executables import compiled_executable as cached_executable
from .input_updates import in_place_pairs
from .plugin_runtime import adapt
from .tensors import array_converter, fresh_result_converter, result_converter, tensor_result_converter
from .translate import Translation


def compiled_executable(graph: Graph, backend, device: str, cache_dir: str | None = None, *,
                        precision: Precision = Precision.EXACT, request: RuntimeRequest | None = None):
    """frontend/executables.py's compiled_executable, called with torch tensors: adapted by
    plugin_runtime.adapt (DLPack tensors, parameters bound once) where the backend asks for it."""
    return cached_executable(graph, backend, device, cache_dir, precision=precision, request=request, adapt=adapt)


def draw_keys(n: int) -> list:
    """``n`` u32[2] random keys from torch's default generator (reproducible with manual_seed)."""
    bits = torch.randint(0, 2**32, (n, 2), dtype=torch.int64).numpy().astype(np.uint32)
    return [bits[i] for i in range(n)]


class CompiledGraph:
    """A compiled FX graph in AOTAutograd's boxed calling convention (a list of args in).

    Everything a call needs that does not depend on the argument values — which argument
    feeds which IR input, how each crosses to NumPy (by its static IR dtype), where each
    output comes from — is worked out here, once, so a call only converts and runs.
    """

    def __init__(self, translation: Translation, graph: Graph, executable):
        # an instance attribute: torch's wrappers copy __dict__, not class attributes
        self._boxed_call = True
        self.translation = translation
        self.graph = graph
        self.executable = executable
        t = translation
        # An executable that takes torch tensors gets them as they are (it converts, and may
        # keep a binding across calls: OnnxExecutable); its results never alias its inputs.
        self._takes_tensors = getattr(executable, "takes_torch_tensors", False)
        self._inputs = tuple((j, _as_is if self._takes_tensors else array_converter(v.type.dtype))
                             for j, v in zip(t.inputs, graph.inputs))
        self._picks = tuple(t.inputs) if self._takes_tensors else None  # the arguments, as they are
        self._num_keys = t.num_keys
        # sizes only integer arguments give: an empty i8[0, *sizes] input carries them (translate.py)
        self._carrier = tuple(t.symbols[name][0] for name in t.size_carrier)
        # sizes the graph uses as values (an int argument made symbolic): i64[] inputs, per call
        self._size_values = tuple(size_reader(expr, {name: t.symbols[name] for name in free_symbols(expr)})
                                  for expr in t.size_values)
        # results made for the call (fresh_results) are wrapped without checks or copies
        converter = (tensor_result_converter if self._takes_tensors else
                     fresh_result_converter if getattr(executable, "fresh_results", False) else result_converter)
        convert = [converter(v.type.dtype) for v in graph.outputs]
        # outputs the executable computes into the input they update, returned as that tensor
        # (frontend/input_updates.py); AOTAutograd's write-back then copies a tensor onto itself
        pairs = in_place_pairs(t) if self._takes_tensors else {}
        in_place = getattr(executable, "in_place", None) if pairs else None
        variant = in_place(pairs) if in_place is not None else None
        if variant is not None:
            self.executable = variant
            for k in pairs:
                convert[k] = _input_or(convert[k])
        plan = []
        for kind, what in t.outputs:
            if kind == "ir":
                plan.append((OutputSource.IR, what, convert[what]))
            elif kind == "input":
                plan.append((OutputSource.INPUT, what, None))
            elif kind == "sym" and isinstance(what, str):
                plan.append((OutputSource.SYM, *t.symbols[what]))
            elif kind == "sym":  # a size expression (s0*s1, saved for the backward)
                plan.append((OutputSource.SYM_EXPR, size_reader(what, {name: t.symbols[name] for name in free_symbols(what)}),
                             None))
            else:
                plan.append((OutputSource.CONST, what, None))
        self._outputs = tuple(plan)
        # An executable may offer a call for inputs Dynamo's guards have checked (types, devices,
        # static sizes: InductorExecutable.guarded): every call here comes through those guards,
        # but the arrays this call adds after the arguments (size carriers, size values, random keys).
        guarded = getattr(self.executable, "guarded", None) if self._takes_tensors else None
        self._run = (guarded(len(self._inputs)) if guarded is not None else None) or self.executable
        self._run_for = self.executable  # (one who replaces .executable, parity.diff's recorder, gets it called)
        # The same call as a function of the boxed argument list, where the executable's inputs are
        # exactly the arguments it picks (no size carrier, size value or random key added)
        self._boxed = (guarded(len(self._inputs), self._picks)
                       if guarded is not None and not (self._carrier or self._size_values or self._num_keys) else None)
        # The common case: the FX outputs are the IR outputs, in order.
        self._direct = tuple(convert) if [p[:2] for p in plan] == [(OutputSource.IR, k) for k in range(len(convert))] else None
        self.recorder: list | None = None  # while fast_path records a call: the outputs returned

    def __call__(self, args: list) -> list:
        if self._boxed is not None and self.executable is self._run_for:  # the executable reads args itself
            results, arrays = self._boxed(args), ()
        else:  # (inline, not a method: this is every compiled call's path)
            picks = self._picks
            arrays = [args[j] for j in picks] if picks is not None else [convert(args[j]) for j, convert in self._inputs]
            if self._carrier:
                arrays.append(np.empty((0, *(int(args[i]) for i in self._carrier)), np.int8))
            for read in self._size_values:
                arrays.append(np.array(read(args), np.int64))
            if self._num_keys:
                arrays += draw_keys(self._num_keys)
            results = (self._run if self.executable is self._run_for else self.executable)(*arrays)
            if self._takes_tensors:
                arrays = ()  # nothing to check the results against: they never alias the inputs
        if self._direct is not None:
            outputs = [convert(r, arrays) for convert, r in zip(self._direct, results)]
        else:
            outputs = [self._output(spec, args, results, arrays) for spec in self._outputs]
        args.clear()  # the boxed convention: the callee frees its inputs
        if self.recorder is not None:
            self.recorder.append(outputs)
        return outputs

    @property
    def returns_ir_outputs(self) -> bool:
        """Whether the FX graph's outputs are exactly the IR graph's, in order (no input
        passed through, no size): what fast_path's direct entries need."""
        return self._direct is not None

    def positional(self, order: list[int]):
        """The call :meth:`__call__` makes, as a function of the user's argument tuple
        (``a[order[j]]`` is FX argument ``j``) returning the output list, without the boxed
        list, the output plan or the recorder: fast_path's direct entries on a hit. None
        where the plan needs more than the IR outputs in order (an argument passed through,
        a size), or the call draws random keys or carries sizes.

        On a 4-element add through onnx this is 2.9 µs where the boxed call took 3.9
        (studies/dispatch/results.md).
        """
        if self._direct is None or self._carrier or self._size_values or self._num_keys:
            return None
        unchecked = getattr(self.executable, "unchecked", None)  # the caller's guards checked the types
        guarded = self._run if self.executable is self._run_for else self.executable
        run, outputs = (unchecked() if unchecked else None) or guarded, self._direct
        picks = tuple((order[j], convert) for j, convert in self._inputs)
        if self._takes_tensors:  # results never alias inputs: nothing to check them against
            if len(picks) == 1 and len(outputs) == 1:
                ((i, _), (out,)) = picks[0], outputs
                return lambda a: [out(run(a[i])[0], ())]
            return lambda a: [out(r, ()) for out, r in zip(outputs, run(*[a[i] for i, _ in picks]))]
        if len(picks) == 1 and len(outputs) == 1:
            ((i, convert), (out,)) = picks[0], outputs

            def one(a):
                arrays = (convert(a[i]),)
                return [out(run(*arrays)[0], arrays)]

            return one

        def call(a):
            arrays = [convert(a[i]) for i, convert in picks]
            return [out(r, arrays) for out, r in zip(outputs, run(*arrays))]

        return call

    @staticmethod
    def _output(spec: tuple, args: list, results, arrays: list):
        kind, a, b = spec
        if kind is OutputSource.IR:
            return b(results[a], arrays)
        if kind is OutputSource.INPUT:
            return args[a]
        if kind is OutputSource.SYM:  # a symbolic size, read off the argument that carries it
            return int(args[a]) if b is None else int(args[a].shape[b])
        if kind is OutputSource.SYM_EXPR:  # evaluated from its symbols' sizes, each read off its argument
            return a(args)
        return a


def _evaluate_size(expr, carriers: dict, args: list) -> int:
    """The size ``expr`` at this call: each symbol read off the argument that carries it (an int
    argument, or a dim of a tensor's shape: ``carriers[name] = (argument, dim or None)``)."""
    return evaluate_dim(expr, {name: int(args[i]) if d is None else int(args[i].shape[d])
                               for name, (i, d) in carriers.items()})


def size_reader(expr, carriers: dict) -> Callable[[list], int]:
    """:func:`_evaluate_size` of ``expr`` as a function of the call's arguments, built once: a
    decode step evaluates two to four sizes (``s + 1``, ``s - 3``) a call, where the general walk
    over ``expr``'s terms costs about 3 µs each. A sum of symbols times integers (mistral's
    ``s - 3`` and ``s + 1``, MPT's ``64 - s``) reads each symbol off its argument; any other form
    (a product, a quotient) takes the general walk.

    >>> from parity.ir import Symbol
    >>> read = size_reader(Symbol("s") * 2 - 3, {"s": (1, 0)})
    >>> read([None, torch.zeros(5, 2)])
    7
    """
    terms, constant = [], 0
    for coeff, factors in monomials(expr):
        if not factors:
            constant += coeff
        elif len(factors) == 1 and isinstance(factors[0][0], Symbol) and factors[0][1] == 1:
            terms.append((coeff, *carriers[factors[0][0].name]))
        else:
            return lambda args: _evaluate_size(expr, carriers, args)

    def value(args: list, i: int, d: int | None) -> int:
        return int(args[i]) if d is None else int(args[i].shape[d])

    if len(terms) == 1:
        ((coeff, i, d),) = terms
        if d is None:
            return lambda args: coeff * int(args[i]) + constant
        return lambda args: coeff * int(args[i].shape[d]) + constant
    return lambda args: sum(coeff * value(args, i, d) for coeff, i, d in terms) + constant


def direct_entry(graph: Callable, order: list[int], kind) -> Callable:
    """A fast-path entry (frontend/fast_path.py and fast_path_disk.py) that calls ``graph`` (a
    CompiledGraph, or auto's object over one) without AOTAutograd's runtime wrapper, whose
    cost a tiny call notices: its positional call where it has one, else boxed, with a fresh
    list. ``order[j]`` is the argument feeding FX input ``j``; ``kind`` is what the call
    returns (None: the one output; tuple or list)."""
    positional = getattr(graph, "positional", None)
    call = positional(order) if positional is not None else None
    if call is not None:
        return (lambda a: call(a)[0]) if kind is None else (lambda a: kind(call(a)))
    if kind is None:
        return lambda a: graph([a[i] for i in order])[0]
    return lambda a: kind(graph([a[i] for i in order]))


def _as_is(tensor):
    return tensor


def _input_or(convert):
    """An in-place output's converter: the input tensor the executable wrote into, as it is;
    else (an input it could not write into) ``convert``'s result."""
    return lambda result, inputs: result if type(result) is torch.Tensor else convert(result, inputs)


class OutputSource(enum.Enum):
    """Where a compiled graph's output comes from (one entry of CompiledGraph's plan)."""

    IR = "an IR output"
    INPUT = "an argument passed through"
    SYM = "a symbolic size, read off an argument"
    SYM_EXPR = "a size expression, evaluated from its symbols' sizes"
    CONST = "a constant"
