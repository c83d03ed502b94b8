"""Subgraph claims: a backend takes connected regions of a graph whole, as onnxruntime's
``GetCapability`` lets an execution provider choose what it fuses.

A backend that defines ``claim_subgraphs(graph)`` is asked, for each graph it is about to
compile (the graph ``compile`` would receive: composites it does not claim already
expanded), which regions it wants whole: an iterable of collections of indices into
``graph.nodes``. Each region is compiled on its own, as a graph of exactly its nodes
(named ``<graph>.region<k>``), and the nodes outside every region are compiled as the rest
of the graph, in as few graphs as the order allows (one, unless a region sits between two
of their nodes); parity runs the pieces in order and passes values between them. A backend
that defines nothing, or claims no region, is compiled exactly as before.

What comes back is checked before anything is compiled, and a bad answer is refused with
:class:`SubgraphClaimError` naming the backend: every index must name a node, no node may be
in two regions, a region must be connected (through values its nodes pass each other), and
contracting the regions to single nodes must leave the graph acyclic (no value may leave a
region and come back into it).

Example::

    >>> from parity.ir import GraphBuilder, f32
    >>> b = GraphBuilder("g"); x = b.input(f32[2])
    >>> graph = b.build([b.neg(b.exp(b.abs(x)))])      # nodes 0: abs, 1: exp, 2: neg
    >>> pieces = split_at_regions(graph, [(1, 2)])
    >>> [([n.op for n in p.graph.nodes], p.region) for p in pieces]
    [(['abs'], False), (['exp', 'neg'], True)]
"""

from __future__ import annotations

import operator
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..ir.dims import Symbol, free_symbols
from ..ir.errors import ParityError
from ..ir.graph import Graph, Node, Value


class SubgraphClaimError(ParityError):
    """A backend's ``claim_subgraphs`` returned regions parity cannot hand over whole."""


@dataclass
class Piece:
    """One graph compiled on its own: a claimed region (``region``) or a run of the other nodes.
    ``sources[i]`` is the original graph's value its input ``i`` takes; ``results[j]`` the
    original value its output ``j`` stands for."""

    graph: Graph
    region: bool
    sources: tuple[Value, ...]
    results: tuple[Value, ...]


def claimed_regions(backend, graph: Graph) -> list[tuple[int, ...]]:
    """The regions ``backend.claim_subgraphs(graph)`` returns, checked (sorted node indices;
    ``[]`` for a backend that defines no ``claim_subgraphs``)."""
    ask = getattr(backend, "claim_subgraphs", None)
    if ask is None or graph.sharding is not None:  # a sharded graph runs whole on its mesh
        return []
    regions = []
    seen: dict[int, int] = {}
    for k, region in enumerate(ask(graph) or ()):
        try:
            indices = tuple(sorted({operator.index(i) for i in region}))  # NumPy integers too
        except TypeError:
            _refuse(backend, graph, (), f"{region!r} is not a collection of node indices")
        bad = next((i for i in indices if not 0 <= i < len(graph.nodes)), None)
        if not indices or bad is not None:
            _refuse(backend, graph, indices, "it is empty" if not indices else
                    f"{bad!r} is not the index of a node (the graph has {len(graph.nodes)})")
        twice = next((i for i in indices if i in seen), None)
        if twice is not None:
            _refuse(backend, graph, indices, f"node {twice} ({graph.nodes[twice].op}) is also in region {seen[twice]}")
        seen.update(dict.fromkeys(indices, k))
        if not _connected(graph, indices):
            _refuse(backend, graph, indices, "its nodes are not connected through the values they pass each other")
        regions.append(indices)
    if regions:
        try:
            _order(graph, regions)
        except _Cycle as cycle:
            _refuse(backend, graph, regions[cycle.region], "a value leaves it and comes back into it through "
                    "nodes outside it, so it cannot run as one step")
    return regions


