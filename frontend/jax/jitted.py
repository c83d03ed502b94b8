"""What :func:`parity.jax.jit` returns: a function that traces on a new signature, translates
the jaxpr to IR, compiles it on the chosen backend, and runs it, caching one executable per
(static arguments, pytree structure, input shapes and dtypes), as ``jax.jit`` does.

Example::

    >>> import jax.numpy as jnp
    >>> double = JaxJitted(lambda x, n: x * n, static_argnums=(1,), backend="reference")
    >>> double(jnp.ones(2), 3).tolist(), len(double.cache)
    ([3.0, 3.0], 1)
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from ...backends.disk_cache import resolve_cache_dir
from ...backends.registry import get_backend
from ...ir.graph import Graph
from ...ir.precision import Precision
from ..auto_options import AutoOptions, resolve_auto_options
from ..auto_race import AutoChoice
from ..runtime_options import checked_backend_options, checked_precision
from .auto import choose_backend, float64_run
from .compat import (
    THREEFRY,
    dispatch_structure,
    dispatched_with_keys,
    fast_call,
    is_prng_key,
    is_tracer,
    key_array,
    key_base,
    key_data,
    key_impl_name,
    restructured,
    trace,
    wrap_key_data,
)
from .errors import UnsupportedArgument
from .names import input_name, parameter_names
from .run import as_numpy, compile_graph, to_jax
from .translate import jaxpr_to_ir


@dataclass
class Compiled:
    """One signature's program: its IR graph, executable, output pytree and the backend running it."""

    graph: Graph
    run: Callable
    out_tree: Any
    out_keys: tuple[bool, ...]  # which flat outputs are PRNG keys (the executable returns their data)
    backend: str
    pick: AutoChoice | None = None  # backend="auto": the race's record
    # xla: the executable taking (dynamic args, dynamic kwargs, run-time zero) as the user's
    # pytrees and returning the user's, JAX's C++ dispatch flattening and checking them (PRNG
    # keys too: its dispatch registry hands over their data); None for other backends and a
    # JAX without the hook.
    native: Any = None


