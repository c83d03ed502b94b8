"""A model's output as named tensors: what capture and export make graph outputs of.

A graph output must be a tensor, but models return structures: tuples, dicts,
``transformers``' ``ModelOutput`` dataclasses and key/value caches (``DynamicCache``,
``EncoderDecoderCache``), which torch.export rejects unless someone registered them
as pytree nodes ("Encountered unrecognized type UserDefinedObjectVariable(DynamicCache)").
:func:`flatten_outputs` walks the structure in ordinary Python, which Dynamo
traces like the model, and names every tensor by its path:

| what it meets | how it is walked | names |
| --- | --- | --- |
| a tensor | a graph output | the path so far |
| ``None`` | nothing (an optional output that is absent) | |
| a mapping (``dict``, ``ModelOutput``) | each key, in order | ``logits``, ``hidden_states.1`` |
| a list or tuple | each item | ``output0``, ``output1.0`` at the top |
| a key/value cache (``.layers``, each with ``.keys`` and ``.values``) | each layer | ``cache.0.key``, ``cache.0.value`` |
| any other object with attributes | its public attributes, in order | ``cache.self_attention_cache.0.key`` |
| a number, string or any other value | left out, with a one-line note | |

An object whose attributes hold no tensor is left out with a note too; attributes that
are not tensors (a cache's ``is_initialized`` flag) are the object's own state and are
skipped without one. The order is the one torch's pytree gives for tuples, lists and
dicts, so flat outputs keep their positions.

Example::

    >>> import torch
    >>> notes = []
    >>> sorted(flatten_outputs({"logits": torch.ones(2), "n": 3}, notes))
    ['logits']
    >>> notes
    ["output 'n' is an int, not a tensor: left out of the graph's outputs (a graph output must be a tensor; return it as one to keep it)"]
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

#: A structure whose first level is a sequence (or one tensor) names its items ``output0``, ``output1``...
ROOT = "output"
_SCALARS = (bool, int, float, complex, str, bytes, torch.device, torch.dtype)


def flatten_outputs(value, notes: list[str] | None = None) -> dict[str, torch.Tensor]:
    """The tensors in ``value`` by name (see the module doc); what is left out is described in ``notes``."""
    out: dict[str, torch.Tensor] = {}
    notes = notes if notes is not None else []
    if isinstance(value, torch.Tensor):
        out[f"{ROOT}0"] = value
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _walk(item, f"{ROOT}{i}", out, notes)
    else:
        _walk(value, "", out, notes)
    return out


def _join(prefix: str, key) -> str:
    return f"{prefix}.{key}" if prefix else str(key)


def _walk(value, path: str, out: dict, notes: list[str], attribute: bool = False) -> None:
    if isinstance(value, torch.Tensor):
        out[path or f"{ROOT}0"] = value
    elif value is None:
        return
    elif isinstance(value, Mapping):
        for key in list(value.keys()):
            _walk(value[key], _join(path, key), out, notes)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _walk(item, _join(path, i), out, notes)
    elif isinstance(value, _SCALARS) or not hasattr(value, "__dict__"):
        if not attribute:
            notes.append(f"output {path or ROOT!r} is {_a(value)}, not a tensor: left out of the graph's outputs "
                         f"(a graph output must be a tensor; return it as one to keep it)")
    elif _is_kv_cache(value):
        for i, layer in enumerate(value.layers):
            _walk(layer.keys, _join(path, f"{i}.key"), out, notes, attribute=True)
            _walk(layer.values, _join(path, f"{i}.value"), out, notes, attribute=True)
    else:
        before = len(out)
        for key, item in list(vars(value).items()):
            if not key.startswith("_"):
                _walk(item, _join(path, key), out, notes, attribute=True)
        if len(out) == before and not attribute:
            notes.append(f"output {path or ROOT!r} is {_a(value)} that holds no tensors: left out of the graph's "
                         f"outputs (a graph output must be a tensor)")


def _is_kv_cache(value) -> bool:
    """transformers' ``Cache`` shape: ``.layers``, a list of objects with ``.keys`` and ``.values``."""
    layers = getattr(value, "layers", None)
    return (isinstance(layers, (list, tuple)) and len(layers) > 0
            and all(hasattr(layer, "keys") and hasattr(layer, "values") for layer in layers))


def _a(value) -> str:
    name = type(value).__name__
    return f"an {name}" if name[:1].lower() in "aeiou" else f"a {name}"


class FlatOutputs(torch.nn.Module):
    """``inner(*args, **kwargs)`` with its output flattened (what capture exports).

    Returns ``(tensors, notes)``: the named tensors of :func:`flatten_outputs`, and a dict
    whose keys are its notes (values ``None``). The notes travel in the exported program's
    output spec, since torch.export does not carry a traced function's side effects (an
    append to a list outside it) back out. A module is kept as the submodule ``inner``
    (its state's names gain the prefix :data:`PREFIX`); a plain function as an attribute.
    """

    def __init__(self, inner):
        super().__init__()
        if isinstance(inner, torch.nn.Module):
            self.inner = inner
        else:
            self.fn = inner

    def forward(self, *args, **kwargs):
        target = self.inner if hasattr(self, "inner") else self.fn
        notes: list[str] = []
        tensors = flatten_outputs(target(*args, **kwargs), notes)
        return tensors, dict.fromkeys(notes)


PREFIX = "inner."
