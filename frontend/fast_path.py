"""The signature fast path: calls with a tensor signature seen before skip Dynamo.

Dynamo checks its guards on every call, most of a tiny function's call time, and its
code evicts the runtime's caches (docs/frontend.md has the figures). The fast path keeps, per call
signature, the function Dynamo calls for it (AOTAutograd's runtime wrapper around
parity's executable), and calls it directly, like ``jax.jit``'s cache. It is on by default
for functions (``fast_path=None``), where it makes an entry only when Dynamo's own guards
show that nothing but the tensor arguments was read (below); ``fast_path=True`` trusts
the user instead, ``fast_path=False`` turns it off; modules always take Dynamo's path.

- **The signature**: every positional argument is a plain CPU ``torch.Tensor`` that does
  not require grad (its dtype, shape and strides are the key), no two share memory, no
  keyword arguments, grad mode, inference mode, autocast and the torch-function mode stack
  as they were. On each hit, torch's global state snapshot (Dynamo's ``GlobalStateGuard``:
  grad mode, autocast on every device, default dtype, deterministic algorithms, thread
  count, ...) taken when the entry was made is checked too; a change takes Dynamo's path.
- **When an entry is made**: the call that missed ran through Dynamo as usual, ran exactly
  one captured graph, which Dynamo traced from the whole function (no graph break) with
  no side effect on objects that existed before the call (list appends, attribute or
  global stores), that graph's inputs were the call's arguments (in any order, unused
  ones left out; no parameters, globals or closure tensors lifted as inputs) and the call
  returned exactly the graph's outputs (one tensor, or a tuple or list of them in order).
  Anything else (graph breaks, Python work around the graph, modules) keeps taking
  Dynamo's path. In-place updates of the arguments still happen (AOTAutograd's wrapper
  applies them).
- **By default, only what Dynamo saw read**: every guard Dynamo installed for the graph
  must be on a positional argument of the function, on torch's global state (checked as
  above), an identity check of torch itself (``torch``, ``torch.nn.functional`` and
  their functions and classes, reached through a global) or of a builtin (``len``), or on a
  module-level constant of the function's own module (an int, float, bool, str, None or a
  tuple of them: ``HEADS = 4``), whose value and type each hit checks again
  (:class:`GlobalConstants`; such entries are not kept on disk). A guard on anything else
  (a closure value, a mutable global, an attribute of a module or object, a module's
  ``training`` flag, a user function called through a global) means the result may depend
  on Python state that the signature does not see: that function keeps Dynamo's path,
  whose guards notice the change.
- **Direct entries**: for an inference graph whose outputs are its IR outputs, and when
  AOTAutograd's runtime wrapper handed back exactly the tensors parity's graph returned
  (no input mutation written back, no view regenerated), the entry calls parity's graph
  itself, without the wrapper (a measurable share of a tiny call). Otherwise it calls the wrapper.
- **With** ``fast_path=True`` **the guards are not read** (as under ``jax.jit``): Python
  values the function reads besides its tensor arguments (globals, closure values, flags)
  are those of the call that made the entry. Monkeypatching torch's own functions is not
  noticed in either mode.

Example::

    >>> import torch, parity
    >>> f = parity.compile(lambda x: torch.relu(x * 2 + 1), backend="reference")
    >>> f(torch.ones(2)).tolist(), f(torch.zeros(2)).tolist(), len(f.fast_path.entries)
    ([3.0, 3.0], [1.0, 1.0], 1)
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable

import torch
from torch._C._dynamo.guards import GlobalStateGuard, TensorGuards

from .compiled_graph import direct_entry

torch_function_depth = torch._C._len_torch_function_stack


def signature(args: tuple, kwargs: dict):
    """The fast path's key for a call, or None when the call is not eligible."""
    if kwargs:
        return None
    key = [torch.is_grad_enabled(), torch.is_inference_mode_enabled(), torch.is_autocast_enabled(),
           torch_function_depth()]
    storages = set()
    for a in args:
        if type(a) is not torch.Tensor or a.requires_grad or not a.is_cpu:  # is_cpu: 0.6 µs less than device.type
            return None
        key.append((a.dtype, a.shape, a.stride()))
        storages.add(a.untyped_storage().data_ptr())
    if len(storages) != len(args):
        return None  # arguments sharing memory: AOTAutograd's wrapper for them assumes that aliasing
    return tuple(key)


