"""Ready predicates for :class:`~parity.backends.base.OpClaim`'s ``when=``: what a runtime
supports beyond (op, dtype), stated over what is known when parity partitions a graph: a
node's attributes and its static shapes and dtypes.

A predicate is any callable ``(node) -> str | None``: None when the backend takes the node,
else the reason it does not, which ``parity.explain``, the strict error and the conformance
matrix show as they are. Those here say what they check in their reason.

Values are not known at partition time, so "int64 only within int32 range" is honoured by
what the graph itself proves (:func:`int64_within_int32`): a constant's values, an iota's
length, a convert from a narrower integer. A node whose int64 values are not proven in range
is declined (it decomposes, falls back or is reported unsupported) rather than guarded at
run time: a guard would read every int64 input on every call, and a wrong guess would be a
silently narrowed number.

Example::

    >>> from parity.ir import GraphBuilder, f32
    >>> from parity.ir.dtypes import DType
    >>> b = GraphBuilder(); x = b.input(f32[2])
    >>> node = b.build([b.convert(x, dtype=DType.int64)]).nodes[0]
    >>> result_dtypes(DType.float32, DType.int32)(node)
    'its result is i64; the backend makes only f32, i32'
    >>> result_dtypes(DType.int64)(node) is None
    True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from ..ir.dtypes import DType
from ..ir.graph import Graph, Node, Value
from ..ir.ops import OP_TABLE

Predicate = Callable[[Node], "str | None"]

INT32_RANGE = (int(np.iinfo(np.int32).min), int(np.iinfo(np.int32).max))


def attr_in(name: str, *allowed) -> Predicate:
    """Takes a node whose attribute ``name`` is one of ``allowed`` (as the op normalizes it:
    tuples for lists of ints)."""

    def check(node: Node) -> str | None:
        value = node.attrs.get(name)
        if value in allowed:
            return None
        return f"its {name} is {value!r}; the backend takes only " + " or ".join(repr(a) for a in allowed)

    return check


def attr_all_equal(name: str, wanted) -> Predicate:
    """Takes a node every entry of whose attribute ``name`` (a tuple) is ``wanted``, whatever
    its rank: ``attr_all_equal("lhs_dilation", 1)`` is "a convolution without input dilation"."""

    def check(node: Node) -> str | None:
        value = node.attrs.get(name)
        if all(v == wanted for v in value):
            return None
        return f"its {name} is {value!r}; the backend takes only {wanted!r} in every entry"

    return check


def result_dtypes(*dtypes: DType) -> Predicate:
    """Takes a node whose results are all of ``dtypes``: ``convert`` "to these targets only"."""

    def check(node: Node) -> str | None:
        bad = next((v.type.dtype for v in node.outputs if v.type.dtype not in dtypes), None)
        if bad is None:
            return None
        return f"its result is {bad.short}; the backend makes only " + ", ".join(d.short for d in dtypes)

    return check


def int64_within_int32(node: Node) -> str | None:
    """Takes a node if every int64 value it reads or makes is proven within int32's range by the
    graph (:func:`static_int_range`); a runtime that computes int64 in 32 bits declares it."""
    for value in (*node.inputs, *node.outputs):
        if value.type.dtype is not DType.int64:
            continue
        known = static_int_range(value)
        if known is None or known[0] < INT32_RANGE[0] or known[1] > INT32_RANGE[1]:
            where = "an int64 operand" if value in node.inputs else "its int64 result"
            span = "of unknown range" if known is None else f"spanning [{known[0]}, {known[1]}]"
            return (f"{where} is {span}, and the backend computes int64 in 32 bits: parity cannot prove "
                    f"it fits int32 before running")
    return None


def static_int_range(value: Value) -> tuple[int, int] | None:
    """``(low, high)`` that bounds every element of the integer ``value``, where the graph proves
    one (a constant, an iota, a convert from a narrower integer or bool), else None."""
    node = value.producer
    if node is None:
        return None
    if node.op == "constant":
        array = np.asarray(node.attrs["value"])
        return (int(array.min()), int(array.max())) if array.size else (0, 0)
    if node.op == "iota":
        length = value.type.shape[node.attrs["dimension"]]
        return (0, length - 1) if isinstance(length, int) else None
    if node.op == "convert":
        source = node.inputs[0].type.dtype
        if source is DType.bool:
            return (0, 1)
        if source.is_integer and source.numpy.itemsize < 8:
            info = np.iinfo(source.numpy)
            return (int(info.min), int(info.max))
    return None


def all_of(*predicates: Predicate) -> Predicate:
    """Takes a node every one of ``predicates`` takes; the first refusal is the reason."""

    def check(node: Node) -> str | None:
        return next((why for why in (p(node) for p in predicates) if why is not None), None)

    return check


def body_not_run(body: Graph, rules: Mapping, unsupported: Mapping[tuple[str, DType], str]) -> str | None:
    """Why a backend cannot run every node of a loop's ``body`` (its composites already expanded
    as that backend expands them), or None: a complex value, an op without a rule in ``rules``,
    an (op, dtype) ``unsupported`` gives a reason for. The predicate of a claim on ``loop``
    declines the node with it, and the loop is unrolled.

    Example::

        >>> from parity.ir import GraphBuilder, f32
        >>> b = GraphBuilder("step"); x = b.input(f32[2])
        >>> body_not_run(b.build([b.exp(x)]), rules={}, unsupported={})
        'its body holds exp, which the backend does not lower'
    """
    for node in body.nodes:
        if any(v.type.dtype.is_complex for v in (*node.inputs, *node.outputs)):
            return f"its body holds {node.op} on complex values"
        if node.op not in rules:
            return f"its body holds {node.op}, which the backend does not lower"
        dtype = OP_TABLE[node.op].op_dtype([v.type for v in node.inputs], [v.type for v in node.outputs])
        reason = unsupported.get((node.op, dtype))
        if reason is not None:
            return f"its body holds {node.op} in {dtype.short}: {reason}"
    return None
