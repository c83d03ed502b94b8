"""What :func:`parity.jax.export` runs: a JAX function traced once, translated to parity's IR,
and written by the backend that owns the format (``frontend/export.py``'s ``EXPORTERS``:
``"onnx"`` by the onnx backend, ``"stablehlo"`` text and ``"jax"``'s serialized form by the
xla backend's own StableHLO lowering, not a call back into the user's jaxpr).

Arguments follow ``jax.export.export(jax.jit(f))(*args)``: pytrees of arrays or
``jax.ShapeDtypeStruct``s, whose sizes may be symbolic (``jax.export.symbolic_shape("b, 8")``);
a symbolic size stays symbolic in the file, named as in JAX (an ONNX ``dim_param``, a
``tensor<?x8xf32>`` in StableHLO). Values the function closes over (a model's weights)
are constants in the file; arrays passed as arguments are its inputs.

Inputs are named by the function's parameters and their pytree paths (``params.w1``,
``batch.x``, ``xs[1]``), outputs by their paths in the result (``output0`` for a lone
array; ``output0``, ``output1.w1`` for ``value_and_grad``'s ``(loss, grads)``; a dict's keys).

Example::

    >>> import jax, jax.numpy as jnp
    >>> traced = trace_for_export(lambda x: jnp.tanh(x) * 2,
    ...                           (jax.ShapeDtypeStruct(jax.export.symbolic_shape("b, 3"), jnp.float32),), {})
    >>> [str(t) for t in traced.graph.input_types], traced.input_names, traced.output_names
    (['f32[b,3]'], ['x'], ['output0'])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax

from ...ir.dims import free_symbols
from ...ir.graph import Graph
from ..export import EXPORTERS, ExportError, warn_unchecked_sizes
from .compat import is_prng_key, trace
from .errors import UnsupportedArgument
from .names import input_name, output_name, parameter_names
from .translate import jaxpr_to_ir


@dataclass(frozen=True)
class TracedForExport:
    """The IR graph of a JAX function and the names its file gives to inputs and outputs."""

    graph: Graph
    input_names: list[str]
    output_names: list[str]


def trace_for_export(fun: Callable, args: Sequence[Any], kwargs: Mapping[str, Any]) -> TracedForExport:
    """Trace ``fun(*args, **kwargs)`` (pytrees of arrays or ``ShapeDtypeStruct``s) to its IR graph."""
    fun = _unwrapped(fun)
    leaves_with_paths, in_tree = jax.tree_util.tree_flatten_with_path((tuple(args), dict(kwargs)))
    leaves = [leaf for _, leaf in leaves_with_paths]
    for i, leaf in enumerate(leaves):
        if is_prng_key(leaf):
            raise UnsupportedArgument(i, str(leaf.dtype))

    def flat(*values):
        call_args, call_kwargs = jax.tree_util.tree_unflatten(in_tree, values)
        return fun(*call_args, **call_kwargs)

    name = getattr(fun, "__name__", "main").replace("<lambda>", "lambda")
    flat.__name__ = name if name.isidentifier() else "main"
    parameters = parameter_names(fun, range(len(args)))
    inputs = [input_name(path, parameters) for path, _ in leaves_with_paths]
    traced = trace(flat, leaves, inputs)
    graph = jaxpr_to_ir(traced, flat.__name__)
    out_paths = [path for path, _ in jax.tree_util.tree_flatten_with_path(
        jax.tree_util.tree_unflatten(traced.out_tree, range(traced.out_tree.num_leaves)))[0]]
    return TracedForExport(graph, inputs, [output_name(path) for path in out_paths])


def export_function(fun: Callable, args: Sequence[Any], kwargs: Mapping[str, Any], *, format: str, path: Path,
                    input_names: Sequence[str] | None = None, output_names: Sequence[str] | None = None):
    """Trace ``fun`` and write it to ``path`` in ``format``: what :func:`parity.jax.export` runs once
    it has checked the format and the path. Returns what the format's backend returns."""
    from ...backends.registry import get_backend

    traced = trace_for_export(fun, args, kwargs)
    inputs = _given(input_names, traced.input_names, "input")
    outputs = _given(output_names, traced.output_names, "output")
    symbols = sorted(set().union(*(free_symbols(d) for t in traced.graph.input_types for d in t.shape)))
    dim_names = {s: s for s in symbols}  # JAX's names, kept in the file
    backend_name, method = EXPORTERS[format]
    written = getattr(get_backend(backend_name), method)(traced.graph, str(path), input_names=inputs,
                                                         output_names=outputs, dim_names=dim_names)
    warn_unchecked_sizes(traced.graph, dim_names, format, "parity.jax.export", stacklevel=4)  # the user's call
    return written


def _unwrapped(fun: Callable) -> Callable:
    """The function under ``parity.jax.jit`` (which runs compiled code, not traceable by JAX);
    with static arguments it cannot be exported as it is: the error says how."""
    from .jitted import JaxJitted

    if not isinstance(fun, JaxJitted):
        return fun
    if fun.static_argnums or fun.static_argnames:
        raise ExportError(f"parity.jax.export got {fun!r}, which has static arguments "
                          f"{list(fun.static_argnums) + list(fun.static_argnames)}: export the plain function with "
                          "them bound, parity.jax.export(functools.partial(f, n=3), x)")
    return fun.fun


def _given(names: Sequence[str] | None, default: list[str], what: str) -> list[str]:
    if names is None:
        return default
    names = list(names)
    if len(names) != len(default):
        raise ExportError(f"{len(names)} {what} names for {len(default)} {what}s (flattened pytree leaves): "
                          f"{default}")
    return names