def distinct_storages(args: tuple) -> bool:
    """Whether no two arguments share memory (AOTAutograd's wrapper for them assumed none)."""
    return len({a.untyped_storage().data_ptr() for a in args}) == len(args)


def tensor_guards(args: tuple) -> TensorGuards:
    """torch's C++ check of what :func:`signature` keys on per argument, for the hit path:
    exactly ``torch.Tensor`` (no subclass, no Parameter), dtype, device, shape and strides,
    requires_grad and the dispatch keys (an inference tensor, a conjugate or negative view, a
    call under inference mode all fail it). One check of one argument costs about 0.1 µs,
    where :func:`signature` takes 0.85."""
    return TensorGuards(*args, dynamic_dims_sizes=[list(a.shape) for a in args],
                        dynamic_dims_strides=[list(a.stride()) for a in args])


class FastPath:
    """Signature → the function Dynamo would call, for the calls that qualify (see the module).

    With ``persist=(function key, options)`` (a ``cache_dir`` set), entries are also kept on
    disk for the next process (frontend/fast_path_disk.py).
    """

    def __init__(self, persist: tuple | None = None, read_guards: bool = True):
        self.entries: dict[tuple, Callable] = {}
        self.states: dict[tuple, object] = {}  # signature -> torch's global state when the entry was made
        self.guards: dict[tuple, TensorGuards] = {}  # signature -> its tensor_guards
        # What a call tries before computing its signature: the entry last made or hit, as
        # (argument count, tensor guards, global state, torch-function depth, entry).
        self.last: tuple | None = None
        self.disk_misses: set[tuple] = set()  # signatures the disk cache had no entry for
        self.persist = persist
        self.read_guards = read_guards  # False: fast_path=True, the user vouches for the function
        self._calls: list | None = None  # while a missed call runs: one record per graph run
        self._graphs: list | None = None  # while Dynamo's backend runs: (parity's compiled graph, kind)

    @property
    def recording(self) -> bool:
        """Whether a missed call is running and recording its graph runs (its nested calls must
        come through :meth:`call`)."""
        return self._calls is not None

    def on_compiled(self, graph, kind: str) -> None:
        """The session's hook: parity compiled ``graph`` for the backend call in progress."""
        if self._graphs is not None:
            self._graphs.append((graph, kind))

    def wrap_backend(self, backend: Callable, code, arguments: frozenset[str] = frozenset()) -> Callable:
        """A Dynamo backend that returns ``backend``'s function, watched while a miss records
        when it is the whole of ``code``'s frame (the user's function) without side effects
        (and, reading guards, when they are only on ``arguments``: :func:`call_arguments`)."""

        def watched_backend(gm, example_inputs):
            self._graphs = graphs = []
            try:
                compiled = backend(gm, example_inputs)
            finally:
                self._graphs = None
            if not _whole_pure_frame(code):
                return compiled
            constants = _guards_read_only_arguments(code, arguments) if self.read_guards else NO_CONSTANTS
            if constants is None:
                return compiled
            parity_graph = graphs[0] if len(graphs) == 1 else None

            def watched(*args):
                if self._calls is None:
                    return compiled(*args)
                inner = parity_graph[0] if parity_graph is not None else None
                seen = []  # what parity's CompiledGraph returned inside AOTAutograd's wrapper
                if hasattr(inner, "recorder"):
                    inner.recorder = seen
                try:
                    outputs = compiled(*args)
                finally:
                    if hasattr(inner, "recorder"):
                        inner.recorder = None
                self._calls.append((args, outputs, compiled, parity_graph, seen, constants))
                return outputs

            return watched

        return watched_backend

    def call(self, compiled: Callable, args: tuple, kwargs: dict):
        """Run ``compiled`` (Dynamo's path) or the entry for this signature."""
        key = signature(args, kwargs)
        if key is not None:
            entry = self.entries.get(key)
            if entry is not None and self.states[key].check():
                self._remember(key, args)
                return entry(args)
            state = GlobalStateGuard()
            if entry is None and self.persist is not None and key not in self.disk_misses:
                from .fast_path_disk import load

                entry = load(self.persist[0], key, self.persist[1])
                if entry is not None:
                    self.entries[key], self.states[key] = entry, state
                    self._remember(key, args)
                    return entry(args)
                self.disk_misses.add(key)  # asked once per signature: a miss costs a file lookup
        self._calls = calls = [] if key is not None else None
        try:
            result = compiled(*args, **kwargs)
        finally:
            self._calls = None
        if key is not None and len(calls) == 1:
            shape = _entry_shape(calls[0], args, result)
            if shape is not None:
                direct = _direct_graph(calls[0])
                self.entries[key] = (_make_entry(calls[0][2], *shape, len(args)) if direct is None
                                     else direct_entry(direct, *shape))
                constants = calls[0][5]
                self.states[key] = StateAndConstants(state, constants) if constants else state
                self._remember(key, args)
                # a disk entry's key holds the function's plain globals, but a loaded entry
                # would not watch them: entries that read constants stay in this process
                if self.persist is not None and calls[0][3] is not None and not constants:
                    self._store(key, calls[0], args, result, *shape)
        return result

    def _remember(self, key: tuple, args: tuple) -> None:
        """Make ``key``'s entry the one the next call tries first (api.py's hit path)."""
        guards = self.guards.get(key)
        if guards is None:
            guards = self.guards[key] = tensor_guards(args)
        self.last = (len(args), guards, self.states[key], key[3], self.entries[key])

    def _store(self, key, call, args, result, order, kind) -> None:
        from .fast_path_disk import qualifies, store

        (graph, graph_kind) = call[3]
        if qualifies(graph, graph_kind, args, order, result, list(call[1])):
            store(self.persist[0], key, self.persist[1], graph, order, kind)