def _refuse(backend, graph: Graph, indices: tuple[int, ...], why: str):
    node = graph.nodes[indices[0]] if indices and 0 <= indices[0] < len(graph.nodes) else None
    where = f" (its first node {node.op} is at {node.loc})" if node is not None and node.loc else ""
    shown = f"the region {list(indices[:8]) + (['...'] if len(indices) > 8 else [])}" if indices else "a region"
    raise SubgraphClaimError(
        f"the {backend.name} backend's claim_subgraphs returned {shown} of graph @{graph.name}{where}, "
        f"which cannot be handed over whole: {why}. A region is a set of indices into graph.nodes, in no other "
        f"region, connected, and with no path out of it and back in (docs/plugins.md, section 3). Fix the "
        f"backend's claim_subgraphs, or compile with another backend.")


def _connected(graph: Graph, indices: tuple[int, ...]) -> bool:
    members = {id(graph.nodes[i]): i for i in indices}
    neighbours: dict[int, set[int]] = {i: set() for i in indices}
    for i in indices:
        for value in graph.nodes[i].inputs:
            j = members.get(id(value.producer))
            if j is not None:
                neighbours[i].add(j)
                neighbours[j].add(i)
    reached, stack = {indices[0]}, [indices[0]]
    while stack:
        for j in neighbours[stack.pop()] - reached:
            reached.add(j)
            stack.append(j)
    return len(reached) == len(indices)


class _Cycle(Exception):
    def __init__(self, region: int):
        self.region = region


def _order(graph: Graph, regions: Sequence[tuple[int, ...]]) -> list[tuple[bool, list[int]]]:
    """The pieces in an order that runs: ``(is_region, node indices)``, consecutive nodes outside
    regions gathered into one piece. Raises _Cycle when contracting a region makes one.

    Units are node indices, and ``len(graph.nodes) + k`` for region ``k`` (ints: a stable order)."""
    count = len(graph.nodes)
    unit_of = list(range(count))
    for k, region in enumerate(regions):
        for i in region:
            unit_of[i] = count + k
    position = {id(n): i for i, n in enumerate(graph.nodes)}
    users: dict[int, set[int]] = {u: set() for u in unit_of}
    needs: dict[int, set[int]] = {u: set() for u in unit_of}
    for i, node in enumerate(graph.nodes):
        for value in node.inputs:
            j = position.get(id(value.producer))
            if j is not None and unit_of[j] != unit_of[i]:
                needs[unit_of[i]].add(unit_of[j])
                users[unit_of[j]].add(unit_of[i])
    waiting = {u: len(n) for u, n in needs.items()}
    singles = deque(sorted(u for u, n in waiting.items() if n == 0 and u < count))
    whole = deque(sorted(u for u, n in waiting.items() if n == 0 and u >= count))
    pieces: list[tuple[bool, list[int]]] = []
    while singles or whole:
        if whole:  # a region as soon as it can run, so that the nodes after it gather into one piece
            unit = whole.popleft()
            pieces.append((True, list(regions[unit - count])))
        else:
            unit = singles.popleft()
            if not pieces or pieces[-1][0]:
                pieces.append((False, []))
            pieces[-1][1].append(unit)
        for user in sorted(users[unit]):
            waiting[user] -= 1
            if waiting[user] == 0:
                (singles if user < count else whole).append(user)
    stuck = sorted(u for u, n in waiting.items() if n > 0 and u >= count)
    if stuck:
        raise _Cycle(stuck[0] - count)
    return pieces


def split_at_regions(graph: Graph, regions: Sequence[tuple[int, ...]]) -> list[Piece]:
    """``graph`` as the pieces that run it, in order: each region whole, the other nodes between."""
    order = [(region, sorted(indices)) for region, indices in _order(graph, regions)]  # the graph's own order
    used_later: dict[Value, int] = {}  # value → the last piece that reads it
    for p, (_, indices) in enumerate(order):
        for i in indices:
            for value in graph.nodes[i].inputs:
                used_later[value] = p
    outputs = set(graph.outputs)
    pieces = []
    for p, (region, indices) in enumerate(order):
        nodes = [graph.nodes[i] for i in indices]
        made = {v for n in nodes for v in n.outputs}
        sources = list(dict.fromkeys(v for n in nodes for v in n.inputs if v not in made))
        sources += _size_carriers(graph, nodes, sources)
        results = [v for n in nodes for v in n.outputs if v in outputs or used_later.get(v, -1) > p]
        pieces.append(Piece(_subgraph(graph, f"{graph.name}.{'region' if region else 'rest'}{p}", nodes, sources,
                                      results), region, tuple(sources), tuple(results)))
    return pieces


