"""Scheduling: which values live in memory, and which kernel writes each of them.

Every value is computed *inline* (at the index its reader asks for, see writer.py) unless
it must be materialized: graph outputs, operands of extern ops, and values a kernel
cannot compute in place (a reduction outside a matching row kernel, a dot_general
outside its own kernel) — those are *demanded* by the kernels that read them.

Each materialized value is a *root* of one kernel, chosen by its anchor:

* a reduction → the row kernel of its signature;
* a dot_general → its own dot kernel;
* an elementwise value → the row kernel of the latest reduction it reaches whose
  operand or result shape it has (softmax's division, layer_norm's affine), else the dot
  kernel of the latest dot_general of its shape it reaches (an epilogue), else a
  pointwise kernel of its shape.

A root's *level* is one more than the levels of the buffers it demands (inputs are level
0). Roots with the same anchor and level share one kernel, so kernels at one level never
depend on each other and launching by level is a valid order. An epilogue whose level
exceeds its dot's (it reads something computed after the dot) moves to a pointwise
kernel instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...ir.graph import Graph, Node, Value
from . import kernels as K
from .lowerings import EXTERN_OPS, INLINE_OPS, REDUCE_OPS
from .writer import KernelWriter

# A value emitted at more distinct indices than this in one kernel is materialized
# instead (shape ops at many offsets would otherwise recompute it exponentially often).
MAX_INLINE_COPIES = 16


@dataclass(frozen=True)
class Options:
    """Block sizes (elements per program) for the generated kernels."""

    pointwise_block: int = 1024
    row_elements: int = 4096
    dot_tile: int = 64


@dataclass
class KernelStep:
    name: str
    kind: str
    source: str
    inputs: list[Value]
    outputs: list[Value]
    grid: tuple  # ints, dims (symbolic: computed per call) or host expressions
    ops: list[str]  # the IR ops this kernel computes (for explain())
    constexprs: dict[str, str] = field(default_factory=dict)  # block size -> host expression

    @property
    def symbolic(self) -> bool:
        """Grid computed per call from symbolic dims (launched when it is not empty)."""
        return not all(isinstance(g, int) for g in self.grid)

    @property
    def launched(self) -> bool:
        return self.symbolic or all(g > 0 for g in self.grid)


@dataclass
class ExternStep:
    node: Node


@dataclass
class Plan:
    graph: Graph
    steps: list
    constants: dict[Value, np.ndarray] = field(default_factory=dict)

    @property
    def kernels_per_call(self) -> int:
        return sum(1 for s in self.steps if isinstance(s, KernelStep) and s.launched)

    @property
    def externs_per_call(self) -> int:
        return sum(1 for s in self.steps if isinstance(s, ExternStep))


class _Materialize(Exception):
    def __init__(self, value: Value):
        self.value = value


def splat_value(v: Value):
    """The scalar of a constant whose elements are all bit-identical, else None."""
    array = v.producer.attrs["value"]
    if array.size == 0:
        return 0
    flat = array.reshape(-1)
    if array.size == 1 or np.all(flat.view(np.uint8).reshape(flat.size, -1) == flat[:1].view(np.uint8)):
        return flat[0].item() if array.dtype.kind != "V" else float(flat[0])
    return None


class Scheduler:
    """Plans one graph with static shapes into kernels and extern calls."""

    def __init__(self, graph: Graph, options: Options, cuda: bool):
        self.graph = graph
        self.options = options
        self.cuda = cuda
        self.position = {node: i for i, node in enumerate(graph.nodes)}
        # demands are sets of Values (hashed by identity): plan them in graph order, so
        # one graph always gives the same kernels and source (and disk-cache key)
        values = list(graph.inputs) + [v for node in graph.nodes for v in node.outputs]
        self.order = {v: i for i, v in enumerate(values)}
        self.forced: set[Value] = set()
        self._splats: dict[Value, object] = {}

    def plan(self) -> Plan:
        while True:
            try:
                return self._plan()
            except _Materialize as m:
                self.forced.add(m.value)

    # -- planning ---------------------------------------------------------------------

    def _plan(self) -> Plan:
        self.level: dict[Value, int] = {}
        self.group_of: dict[Value, tuple] = {}
        self.members: dict[tuple, list[Value]] = {}
        self.extern_level: dict[Node, int] = {}
        self.dot_levels: dict[Node, int] = {}
        self.constants: dict[Value, np.ndarray] = {}
        for v in self.graph.outputs:
            self.root(v)
        return self._assemble()

    def is_buffer(self, v: Value) -> bool:
        node = v.producer
        return node is None or node.op in EXTERN_OPS or v in self.forced or (
            node.op == "constant" and self.splat(v) is None)

    def splat(self, v: Value):
        if v not in self._splats:
            self._splats[v] = splat_value(v)
        return self._splats[v]

    def root(self, v: Value) -> int:
        """Materialize ``v``; return its level."""
        if v in self.level:
            return self.level[v]
        node = v.producer
        if node is None:
            level = 0
        elif node.op == "constant" and self.splat(v) is None:
            self.constants[v] = node.attrs["value"]
            level = 0
        elif node.op in EXTERN_OPS:
            level = self._extern(node)
        else:
            level = self._kernel_root(v)
        self.level[v] = level
        return level

    def _extern(self, node: Node) -> int:
        if node not in self.extern_level:
            self.extern_level[node] = 1 + max((self.root(x) for x in node.inputs), default=0)
        return self.extern_level[node]

    def _kernel_root(self, v: Value) -> int:
        anchor = self.anchor(v)
        level = self._level_of(self.trial(anchor, v))
        if anchor[0] == "dot":
            dot_level = self._dot_level(anchor[1])
            if level > dot_level:  # reads something computed after the dot: not an epilogue
                anchor = ("pointwise", tuple(v.type.shape))
                level = self._level_of(self.trial(anchor, v))
            else:
                level = dot_level
        key = anchor if anchor[0] == "dot" else anchor + (level,)
        self.group_of[v] = key
        self.members.setdefault(key, []).append(v)
        return level

    def _dot_level(self, node: Node) -> int:
        if node not in self.dot_levels:
            self.dot_levels[node] = self._level_of(self.trial(("dot", node), node.outputs[0]))
        return self.dot_levels[node]

    def _level_of(self, demands) -> int:
        return 1 + max((self.root(d) for d in sorted(demands, key=self.order.__getitem__)), default=0)

    def anchor(self, v: Value) -> tuple:
        node = v.producer
        if node.op in REDUCE_OPS:
            return ("row", K.reduction_signature(node))
        if node.op == "dot_general":
            return ("dot", node)
        shape = tuple(v.type.shape)
        best = None
        for n in self._reachable_anchors(v):
            if n.op == "dot_general":
                fits = tuple(n.outputs[0].type.shape) == shape
            else:
                fits = shape in (K.reduction_signature(n)[0], tuple(n.outputs[0].type.shape))
            if fits and (best is None or self.position[n] > self.position[best]):
                best = n
        if best is None:
            return ("pointwise", shape)
        if best.op == "dot_general":
            return ("dot", best)
        return ("row", K.reduction_signature(best))

    def _reachable_anchors(self, v: Value) -> list[Node]:
        found, seen, stack = [], set(), [v]
        while stack:
            value = stack.pop()
            node = value.producer
            if node is None or node in seen or self.is_buffer(value):
                continue
            seen.add(node)
            if node.op in REDUCE_OPS or node.op == "dot_general":
                found.append(node)
            elif node.op in INLINE_OPS:
                stack.extend(node.inputs)
        return found

    # -- emission ---------------------------------------------------------------------

    def domain(self, anchor: tuple):
        o = self.options
        if anchor[0] == "pointwise":
            return K.Pointwise(anchor[1], o.pointwise_block)
        if anchor[0] == "row":
            return K.Row(anchor[1], o.row_elements)
        return K.Dot(anchor[1], o.dot_tile, self.cuda)

    def writer(self, anchor: tuple, roots) -> tuple[KernelWriter, object]:
        domain = self.domain(anchor)
        base = {v for v in self.forced if v not in roots}
        buffers = _Buffers(self, base, set(roots))
        w = KernelWriter(domain, cuda=self.cuda, buffers=buffers, splat=self.splat)
        domain.start(w)
        return w, domain

    def trial(self, anchor: tuple, v: Value) -> set[Value]:
        """Emit ``v`` alone in the anchor's kernel; return what it demands."""
        w, domain = self.writer(anchor, [v])
        w.value(v, domain.root_index(v))
        self._check_copies(w)
        return w.demands

    def _check_copies(self, w: KernelWriter) -> None:
        for value, count in w.emitted.most_common():
            if count <= MAX_INLINE_COPIES:
                return
            if value.producer is not None and not self.is_buffer(value):
                raise _Materialize(value)

    def _assemble(self) -> Plan:
        entries = []  # (level, position, step factory)
        for key, roots in self.members.items():
            level = self.level[roots[0]]
            entries.append((level, min(self.position[r.producer] for r in roots), key, roots))
        for node, level in self.extern_level.items():
            entries.append((level, self.position[node], None, node))
        entries.sort(key=lambda e: (e[0], e[1]))
        steps = []
        for level, _, key, item in entries:
            if key is None:
                steps.append(ExternStep(item))
                continue
            steps.append(self._kernel(len([s for s in steps if isinstance(s, KernelStep)]), key, item))
        return Plan(self.graph, steps, self.constants)

    def _kernel(self, number: int, key: tuple, roots: list[Value]) -> KernelStep:
        w, domain = self.writer(key, roots)
        outs = []
        for i, v in enumerate(roots):
            expr = w.value(v, domain.root_index(v))
            ptr = f"out{i}"
            outs.append(ptr)
            w.store(v, domain.root_index(v), expr, ptr)
        missing = [d for d in w.demands if d not in self.level]
        assert not missing, f"kernel demands unplanned values {missing}"
        ops = sorted({key[0].producer.op for key in w.memo[0]
                      if key[0].producer is not None and key[0] not in w.params})
        name = f"k{number}_{domain.kind}"
        return KernelStep(name, domain.kind, K.kernel_source(name, w, outs), list(w.params), roots,
                          domain.grid(), ops, dict(getattr(domain, "constexprs", {})))


class _Buffers:
    """Membership test the writer uses: is this value read from memory here?"""

    def __init__(self, scheduler: Scheduler, forced: set[Value], roots: set[Value]):
        self.scheduler = scheduler
        self.forced = forced
        self.roots = roots

    def __contains__(self, v: Value) -> bool:
        node = v.producer
        if node is None or node.op in EXTERN_OPS:
            return True
        return v in self.forced
