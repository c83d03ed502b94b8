"""Arguments and results of a JAX function named in the user's terms: the parameter's name, then
its pytree path (``params.w1``, ``batch.x``, ``xs[1]``; results ``output0``, ``output1.w1``).
Export names a file's inputs and outputs with them; errors name an argument with them.

Example::

    >>> import jax
    >>> paths = [p for p, _ in jax.tree_util.tree_flatten_with_path((({"w1": 1},), {}))[0]]
    >>> [input_name(p, parameter_names(lambda params: params, range(1))) for p in paths]
    ['params.w1']
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable

import jax


def parameter_names(fun: Callable, positions: Iterable[int]) -> list[str]:
    """The names of ``fun``'s positional parameters at ``positions`` (``input{i}`` where unknown)."""
    try:
        params = [p.name for p in inspect.signature(fun).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):  # a builtin or a C-level callable: no signature
        params = []
    return [params[i] if i < len(params) else f"input{i}" for i in positions]


def input_name(path: tuple, parameters: list[str]) -> str:
    """``((args, kwargs), ...)``'s path of a leaf as ``params.w1``: the parameter's name, then its keys."""
    where, *rest = path[1:]  # path[0] picks args or kwargs
    head = parameters[where.idx] if isinstance(where, jax.tree_util.SequenceKey) else str(where.key)
    return head + _keys(rest)


def output_name(path: tuple) -> str:
    if not path:
        return "output0"
    first, *rest = path
    head = f"output{first.idx}" if isinstance(first, jax.tree_util.SequenceKey) else _key(first).lstrip(".")
    return head + _keys(rest)


def _keys(path) -> str:
    return "".join(_key(k) for k in path)


def _key(key) -> str:
    if isinstance(key, jax.tree_util.SequenceKey):
        return f"[{key.idx}]"
    if isinstance(key, jax.tree_util.DictKey):
        return f".{key.key}"
    if isinstance(key, jax.tree_util.GetAttrKey):
        return f".{key.name}"
    return f"[{key}]"