def _whole_pure_frame(code) -> bool:
    """Whether the graph Dynamo is compiling now is all of ``code``'s frame (no graph break,
    not a resume function) and Dynamo recorded no Python side effects to replay after it."""
    try:
        from torch._dynamo.symbolic_convert import InstructionTranslator
        from torch._dynamo.variables.base import AttributeMutationExisting, ValueMutationExisting

        tx = InstructionTranslator.current_tx()
        output, effects = tx.output, tx.output.side_effects
        if tx.f_code is not code or output.compile_subgraph_reason.graph_break:
            return False
        if effects.tensor_hooks or effects.save_for_backward:
            return False
        # Objects made inside the frame may change freely; a change to one that existed
        # before the call (a list appended to, an attribute stored) is replayed by Dynamo.
        existing = (AttributeMutationExisting, ValueMutationExisting)
        return not any(isinstance(getattr(v, "mutation_type", None), existing)
                       for v in effects.id_to_variable.values() if effects.is_modified(v))
    except Exception:  # Dynamo's internals moved: no fast path, never a wrong one
        return False


# Guards Dynamo installs on torch itself and on builtins that only check identity (what
# torch.relu or len is).
_TORCH_IDENTITY_GUARDS = frozenset({"MODULE_MATCH", "FUNCTION_MATCH", "BUILTIN_MATCH", "CLASS_MATCH",
                                    "CLOSURE_MATCH", "ID_MATCH"})


def call_arguments(fn) -> frozenset[str]:
    """The parameters of ``fn``'s code that the call's positional arguments fill (not a bound
    method's ``self``, which is state the signature does not see)."""
    code = fn.__code__
    names = code.co_varnames[:code.co_argcount + bool(code.co_flags & 0x04)]  # 0x04: *args
    return frozenset(names[1:] if inspect.ismethod(fn) else names)


def _guards_read_only_arguments(code, arguments: frozenset[str]) -> GlobalConstants | None:
    """The global constants read, when every guard of the graph Dynamo is compiling now is on
    one of ``arguments`` (local names in ``code``'s frame), on torch's global state, an
    identity check of torch's own modules, or on a module-level constant of the function's
    module (an int, float, bool, str, None, or a tuple of them: ``HEADS = 4``) whose value a
    hit checks again (:class:`GlobalConstants`). None otherwise: no entry."""
    try:
        from torch._dynamo.source import GlobalSource, GlobalStateSource, LocalSource, ShapeEnvSource
        from torch._dynamo.symbolic_convert import InstructionTranslator

        tx = InstructionTranslator.current_tx()
        constants = {}
        for guard in tx.output.guards:
            source = guard.originating_source
            if isinstance(source, (GlobalStateSource, ShapeEnvSource)):
                continue  # the signature and the state snapshot cover these
            root = source
            while getattr(root, "base", None) is not None:
                root = root.base
            if isinstance(root, LocalSource) and root.local_name in arguments \
                    and not root.is_derefed_cell_contents:
                continue
            if isinstance(root, GlobalSource) and _is_torch(tx.f_globals.get(root.global_name)) \
                    and guard.create_fn_name() in _TORCH_IDENTITY_GUARDS:
                continue
            if isinstance(root, GlobalSource) and root.global_name.startswith("__builtins_dict__") \
                    and guard.create_fn_name() in _TORCH_IDENTITY_GUARDS:
                continue  # what len or range is (a builtin rebound in builtins is not noticed, as torch's)
            # an immutable value: watching it whole covers any guard on a part of it (SHAPE[0])
            if isinstance(root, GlobalSource) and tx.f_code is code \
                    and _is_constant(tx.f_globals.get(root.global_name, _ABSENT)):
                constants[root.global_name] = tx.f_globals[root.global_name]
                continue
            return None
        return GlobalConstants(tx.f_globals, constants)
    except Exception:  # Dynamo's internals moved: no fast path, never a wrong one
        return None


