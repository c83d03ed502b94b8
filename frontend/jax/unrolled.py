"""Loops a backend runs unrolled, and the warning when one unrolls into a graph too long to compile.

A scan is the IR's ``loop`` (rules/control.py). A backend that claims ``loop`` (xla, onnx,
inductor) compiles its body once; any other backend (triton, the reference, most plugins), and
a claiming one whose predicate declines the node, gets the loop's decomposition: one copy of
the body per step. Past :data:`UNROLLED_NODES_WARNING` nodes for one loop, compiling that gets
slow (an LSTM's gradient of 64 steps unrolled: 229 s on xla; inductor took minutes for an
8-step one: bench/results/jax_loops.md), so :func:`warn_unrolled_loops` warns at the user's
line, naming the backend and the ones that run the loop rolled.

Example::

    >>> from parity.ir import GraphBuilder, f32
    >>> body = GraphBuilder("step"); t, x = body.input(f32[2]), body.input(f32[2])
    >>> s = body.add(t, x); step = body.build([s, s])
    >>> b = GraphBuilder(); init, xs = b.input(f32[2]), b.input(f32[9, 2])
    >>> g = b.build(list(b.loop(init, xs, body=step, length=9, num_carry=1)))
    >>> unrolled_sizes(g, claimed=lambda op: False)[0][1:]  # 9 × (add, slice, reshape, reshape) + concatenate
    (9, 37)
"""

from __future__ import annotations

from collections.abc import Callable

from ...backends.base import Backend, declined_by_predicate
from ...ir.graph import Graph, Node, SourceLoc
from ...ir.ops.control import unrolled_size
from ...ir.passes.decompose import decompose
from ..source import warn_at
from .errors import LongUnrolledLoop

# One loop unrolled into more IR nodes than this warns. Past it xla compiled for tens of seconds
# to minutes, growing faster than the trip count (an LSTM's gradient with loops of 1,216 and
# 1,824 nodes: 59 s of CPU), while the 12-layer nnx.scan stack's gradient (loops of 1,190 and
# 1,120 nodes, 9.3 s) stayed quiet: bench/results/jax_loops.md, measured before loops were rolled.
UNROLLED_NODES_WARNING = 1500


def unrolled_sizes(graph: Graph, claimed: Callable[[str], bool],
                   declined: Callable[[Node], bool] | None = None) -> list[tuple[SourceLoc | None, int, int]]:
    """(line, steps, IR nodes once unrolled) of each loop in ``graph`` (nested ones too) that a
    backend claiming ``claimed`` (and declining ``declined``) runs unrolled."""
    found = []
    for node in graph.nodes:
        if node.op != "loop":
            continue
        body = node.attrs["body"]
        found += unrolled_sizes(body, claimed, declined)
        if claimed("loop") and not (declined and declined(node)):
            continue
        expanded, _ = decompose(body, claimed, declined)  # nested loops it unrolls are unrolled in it
        found.append((node.loc, node.attrs["length"], unrolled_size(node, len(expanded.nodes))))
    return found


def warn_unrolled_loops(graph: Graph, backend: Backend) -> None:
    """Warn at the user's line for each loop ``backend`` unrolls past :data:`UNROLLED_NODES_WARNING` nodes."""
    claims = backend.claims()
    for loc, steps, nodes in unrolled_sizes(graph, lambda op: op in claims,
                                            lambda node: declined_by_predicate(claims, node) is not None):
        if nodes > UNROLLED_NODES_WARNING:
            warn_at(loc, LongUnrolledLoop.message(loc, steps, nodes, backend.name), LongUnrolledLoop)
