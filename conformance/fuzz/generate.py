"""Random valid IR graphs: small DAGs whose types and shapes are consistent by construction.

A :class:`~.builder.FuzzBuilder` keeps a pool of values (graph inputs and results so
far). Each step picks an op *maker* (weighted, :data:`.makers.MAKERS`); the maker chooses
operands from the pool (or makes fresh inputs of the types it needs) and attributes that
fit their shapes, and the op table's type rule has the last word: a proposal it rejects
is dropped and another maker is tried. Every value is kept as a graph output, so conformance can measure every
node on its own (:mod:`..local`).

Inputs are drawn after the graph is built, each by the draw its maker chose (:mod:`.draws`): an op's
domain for fresh inputs of log/sqrt/acosh/... (``opdb.elementwise.domain``), in-range
indices for gather/scatter/embedding/one_hot, distinct indices for 'replace' scatters,
shift amounts around the bit width, random threefry keys; other inputs are ordinary
values with, now and then, the dtype's special values (NaN, ±inf, ±0, subnormals,
extremes) or its full range mixed in. Values computed inside the graph may leave an
op's domain; their NaN/inf results are defined and compared like any other.

Example::

    >>> fg = generate(seed=0, index=3)
    >>> fg.name, len(fg.arrays) == len(fg.graph.inputs), len(fg.graph.nodes) >= 1
    ('s0-3', True, True)
    >>> generate(seed=0, index=3).graph == fg.graph   # reproducible from (seed, index)
    True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...ir.dtypes import DType
from ...ir.errors import TypeRuleError
from ...ir.graph import Graph
from .. import regressions
from ..bounds import LOCAL
from ..case import Case
from .builder import FuzzBuilder, Rejected
from .makers import MAKERS


@dataclass
class FuzzGraph:
    """One generated graph with its inputs, reproducible from ``(seed, index)``."""

    seed: int
    index: int
    graph: Graph
    arrays: list[np.ndarray]

    @property
    def name(self) -> str:
        return f"s{self.seed}-{self.index}"


def generate(seed: int, index: int, *, max_ops: int = 8) -> FuzzGraph:
    """Graph ``index`` of the stream ``seed``: 1..``max_ops`` generated ops plus the helpers
    (broadcasts, keys, index inputs) they need."""
    rng = np.random.default_rng([seed, index])
    g = FuzzBuilder(rng)
    target = int(rng.integers(1, max_ops + 1))
    names, weights = zip(*[(n, w) for n, (_, w) in MAKERS.items()])
    p = np.asarray(weights, float) / sum(weights)
    attempts = 0
    while g.made < target and attempts < 20 * max_ops:
        attempts += 1
        maker = MAKERS[names[int(rng.choice(len(names), p=p))]][0]
        saved = (len(g.b.inputs), len(g.b.nodes), len(g.pool))
        try:
            maker(g)
            g.made += 1
        except (Rejected, TypeRuleError):  # the type rule has the last word; roll back and try another
            g.rollback(*saved)
    if not g.b.nodes:
        x = g.input(DType.float32, (3,))
        g.emit("exp", x)
    outputs = [v for n in g.b.nodes for v in n.outputs]
    graph = g.b.build(outputs)
    graph.name = f"fuzz_s{seed}_{index}"
    arrays = [g.draws[v](rng, v.type.dtype, tuple(v.type.shape)) for v in graph.inputs]
    return FuzzGraph(seed, index, graph, arrays)


def fuzz_case(fg: FuzzGraph, op: str = "fuzz", dtype=None) -> Case:
    """A fuzz graph as a conformance case (LOCAL bound: every node on its own)."""
    arrays = fg.arrays
    first = fg.graph.inputs[0].type.dtype if fg.graph.inputs else fg.graph.outputs[0].type.dtype
    return Case(op, dtype or first, lambda rng: arrays, {}, fg.name, build=regressions.replay(fg.graph), bound=LOCAL)
