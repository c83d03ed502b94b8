"""A parity IR graph → an ``openvino.Model``, built with OpenVINO's opset API, one rule per op.

:data:`RULES` maps every primitive this backend lowers to its rule (``rule(attrs, out_types,
*operands) -> output | tuple``; operands and results are OpenVINO outputs); the family modules
hold them. Claims are derived from this table (``backend.py``), so an op without a rule is never
claimed. Shapes are concrete here: a graph with symbolic dims is lowered once per shape, with
its sizes resolved (``ShapeBindings``).

Example::

    >>> from parity.ir import GraphBuilder, f32
    >>> b = GraphBuilder("twice"); x = b.input(f32[3])
    >>> model, fed, held = to_model(b.build([b.add(x, x)]))
    >>> [op.get_type_name() for op in model.get_ordered_ops()]
    ['Parameter', 'Add', 'Result']
"""

from __future__ import annotations

import numpy as np
import openvino as ov
import openvino.opset15 as ops

from parity.ir import DType
from parity.ir.ops import node_dtype

from .composites import RULES as COMPOSITES
from .elementwise import RULES as ELEMENTWISE
from .ov_types import ov_type, typed_const
from .shape import RULES as SHAPE
from .structured import RULES as STRUCTURED
from .wide import WIDE_RULES, pair_constant, widen, word

RULES = {**ELEMENTWISE, **SHAPE, **STRUCTURED, **COMPOSITES}


def to_model(graph, sizes=None) -> tuple[ov.Model, list[int], list[np.ndarray]]:
    """``graph`` as an OpenVINO model, which graph inputs it takes, and the arrays its extra inputs
    take: the model's inputs are the graph's that a node reads, in order, then one per constant
    that OpenVINO would change (:func:`kept_as_input`).
    ``sizes`` (a bound ``ShapeBindings``) resolves symbolic dims and attributes; None for a static graph."""
    def typed(v):
        return v.type if sizes is None else sizes.resolve(v.type)

    read = {v for node in graph.nodes for v in node.inputs}
    fed = [k for k, v in enumerate(graph.inputs) if v in read]
    parameters = [_parameter(typed(graph.inputs[k]), f"in{k}") for k in fed]
    env = {graph.inputs[k]: p.output(0) for k, p in zip(fed, parameters)}
    held: list[np.ndarray] = []
    for node in graph.nodes:
        attrs = node.attrs if sizes is None else sizes.resolve_attrs(node.attrs, strict=True)
        outs = [typed(v) for v in node.outputs]
        if node.op == "constant" and kept_as_input(attrs["value"]):
            held.append(np.array(attrs["value"], copy=True).reshape(outs[0].shape))  # writable: OpenVINO wants it
            parameters.append(ops.parameter(list(outs[0].shape), ov_type(outs[0].dtype), name=f"const{len(held)}"))
            env[node.outputs[0]] = parameters[-1].output(0)
            continue
        if any(0 in t.shape for t in outs):  # OpenVINO's Broadcast to an empty shape is a SIGFPE
            result = tuple(_empty(t) for t in outs)  # (broadcast_in_dim:empty)
        elif runs_on_pairs(node):
            result = WIDE_RULES[node.op](attrs, outs, *[env[v] for v in node.inputs])
        else:  # int64 operands here are indices or sizes: their low word; int64 results are widened
            operands = [word(env[v], 0) if v.type.dtype is DType.int64 else env[v] for v in node.inputs]
            result = RULES[node.op](attrs, outs, *operands)
            result = tuple(widen(ops.convert(r, "i32")) if t.dtype is DType.int64 else r
                           for r, t in zip(result if isinstance(result, tuple) else (result,), outs))
        for v, r in zip(node.outputs, result if isinstance(result, tuple) else (result,)):
            env[v] = _output(r)
    # An output that is a graph input as it is never reaches OpenVINO (the executable copies it):
    # a Result fed by a Parameter would alias the caller's buffer, and an unclaimed dtype
    # (int64) would be narrowed on the way through.
    results = [ops.result(env[v]) for v in graph.outputs if v not in graph.inputs]
    return ov.Model(results, parameters, graph.name or "parity"), fed, held


def runs_on_pairs(node) -> bool:
    """Whether ``node`` computes int64 (its claim's dtype, or a convert to int64): it runs on pairs."""
    return node.op in WIDE_RULES and (node_dtype(node) is DType.int64 or node.outputs[0].type.dtype is DType.int64)


def _parameter(t, name):
    if t.dtype is DType.int64:  # read as int32 pairs (wide.py)
        return ops.parameter(list(t.shape) + [2], ov.Type.i32, name=name)
    return ops.parameter(list(t.shape), ov_type(t.dtype), name=name)


def _empty(t):
    if t.dtype is DType.int64:
        return pair_constant(np.zeros(t.shape, np.int64), t.shape)
    return typed_const(np.zeros(t.shape), ov_type(t.dtype))


def kept_as_input(value) -> bool:
    """Whether a constant holds floats OpenVINO's constant handling changes: it turns -0.0 into
    +0.0 and subnormals into zero (measured: constant[f32]:specials). Such a constant is fed as an
    input, set once, instead."""
    array = np.asarray(value)
    if array.dtype.kind != "f" and array.dtype.name != "bfloat16":
        return False
    wide = array.astype(np.float64)
    tiny = np.finfo(np.float32 if array.dtype.name == "bfloat16" else array.dtype).tiny
    return bool(np.any((wide == 0) & np.signbit(wide)) or np.any((wide != 0) & (np.abs(wide) < tiny)))


def _output(node_or_output):
    return node_or_output.output(0) if hasattr(node_or_output, "output") else node_or_output