class JaxJitted:
    def __init__(self, fun: Callable, *, static_argnums: int | Sequence[int] | None = None,
                 static_argnames: str | Sequence[str] | None = None, backend: str = "auto", device: str = "cpu",
                 precision: Precision | str = Precision.EXACT, cache_dir: str | bool | None = None,
                 backend_options: Mapping | None = None, auto: AutoOptions | None = None):
        self.fun = fun
        self.static_argnums, self.static_argnames = _statics(fun, static_argnums, static_argnames)
        if backend == "auto":  # as parity.compile: $PARITY_BACKEND (or auto.forced) names one backend
            auto = resolve_auto_options(auto)
            backend = auto.forced or backend
        self.auto = auto if backend == "auto" else None
        self.backend = backend
        self.device = device
        named = None if backend == "auto" else get_backend(backend)  # auto takes no options, no vendor tier
        self.precision = checked_precision(precision, backend, named)
        self.backend_options = checked_backend_options(backend, named, backend_options)
        self.cache_dir = resolve_cache_dir(cache_dir)  # the executables' disk cache (None: off)
        self.cache: dict[tuple, Compiled] = {}
        # The last signature's native call (Compiled.native), tried first: its own argument
        # checks refuse another signature with a TypeError, and the full path takes over.
        self._last_native: tuple | None = None
        self._no_statics = not self.static_argnums and not self.static_argnames
        functools.update_wrapper(self, fun)

    def __repr__(self) -> str:
        name = getattr(self.fun, "__name__", "fn")
        picks = sorted({c.backend for c in self.cache.values()})
        runs = f" → {', '.join(picks)}" if self.backend == "auto" and picks else ""
        return f"<parity.jax.jit of {name}: backend={self.backend}{runs}, device={self.device}>"

    def __call__(self, *args, **kwargs):
        last = self._last_native
        if last is not None:
            if self._no_statics:
                try:
                    return last[1](args, kwargs, last[2])
                except TypeError:  # another signature (or a real error, which the full path raises)
                    pass
            else:
                statics, (dyn_args, dyn_kwargs) = self._split(args, kwargs)
                if statics == last[0]:
                    try:
                        return last[1](dyn_args, dyn_kwargs, last[2])
                    except TypeError:
                        pass
        return self._call_checked(args, kwargs)

    def _call_checked(self, args: tuple, kwargs: dict):
        statics, dynamic = self._split(args, kwargs)
        leaves, in_tree = jax.tree_util.tree_flatten(dynamic)
        if any(is_tracer(leaf) for leaf in leaves):
            raise TypeError(f"{self!r} was called inside a JAX transformation (jax.grad, jax.vmap, jax.jit): parity "
                            "runs a whole JAX program, so put the transformation inside it: "
                            "parity.jax.jit(jax.grad(f))")
        keys = tuple(is_prng_key(leaf) for leaf in leaves)
        for i, (leaf, is_key) in enumerate(zip(leaves, keys)):
            if is_key and key_impl_name(leaf.dtype) != THREEFRY:
                raise UnsupportedArgument(i, str(leaf.dtype))
        arrays = as_numpy([key_data(leaf) if is_key else leaf for leaf, is_key in zip(leaves, keys)])
        signature = (statics, in_tree, keys, tuple((a.shape, a.dtype) for a in arrays))
        compiled = self.cache.get(signature)
        if compiled is None:
            compiled = self.cache[signature] = self._compile(statics, in_tree, leaves, arrays)
            compiled.native = self._native(compiled.run, dynamic, keys, compiled.out_tree, compiled.out_keys)
        if compiled.native is not None:
            self._last_native = (statics, *compiled.native)
            return compiled.native[0](*dynamic, compiled.native[1])
        return _as_user_outputs(compiled.run(*arrays), compiled.out_tree, compiled.out_keys)

    @staticmethod
    def _native(run: Callable, dynamic: tuple, keys: tuple[bool, ...], out_tree, out_keys: tuple[bool, ...]):
        """(call, zero) for :attr:`Compiled.native`, where the executable ``run`` is XLA's on CPU."""
        jax_compiled = getattr(run, "jax_compiled", None)
        if jax_compiled is None:
            return None
        found = jax_compiled()
        if found is None:
            return None
        flat, zero = found
        if any(keys) or any(out_keys):
            native = dispatched_with_keys(flat, dispatch_structure(((*dynamic, zero), {})), out_tree, out_keys)
            if native is not None:
                return native, zero
            return _with_keys(fast_call(flat), jax.tree_util.tree_structure(dynamic), keys, out_tree, out_keys), zero
        in_tree = jax.tree_util.tree_structure(((*dynamic, zero), {}))
        native = restructured(flat, in_tree, out_tree)
        return None if native is None else (native, zero)

    # -- static and dynamic arguments ---------------------------------------------------

    def _split(self, args: tuple, kwargs: dict) -> tuple[tuple, tuple]:
        statics = tuple((i, args[i]) for i in self.static_argnums if i < len(args))
        statics += tuple(sorted((k, v) for k, v in kwargs.items() if k in self.static_argnames))
        dyn_args = tuple(a for i, a in enumerate(args) if i not in self.static_argnums)
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
        try:
            hash(statics)
        except TypeError as exc:
            raise TypeError(f"parity.jax.jit: static arguments must be hashable, as for jax.jit ({exc})") from None
        return statics, (dyn_args, dyn_kwargs)

    def _flat_function(self, statics: tuple, in_tree) -> Callable:
        positional = {i: v for i, v in statics if isinstance(i, int)}
        named = {k: v for k, v in statics if isinstance(k, str)}

        def flat(*leaves):
            dyn_args, dyn_kwargs = jax.tree_util.tree_unflatten(in_tree, leaves)
            dyn = iter(dyn_args)
            args = [positional[i] if i in positional else next(dyn) for i in range(len(dyn_args) + len(positional))]
            return self.fun(*args, **dyn_kwargs, **named)

        flat.__name__ = getattr(self.fun, "__name__", "jax_fn").replace("<lambda>", "lambda")
        return flat

    def _argument_names(self, statics: tuple, in_tree, count: int) -> list[str]:
        """The flat arguments' names in the user's terms (``params.w1``), for errors."""
        dyn_args, dyn_kwargs = jax.tree_util.tree_unflatten(in_tree, range(count))
        positions = [i for i in range(len(dyn_args) + len(statics)) if i not in self.static_argnums]
        parameters = parameter_names(self.fun, positions[:len(dyn_args)])
        return [input_name(path, parameters)
                for path, _ in jax.tree_util.tree_flatten_with_path((dyn_args, dyn_kwargs))[0]]

    # -- compiling ------------------------------------------------------------------------

    def _compile(self, statics: tuple, in_tree, leaves: list, arrays: list[np.ndarray]) -> Compiled:
        """``leaves`` are the call's (PRNG keys as keys), ``arrays`` what the executable takes (keys as data)."""
        flat = self._flat_function(statics, in_tree)
        traced = trace(flat, leaves, self._argument_names(statics, in_tree, len(leaves)))
        graph = jaxpr_to_ir(traced, flat.__name__)
        if self.backend != "auto":
            run = compile_graph(self.backend, graph, self.device, self.precision, cache_dir=self.cache_dir,
                                backend_options=self.backend_options)
            return Compiled(graph, run, traced.out_tree, traced.out_keys, self.backend)
        want = [np.asarray(key_data(o) if is_key else o) for o, is_key in
                zip(jax.tree_util.tree_leaves(jax.jit(flat)(*leaves)), traced.out_keys, strict=True)]
        dynamic = jax.tree_util.tree_unflatten(in_tree, leaves)
        keys = tuple(is_prng_key(leaf) for leaf in leaves)

        def as_called(run: Callable) -> Callable[[], Any]:  # what a call with ``run`` costs the user
            native = self._native(run, dynamic, keys, traced.out_tree, traced.out_keys)
            if native is not None:
                return lambda: jax.block_until_ready(native[0](*dynamic, native[1]))
            # the whole converted call: the leaves to NumPy (ORT's and Inductor's executables take
            # NumPy arrays or tensors), the outputs back to jax.Arrays and the user's pytree. Timing
            # the executable alone on ready arrays picked onnx for a ConvNeXt forward whose call
            # took 2.6x xla's: its 40 parameter leaves' conversions were not counted.
            def converted():
                leaves = jax.tree_util.tree_leaves(dynamic)
                arrays = as_numpy([key_data(leaf) if is_key else leaf for leaf, is_key in zip(leaves, keys)])
                return _as_user_outputs(run(*arrays), traced.out_tree, traced.out_keys)

            return lambda: jax.block_until_ready(converted())

        run, pick = choose_backend(graph, self, arrays, want, as_called, lambda: float64_run(flat, leaves))
        return Compiled(graph, run, traced.out_tree, traced.out_keys, pick.choice, pick)


