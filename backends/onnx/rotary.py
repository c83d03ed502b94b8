"""Rotary embeddings' ``rotate_half(x) * sin`` as a Gather and two Muls, bit for bit.

Every RoPE model in Hugging Face computes ``q * cos + rotate_half(q) * sin`` with
``rotate_half(x) = cat(-x[..., h:], x[..., :h])``, which the capture records as slice,
slice, neg, concatenate, mul: five ORT nodes per query and key tensor per layer, at ~1 µs
each whatever they compute (:mod:`.simplify`). :func:`rotate_half_products` finds those
products, and :func:`emit` lowers each as ``Gather(x, [h..d-1, 0..h-1]) * (sin * [-1]*h ++ [1]*h)``:
three nodes, and the ``sin * signs`` of a layer's query and key are the same node after ORT's
common-subexpression pass.

Exact: element ``i < h`` is ``x[h+i] * (-sin[i])`` where the chain computes ``(-x[h+i]) *
sin[i]``, equal in IEEE arithmetic (negation commutes with a rounded product, zeros and
infinities included); element ``i >= h`` is ``x[i-h] * (sin[i] * 1)``. Only a NaN's sign
bit may differ, which the contract does not compare. float32 and float64 only (the
narrow floats' Mul is widened by legalization, a different rounding path).

Example::

    >>> from parity.ir import GraphBuilder, f32
    >>> b = GraphBuilder(); x = b.input(f32[2, 8]); s = b.input(f32[2, 8])
    >>> lo = b.slice(x, start_indices=(0, 0), limit_indices=(2, 4), strides=(1, 1))
    >>> hi = b.slice(x, start_indices=(0, 4), limit_indices=(2, 8), strides=(1, 1))
    >>> y = b.mul(b.concatenate(b.neg(hi), lo, dimension=1), s)
    >>> [len(absorbed) for _, _, absorbed in rotate_half_products(b.build([y])).values()]
    [4]
"""

from __future__ import annotations

import numpy as np

from ...ir.dtypes import DType
from ...ir.graph import Graph, Node, Value
from .emitter import Emitter

_FLOATS = (DType.float32, DType.float64)


def rotate_half_products(graph: Graph) -> dict[Node, tuple[Value, Value, frozenset[Node]]]:
    """{mul node: (x, sin, the slice/neg/concatenate nodes it absorbs)} for each
    ``mul(rotate_half(x), sin)`` (either operand order) whose inner values nothing else reads."""
    users = graph.users()
    outputs = set(graph.outputs)

    def only_reader(v: Value) -> Node | None:
        readers = users.get(v, [])
        return readers[0] if len(readers) == 1 and v not in outputs else None

    found = {}
    for cat in graph.nodes:
        if cat.op != "concatenate" or len(cat.inputs) != 2 or cat.outputs[0].type.dtype not in _FLOATS:
            continue
        neg, lo = (v.producer for v in cat.inputs)
        hi = neg.inputs[0].producer if neg is not None and neg.op == "neg" else None
        if lo is None or hi is None or lo.op != "slice" or hi.op != "slice" or lo.inputs[0] is not hi.inputs[0]:
            continue
        x = lo.inputs[0]
        rank, d = x.type.rank, x.type.shape[-1]
        if cat.attrs["dimension"] != rank - 1 or not isinstance(d, int) or d % 2:
            continue
        h = d // 2
        if not (_takes_last(lo, x, 0, h) and _takes_last(hi, x, h, d)):
            continue
        mul = only_reader(cat.outputs[0])
        if mul is None or mul.op != "mul" or any(only_reader(n.outputs[0]) is None for n in (lo, hi, neg)):
            continue
        (sin,) = [v for v in mul.inputs if v is not cat.outputs[0]] or [None]
        if sin is not None:
            found[mul] = (x, sin, frozenset({lo, hi, neg, cat}))
    return found


def _takes_last(node: Node, x: Value, start: int, stop: int) -> bool:
    """``node`` slices ``x[..., start:stop]`` and nothing else."""
    a = node.attrs
    full = [0] * (x.type.rank - 1), list(x.type.shape[:-1])
    return (list(a["start_indices"]) == [*full[0], start] and list(a["limit_indices"]) == [*full[1], stop]
            and all(s == 1 for s in a["strides"]))


def emit(em: Emitter, x: str, sin: str, x_value: Value) -> str:
    """``rotate_half(x) * sin`` as ``Gather(x, rolled) * (sin * signs)`` (ONNX names)."""
    d, dtype = x_value.type.shape[-1], x_value.type.dtype
    h = d // 2
    rolled = em.const(np.concatenate([np.arange(h, d), np.arange(h)]).astype(np.int64))
    signs = em.const(np.concatenate([-np.ones(h), np.ones(h)]), dtype)
    return em.op("Mul", em.op("Gather", x, rolled, axis=x_value.type.rank - 1), em.op("Mul", sin, signs))