def _size_carriers(graph: Graph, nodes: list[Node], sources: list[Value]) -> list[Value]:
    """Inputs of ``graph`` to hand a piece only for their shapes: each carries a symbolic size the
    piece's nodes use (a broadcast to ``[B, 3]``) that none of its own inputs' shapes carries."""
    used = {name for n in nodes for v in n.outputs for d in v.type.shape for name in free_symbols(d)}
    carried = {d.name for v in sources for d in v.type.shape if isinstance(d, Symbol)}
    extra = []
    for name in sorted(used - carried):
        carrier = next((v for v in graph.inputs if any(isinstance(d, Symbol) and d.name == name for d in v.type.shape)),
                       None)
        if carrier is not None and carrier not in sources and carrier not in extra:
            extra.append(carrier)
    return extra


def _subgraph(graph: Graph, name: str, nodes: list[Node], sources: list[Value], results: list[Value]) -> Graph:
    """A graph of copies of ``nodes``, its inputs standing for ``sources``, its outputs for ``results``,
    with the assumptions of ``graph`` about the sizes its inputs carry."""
    env = {v: Value(v.type) for v in sources}
    copies = []
    for node in nodes:
        copy = Node(node.op, [env[v] for v in node.inputs], node.attrs, [v.type for v in node.outputs], node.loc)
        env.update(zip(node.outputs, copy.outputs))
        copies.append(copy)
    carried = {name for v in sources for d in v.type.shape for name in free_symbols(d)}
    return Graph(name, [env[v] for v in sources], copies, [env[v] for v in results],
                 assumptions=[a for a in graph.assumptions if a.symbols <= carried])


class RegionExecutable:
    """Runs the pieces of a graph one after another, passing values between them; ``bind``
    hands each piece the parameters among its inputs (by its own input indices)."""

    def __init__(self, graph: Graph, pieces: Sequence[Piece], executables: Sequence):
        self.graph, self.pieces, self.executables = graph, list(pieces), list(executables)
        index = {v: k for k, v in enumerate(graph.inputs)}
        self.top_inputs = [[index.get(v) for v in p.sources] for p in self.pieces]

    def __call__(self, *arrays):
        env = dict(zip(self.graph.inputs, arrays))
        for piece, run in zip(self.pieces, self.executables):
            env.update(zip(piece.results, run(*(env[v] for v in piece.sources))))
        return [env[v] for v in self.graph.outputs]

    def bind(self, values) -> None:
        for top, run in zip(self.top_inputs, self.executables):
            mine = {j: values[t] for j, t in enumerate(top) if t in values}
            if mine:
                run.bind(mine)


def compile_by_regions(backend, graph: Graph, compile_piece: Callable[[Graph, frozenset[int]], object],
                       parameters: frozenset[int] = frozenset()):
    """``compile_piece(graph, parameters)`` on ``graph`` whole when ``backend`` claims no region;
    else on each piece (its parameters: those of ``parameters`` among its inputs), run as one
    :class:`RegionExecutable`."""
    regions = claimed_regions(backend, graph)
    if not regions:
        return compile_piece(graph, parameters)
    pieces = split_at_regions(graph, regions)
    executable = RegionExecutable(graph, pieces, [])
    executable.executables = [compile_piece(p.graph, frozenset(j for j, t in enumerate(top) if t in parameters))
                              for p, top in zip(pieces, executable.top_inputs)]
    return executable