def _as_user_outputs(results: Sequence, out_tree, out_keys: tuple[bool, ...]):
    """A non-XLA executable's results as the user's pytree of jax.Arrays (PRNG keys around their data)."""
    outputs = [wrap_key_data(o) if is_key else o for o, is_key in zip(to_jax(results), out_keys, strict=True)]
    return jax.tree_util.tree_unflatten(out_tree, outputs)


def _with_keys(flat: Callable, in_tree, keys: tuple[bool, ...], out_tree, out_keys: tuple[bool, ...]) -> Callable:
    """The native call of a program with PRNG keys in or out where JAX's C++ dispatch cannot take
    them (:func:`.compat.dispatched_with_keys` is None): the graph takes and returns their data,
    so the arguments are flattened here, each key handed over as the array it holds, and the
    outputs rebuilt (keys around their data), in Python. Compiling the conversions into a
    second executable cost a second XLA compile per signature, one the disk cache did not keep.
    Another signature raises a TypeError, as the restructured executable does."""
    def call(dyn_args, dyn_kwargs, zero):
        leaves, tree = jax.tree_util.tree_flatten((dyn_args, dyn_kwargs))
        if tree != in_tree:
            raise TypeError(f"arguments {tree} where the program was compiled for {in_tree}")
        outputs = flat(*(key_base(leaf) if is_key else leaf for leaf, is_key in zip(leaves, keys)), zero)
        return jax.tree_util.tree_unflatten(out_tree, [key_array(o) if is_key else o
                                                       for o, is_key in zip(outputs, out_keys, strict=True)])

    return call


def _statics(fun: Callable, argnums, argnames) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """jax.jit's convention: either list completes the other from the signature."""
    argnums = () if argnums is None else (argnums,) if isinstance(argnums, int) else tuple(argnums)
    argnames = () if argnames is None else (argnames,) if isinstance(argnames, str) else tuple(argnames)
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return argnums, argnames
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    argnums = tuple(sorted(set(argnums) | {positional.index(n) for n in argnames if n in positional}))
    argnames = tuple(sorted(set(argnames) | {positional[i] for i in argnums if i < len(positional)}))
    return argnums, argnames
