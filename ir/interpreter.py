"""The reference interpreter: NumPy (+ ml_dtypes) semantics of every op. It is the spec.

Float ops are computed in float64 and rounded once to the output dtype. In oracle mode
the rounding is skipped, so a whole graph is evaluated in float64 (integers stay exact):
that is the oracle every backend is measured against. Complex ops are computed in
complex128 the same way (each part rounded once to the output's part dtype, or not at all
in oracle mode).

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, f32, evaluate
    >>> b = GraphBuilder()
    >>> x = b.input(f32[2])
    >>> g = b.build([b.exp(x)])
    >>> evaluate(g, [np.array([0.0, 1.0], np.float32)])[0]
    array([1.       , 2.7182817], dtype=float32)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .context import ReferenceContext
from .dtypes import DType
from .errors import ParityError
from .expand import decomposition
from .graph import Graph, Node, Value
from .opdef import Kind
from .shapes import ShapeBindings
from .types import TensorType


class InterpreterError(ParityError):
    pass


def evaluate(graph: Graph, inputs: Sequence[Any], *, oracle: bool = False) -> list[np.ndarray]:
    """Run ``graph`` on NumPy inputs; return NumPy outputs.

    In native mode outputs have the graph's output dtypes. In oracle mode float outputs
    are float64 (never rounded to the narrower dtype).
    """
    if len(inputs) != len(graph.inputs):
        raise InterpreterError(f"graph @{graph.name} takes {len(graph.inputs)} inputs, got {len(inputs)}")
    bindings = ShapeBindings(error=InterpreterError)
    env: dict[Value, np.ndarray] = {}
    for i, (value, array) in enumerate(zip(graph.inputs, inputs)):
        array = np.asarray(array)
        bindings.bind(value.type, array.shape, f"input {i} of @{graph.name}")
        expected = value.type.dtype.numpy
        if array.dtype != expected:
            if oracle and value.type.dtype.is_float and array.dtype.kind == "f":
                pass
            elif oracle and value.type.dtype.is_complex and array.dtype.kind == "c":
                pass
            else:
                raise InterpreterError(
                    f"input {i} of @{graph.name} has dtype {array.dtype}, expected {value.type.dtype.short}"
                )
        env[value] = _carry(array, value.type.dtype, oracle)
    bindings.check_graph(graph)
    for node in graph.nodes:
        args = [env[v] for v in node.inputs]
        results = evaluate_node(node.op, args, node.attrs, [v.type for v in node.inputs],
                                [v.type for v in node.outputs], oracle=oracle, bindings=bindings, node=node)
        for value, result in zip(node.outputs, results):
            env[value] = result
    return [env[v] for v in graph.outputs]


def evaluate_node(
    op: str,
    args: Sequence[np.ndarray],
    attrs: Mapping[str, Any],
    in_types: Sequence[TensorType],
    out_types: Sequence[TensorType],
    *,
    oracle: bool = False,
    bindings: ShapeBindings | None = None,
    node: Node | None = None,
) -> list[np.ndarray]:
    """Evaluate one op on already-carried arrays (see :func:`evaluate`). ``bindings``
    holds the sizes of symbolic dims bound so far (by the graph's inputs)."""
    from .ops import OP_TABLE

    opdef = OP_TABLE[op]
    bindings = ShapeBindings(error=InterpreterError) if bindings is None else bindings
    in_types = tuple(bindings.resolve(t) for t in in_types)
    for i, (t, a) in enumerate(zip(in_types, args)):
        bindings.bind(t, a.shape, f"operand {i} of {op}")
    in_types = tuple(bindings.resolve(t) for t in in_types)
    out_types = tuple(bindings.resolve(t) for t in out_types)
    if opdef.kind is Kind.COMPOSITE:
        # attributes resolved as the operand types are (a loop body's symbolic sizes)
        return evaluate(decomposition(op, bindings.resolve_attrs(attrs), in_types,
                                      loc=node.loc if node is not None else None), args, oracle=oracle)
    ctx = ReferenceContext(attrs=bindings.resolve_attrs(attrs), in_types=in_types, out_types=out_types, oracle=oracle)
    wide = [_widen(a, t.dtype) for a, t in zip(args, in_types)]
    try:
        raw = opdef.reference(ctx, *wide)
    except ParityError:
        raise
    except Exception as exc:  # a reference bug must name the op it happened in
        where = f" at {node.loc}" if node is not None and node.loc else ""
        raise InterpreterError(f"reference implementation of {op}{where} failed: {exc!r}") from exc
    results = raw if isinstance(raw, tuple) else (raw,)
    out = []
    for i, (result, t) in enumerate(zip(results, out_types)):
        result = np.asarray(result)
        if result.shape != t.shape:
            raise InterpreterError(f"reference of {op} returned shape {result.shape} for result {i}, type says {t}")
        out.append(_round(result, t.dtype, oracle))
    return out


def _carry(array: np.ndarray, dtype: DType, oracle: bool) -> np.ndarray:
    if oracle and dtype.is_float:
        return array.astype(np.float64)
    if oracle and dtype.is_complex:
        return array.astype(np.complex128)
    return array.astype(dtype.numpy, copy=False)


def _widen(array: np.ndarray, dtype: DType) -> np.ndarray:
    if dtype.is_complex:
        return array.astype(np.complex128, copy=False)
    return array.astype(np.float64, copy=False) if dtype.is_float else array


def _round(result: np.ndarray, dtype: DType, oracle: bool) -> np.ndarray:
    if dtype.is_complex:  # NumPy rounds each part of a complex128 once, to nearest even
        with np.errstate(over="ignore"):  # a part past the dtype's max rounds to inf
            return result.astype(np.complex128 if oracle else dtype.numpy)
    if dtype.is_float and not oracle:
        from .ops.conversion import round_float  # once, to nearest even (ml_dtypes' bf16 cast rounds twice)

        return round_float(result, dtype)
    if dtype.is_float:
        return result.astype(np.float64 if oracle else dtype.numpy)
    if result.dtype != dtype.numpy:
        return result.astype(dtype.numpy)
    return result
