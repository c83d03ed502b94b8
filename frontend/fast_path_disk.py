"""``fast_path=True`` with a ``cache_dir``: a fast-path entry kept on disk for the next process.

A new process's first call of a signature stored here skips Dynamo and AOTAutograd: it
reads the IR graph and the frontend's calling plan (:class:`~.translate.Translation`),
loads the executable from the disk cache (backends/disk_cache.py) and calls parity's
boxed callable directly. An entry is written only when that changes nothing: the
graph draws no random numbers, its outputs are the IR's outputs in order (no input
passed through, no size, no in-place update of an argument: what AOTAutograd's wrapper
would add) and calling it directly gave the same values as the call through Dynamo.

The key is the function's identity as far as it can be read without running it: its
code (bytecode, constants, names, file and qualified name), the values of the globals and
closure cells it names and of its argument defaults that are plain Python values (numbers, strings, booleans, None,
tuples of them), the keys of the user functions it names (their code, recursively), and
modules, classes and library functions by their qualified name, the call
signature, torch's default dtype and deterministic-algorithms flag, the backend, the
device and the versions (disk_cache.stack_versions). Entries made with ``fast_path=True``
(guards not read) have keys of their own: they never serve a function compiled with the
default, whose entries exist only where Dynamo's guards showed no other state was read. A
function naming a global or closure value of any other type gets no entry. As for the
in-process fast path, a function must not depend on other Python state.
"""

from __future__ import annotations

import hashlib
import pickle
import types
from collections.abc import Callable

import torch

PLAIN = (int, float, str, bool, type(None), bytes)
# Modules whose functions count by name, not by code (torch's version is in the key).
LIBRARIES = frozenset({"torch", "torch.nn.functional", "math", "operator", "builtins", "functools"})


def _plain(value, seen: set) -> str | None:
    """A stable text for a value the key may depend on, or None when there is none."""
    if isinstance(value, PLAIN):
        return repr(value)
    if isinstance(value, tuple):
        parts = [_plain(v, seen) for v in value]
        return None if None in parts else "(" + ",".join(parts) + ")"
    if isinstance(value, types.FunctionType) and value.__module__ not in LIBRARIES:
        return function_key(value, seen)  # a helper of the user's: its own code counts
    if isinstance(value, (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type)):
        return f"{getattr(value, '__module__', '')}:{getattr(value, '__qualname__', getattr(value, '__name__', ''))}"
    return None


def function_key(fn, seen: set | None = None) -> str | None:
    """A hash of what ``fn`` computes with, as far as it can be read; None when it cannot be.

    User functions it calls through globals or closures count by their own key (their
    code); modules, classes and library functions by name (their versions: torch's is in
    the cache key, others are not).
    """
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    seen = set() if seen is None else seen
    if code in seen:
        return code.co_qualname  # recursion: already being keyed
    seen.add(code)
    parts = [code.co_filename, code.co_qualname, code.co_code.hex(), repr(code.co_consts), repr(code.co_names)]
    for name in code.co_names:
        if name in fn.__globals__:
            text = _plain(fn.__globals__[name], seen)
            if text is None:
                return None
            parts.append(f"{name}={text}")
    for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
        text = _plain(cell.cell_contents, seen)
        if text is None:
            return None
        parts.append(f"{name}={text}")
    # defaults live on the function, not its code: ``lambda x, k=k: x + k`` made in a loop
    defaults = [(str(i), v) for i, v in enumerate(fn.__defaults__ or ())] + sorted((fn.__kwdefaults__ or {}).items())
    for name, value in defaults:
        text = _plain(value, seen)
        if text is None:
            return None
        parts.append(f"default {name}={text}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _disk_key(fn_key: str, signature: tuple, options) -> dict:
    from ..backends.disk_cache import cache_key

    return cache_key(fn_key, f"fast_path-{options.backend}", options.device, [repr(signature), _torch_state()],
                     _versions(options.backend), precision=options.precision)


def _torch_state() -> str:
    """torch's global state that a graph may depend on and the signature does not hold (an
    entry stored under float64 as the default dtype is no entry for a float32 process)."""
    return f"default_dtype={torch.get_default_dtype()} deterministic={torch.are_deterministic_algorithms_enabled()}"


def _versions(backend: str) -> dict:
    from ..backends.disk_cache import stack_versions

    return stack_versions(backend)


def qualifies(graph, kind: str, args: tuple, order: list[int], result, outputs: list) -> bool:
    """Whether ``graph`` (a CompiledGraph) called directly gives what the call through Dynamo gave."""
    from .compiled_graph import CompiledGraph

    if type(graph) is not CompiledGraph or kind != "inference" or graph.translation.num_keys \
            or graph.translation.size_values:
        return False
    plan = graph.translation.outputs
    if plan != [("ir", k) for k in range(len(plan))] or len(plan) != len(outputs):
        return False
    direct = graph([args[i] for i in order])
    return len(direct) == len(outputs) and all(
        isinstance(d, torch.Tensor) and d.dtype == o.dtype and d.shape == o.shape and torch.equal(d, o)
        for d, o in zip(direct, outputs))


def store(fn_key: str, signature: tuple, options, graph, order: list[int], kind) -> None:
    """Write the entry: ``order`` maps graph inputs to arguments, ``kind`` is what the call
    returns (None: the one output; tuple or list: all of them)."""
    from ..backends.disk_cache import DiskCache

    payload = pickle.dumps((graph.translation, graph.graph, order, kind))
    DiskCache(options.cache_dir).store(_disk_key(fn_key, signature, options), payload)


def load(fn_key: str, signature: tuple, options) -> Callable | None:
    """The entry stored for this call, or None (absent, other versions, unreadable)."""
    from ..backends.disk_cache import DiskCache
    from ..backends.registry import get_backend
    from .compiled_graph import STATS, CompiledGraph, compiled_executable, direct_entry
    from .plugin_runtime import runtime_request

    payload = DiskCache(options.cache_dir).load(_disk_key(fn_key, signature, options))
    if payload is None:
        return None
    try:
        translation, graph, order, kind = pickle.loads(payload)
        executable = compiled_executable(graph, get_backend(options.backend), options.device, options.cache_dir,
                                         precision=options.precision, request=runtime_request(options))
    except Exception:  # an entry this process cannot use: Dynamo's path, and a new entry
        return None
    STATS["fast_path_disk_loads"] += 1
    return direct_entry(CompiledGraph(translation, graph, executable), order, kind)
