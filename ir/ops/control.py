"""Control flow: ``loop``, a counted loop over a body graph (JAX's ``scan``, ``fori_loop``).

``loop(consts..., carry..., xs...)`` runs its ``body`` graph ``length`` times. Each step reads
the consts, the carries and one row of each ``xs`` (row ``i`` of the leading axis), and
returns the new carries and one row of each ``ys``. The results are the final carries, then
each ``ys`` stacked on a new leading axis of size ``length``. With ``reverse`` the steps run
from ``length - 1`` down to 0 (row ``i`` is still read from and written to position ``i``).

It is a composite: its decomposition is the loop unrolled into straight-line IR, one copy of
the body per step, which every backend runs. A backend that claims it runs it rolled (xla: a
StableHLO ``while``; onnx: ``Scan``; inductor: torch's ``while_loop``, for loops that unroll into
more than 500 nodes) and compiles one step's body, not ``length`` of them
(docs/jax.md, "Loops": unrolled, a 64-step LSTM's gradient compiles for minutes on xla).

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, evaluate, f32
    >>> body = GraphBuilder("step")
    >>> total, x = body.input(f32[2]), body.input(f32[2])
    >>> new = body.add(total, x)
    >>> step = body.build([new, new])          # the new carry, and the row of ys
    >>> b = GraphBuilder()
    >>> init, xs = b.input(f32[2]), b.input(f32[3, 2])
    >>> final, running = b.loop(init, xs, body=step, length=3, num_carry=1)
    >>> g = b.build([final, running])
    >>> [a.tolist() for a in evaluate(g, [np.zeros(2, np.float32), np.ones((3, 2), np.float32)])]
    [[3.0, 3.0], [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..dtypes import ALL_DTYPES, COMPLEX_DTYPES
from ..errors import TypeRuleError
from ..opdef import Accuracy, AttrKind, AttrSpec, Kind, OpDef
from ..types import TensorType


def loop_parts(operands: Sequence[Any], attrs: Mapping[str, Any]) -> tuple[list, list, list]:
    """``operands`` (values or types) split into (consts, carries, xs) by the loop's attributes."""
    consts_end = attrs["num_consts"]
    carry_end = consts_end + attrs["num_carry"]
    return list(operands[:consts_end]), list(operands[consts_end:carry_end]), list(operands[carry_end:])


def unrolled_size(node, body_nodes: int) -> int:
    """The IR nodes the loop ``node`` unrolls into when its body holds ``body_nodes`` nodes: per
    step the body, a slice and a reshape per ``xs`` and a reshape per ``ys``; then a concatenate
    per ``ys`` (what :func:`_unrolled` builds). Backends and frontends weigh unrolling by it."""
    _, carry, xs = loop_parts(node.inputs, node.attrs)
    n_ys = len(node.outputs) - len(carry)
    return node.attrs["length"] * (body_nodes + 2 * len(xs) + n_ys) + n_ys


def row_type(t: TensorType) -> TensorType:
    """The type of one row of ``t`` (its leading axis dropped)."""
    return t.with_shape(t.shape[1:])


def _infer(types: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
    body, length = attrs["body"], attrs["length"]
    if length < 0:
        raise TypeRuleError("loop", f"length must be at least 0, got {length}", "length")
    if attrs["num_consts"] < 0 or attrs["num_carry"] < 0 or attrs["num_consts"] + attrs["num_carry"] > len(types):
        raise TypeRuleError("loop", f"num_consts={attrs['num_consts']} and num_carry={attrs['num_carry']} do not "
                                    f"split its {len(types)} operand(s) into consts, carries and xs")
    consts, carry, xs = loop_parts(types, attrs)
    for k, x in enumerate(xs):
        if x.rank == 0 or x.shape[0] != length:
            raise TypeRuleError("loop", f"each xs needs a leading axis of the loop's length {length}; xs {k} is {x}",
                                len(consts) + len(carry) + k)
    want = [*consts, *carry, *(row_type(x) for x in xs)]
    got = [v.type for v in body.inputs]
    if got != want:
        raise TypeRuleError("loop", f"the body takes ({', '.join(map(str, got))}); the operands give consts, "
                                    f"carries and rows of xs ({', '.join(map(str, want))})", "body")
    outs = [v.type for v in body.outputs]
    if outs[:len(carry)] != carry:
        raise TypeRuleError("loop", f"the body returns carries ({', '.join(map(str, outs[:len(carry)]))}) "
                                    f"of other types than it takes ({', '.join(map(str, carry))})", "body")
    ys = [t.with_shape((length, *t.shape)) for t in outs[len(carry):]]
    return (*carry, *ys)


def _unrolled(b, attrs, *operands):
    """One copy of the body per step, each row of ``xs`` sliced out and each ``ys`` stacked."""
    body, length = attrs["body"], attrs["length"]
    consts, carry, xs = loop_parts(operands, attrs)
    n_carry = len(carry)
    rows_by_step: dict[int, list] = {}
    for i in (range(length - 1, -1, -1) if attrs["reverse"] else range(length)):
        outs = inline(b, body, [*consts, *carry, *(_row(b, x, i) for x in xs)])
        carry, rows_by_step[i] = outs[:n_carry], outs[n_carry:]
    ys = []
    for k, out in enumerate(body.outputs[n_carry:]):
        row = out.type
        if length == 0:
            ys.append(b.broadcast_in_dim(b.constant(0, row.dtype), shape=(0, *row.shape), broadcast_dimensions=()))
            continue
        stacked = [b.reshape(rows_by_step[i][k], shape=(1, *row.shape)) for i in range(length)]
        ys.append(stacked[0] if length == 1 else b.concatenate(*stacked, dimension=0))
    return tuple([*carry, *ys])


def inline(b, graph, operands: Sequence[Any]) -> list:
    """``graph``'s nodes emitted on builder ``b`` with its inputs bound to ``operands``; its outputs."""
    env = dict(zip(graph.inputs, operands))
    for node in graph.nodes:
        results = b.op(node.op, *(env[v] for v in node.inputs), **node.attrs)
        env.update(zip(node.outputs, results if isinstance(results, tuple) else (results,)))
    return [env[v] for v in graph.outputs]


def _row(b, x, i: int):
    shape = tuple(x.type.shape)
    rank = len(shape)
    row = b.slice(x, start_indices=(i,) + (0,) * (rank - 1), limit_indices=(i + 1, *shape[1:]),
                  strides=(1,) * rank)
    return b.reshape(row, shape=shape[1:])


OPS = [
    OpDef(
        name="loop",
        kind=Kind.COMPOSITE,
        operands=("*operands",),
        infer=_infer,
        dtypes=ALL_DTYPES + COMPLEX_DTYPES,
        accuracy=Accuracy.COMPOSITE,
        attrs=(
            AttrSpec("body", AttrKind.GRAPH, doc="one step: (consts, carries, rows of xs) -> (carries, rows of ys)"),
            AttrSpec("length", AttrKind.INT, doc="the number of steps (static)"),
            AttrSpec("num_consts", AttrKind.INT, 0, doc="how many leading operands every step reads unchanged"),
            AttrSpec("num_carry", AttrKind.INT, 0, doc="how many operands after the consts are carried"),
            AttrSpec("reverse", AttrKind.BOOL, False, doc="run the steps from length - 1 down to 0"),
        ),
        decompose=_unrolled,
        num_results=None,
        doc="a counted loop over a body graph; unrolled by its decomposition",
    ),
]