_ABSENT = object()
_CONSTANT_TYPES = (int, float, bool, str, type(None))


def _is_constant(value) -> bool:
    if type(value) in _CONSTANT_TYPES:
        return True
    return type(value) is tuple and all(_is_constant(v) for v in value)


class GlobalConstants:
    """Module-level constants a function's graph was traced with, checked again on each hit:
    a changed (or deleted) value takes Dynamo's path, whose guards retrace with the new one.

    Example::

        >>> watch = GlobalConstants({"HEADS": 4}, {"HEADS": 4})
        >>> watch.unchanged(), bool(watch)
        (True, True)
        >>> watch.module["HEADS"] = 8; watch.unchanged()
        False
    """

    __slots__ = ("module", "values")

    def __init__(self, module: dict, values: dict):
        self.module, self.values = module, tuple(values.items())

    def __bool__(self) -> bool:
        return bool(self.values)

    def unchanged(self) -> bool:
        module = self.module
        for name, value in self.values:
            now = module.get(name, _ABSENT)
            if type(now) is not type(value) or now != value:
                return False
        return True


NO_CONSTANTS = GlobalConstants({}, {})  # fast_path=True: the user vouches, nothing is watched


class StateAndConstants:
    """A hit's state check for an entry whose graph read global constants: torch's global
    state (``GlobalStateGuard``) and the constants' values."""

    __slots__ = ("state", "constants")

    def __init__(self, state, constants: GlobalConstants):
        self.state, self.constants = state, constants

    def check(self) -> bool:
        return self.state.check() and self.constants.unchanged()


def _is_torch(value) -> bool:
    name = getattr(value, "__name__", "") if isinstance(value, types.ModuleType) else ""
    return name == "torch" or name.startswith("torch.")


def _entry_shape(call, args: tuple, result):
    """``(order, kind)`` for one recorded graph run: which argument feeds each graph input and
    what the call returns (None: one tensor; tuple or list); None if the run does not qualify."""
    graph_args, outputs = call[0], list(call[1])
    # Dynamo orders the graph's inputs by first use, and drops unused arguments.
    order = []
    for g in graph_args:
        found = [i for i, a in enumerate(args) if a is g]
        if len(found) != 1:
            return None  # an input that is not one of the call's arguments (a closure tensor, ...)
        order.append(found[0])
    if isinstance(result, torch.Tensor):
        return (order, None) if len(outputs) == 1 and outputs[0] is result else None
    if type(result) in (tuple, list) and len(result) == len(outputs) and all(
            r is o for r, o in zip(result, outputs)):
        return order, type(result)
    return None


def _direct_graph(call):
    """parity's CompiledGraph, when calling it directly is what AOTAutograd's wrapper did:
    an inference graph (nothing to differentiate) whose FX outputs are its IR outputs, and
    the wrapper handed back exactly the tensors it returned (no input mutation written
    back, no view regenerated, nothing detached or wrapped). Else None."""
    args, outputs, _, parity_graph, seen, _ = call
    if parity_graph is None or parity_graph[1] != "inference" or len(seen) != 1:
        return None
    graph = parity_graph[0]
    if not getattr(graph, "returns_ir_outputs", False):
        return None
    returned = list(outputs)
    if len(seen[0]) != len(returned) or not all(a is b for a, b in zip(seen[0], returned)):
        return None
    return graph


def _make_entry(compiled: Callable, order: list[int], kind, n_args: int) -> Callable:
    run = compiled if order == list(range(n_args)) else (lambda *a: compiled(*[a[i] for i in order]))
    if kind is None:
        return lambda a: run(*a)[0]
    return lambda a: kind(run(*a))
