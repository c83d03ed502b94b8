"""The state a fuzz graph is generated in: a graph builder, the pool of values later ops
may read (graph inputs and results so far), each input's draw, and the random choices
(dtypes, shapes, axes, pool values) that makers make through it.

Example::

    >>> import numpy as np
    >>> g = FuzzBuilder(np.random.default_rng(0))
    >>> x = g.input(DType.float32, (2, 3))
    >>> g.emit("exp", x).type
    TensorType(f32[2,3])
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ...ir.builder import GraphBuilder
from ...ir.dtypes import ALL_DTYPES, DType
from ...ir.graph import Value
from ...ir.types import TensorType
from .. import values as V
from .draws import Draw, with_specials

MAX_ELEMENTS = 256  # per value: graphs stay small, so the oracle and shrinking stay fast
_DTYPE_WEIGHTS = {DType.float32: 8, DType.float16: 3, DType.bfloat16: 3, DType.float64: 2, DType.int32: 2,
                  DType.int64: 1, DType.int8: 1, DType.int16: 0.5, DType.uint8: 1, DType.uint32: 1, DType.bool: 1}


class Rejected(Exception):
    """A maker found nothing to build on (no suitable operand)."""


class FuzzBuilder:
    """The graph being generated: its builder, the pool of values ops may read, the draw
    of each graph input, and the random choices every maker makes through it."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.b = GraphBuilder("fuzz")
        self.pool: list[Value] = []
        self.draws: dict[Value, Draw] = {}
        self.made = 0

    # -- randomness ------------------------------------------------------------------------

    def coin(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def choice(self, seq):
        seq = list(seq)
        if not seq:
            raise Rejected
        return seq[int(self.rng.integers(len(seq)))]

    def int(self, lo: int, hi: int) -> int:
        """Uniform in [lo, hi]."""
        return int(self.rng.integers(lo, hi + 1))

    def dtype(self, allowed=ALL_DTYPES) -> DType:
        allowed = [d for d in allowed if d in _DTYPE_WEIGHTS]
        w = np.asarray([_DTYPE_WEIGHTS[d] for d in allowed], float)
        return allowed[int(self.rng.choice(len(allowed), p=w / w.sum()))]

    def shape(self, min_rank: int = 0, max_rank: int = 3) -> tuple[int, ...]:
        rank = self.int(min_rank, max_rank)
        dims = [self.choice((1, 2, 3, 4, 5, 6, 7)) for _ in range(rank)]
        if rank and self.coin(0.03):
            dims[self.int(0, rank - 1)] = 0  # an empty dim now and then
        while math.prod(dims) > 64:
            dims[dims.index(max(dims))] //= 2
        return tuple(dims)

    def subset(self, rank: int, nonempty: bool = True) -> tuple[int, ...]:
        axes = tuple(i for i in range(rank) if self.coin(0.5))
        if nonempty and not axes and rank:
            axes = (self.int(0, rank - 1),)
        return axes

    # -- values --------------------------------------------------------------------------------

    def input(self, dtype: DType, shape, draw: Draw | None = None) -> Value:
        v = self.b.input(TensorType(dtype, tuple(shape)))
        self.draws[v] = draw or self.default_draw()
        self.pool.append(v)
        return v

    def default_draw(self) -> Draw:
        r = self.rng.random()
        if r < 0.12:
            return with_specials
        if r < 0.18:
            return V.full_range
        return V.normal

    def pick(self, ok: Callable[[TensorType], bool], computed: bool = False) -> Value | None:
        """A pool value whose type passes ``ok`` (``computed``: no graph input), recent ones
        more likely (chains form)."""
        found = [v for v in self.pool if ok(v.type) and v.type.numel <= MAX_ELEMENTS
                 and not (computed and v in self.draws)]
        if not found:
            return None
        w = np.arange(1, len(found) + 1, dtype=float) ** 2
        return found[int(self.rng.choice(len(found), p=w / w.sum()))]

    def value(self, dtypes=ALL_DTYPES, min_rank: int = 0, fresh: float = 0.25, draw: Draw | None = None) -> Value:
        """A pool value of one of ``dtypes`` and rank >= ``min_rank``, or a fresh input. With a
        ``draw`` (an op's domain), graph inputs drawn otherwise are never reused."""
        dtypes = tuple(dtypes)
        v = None if self.coin(fresh) else self.pick(lambda t: t.dtype in dtypes and t.rank >= min_rank,
                                                    computed=draw is not None)
        if v is None:
            v = self.input(self.dtype(dtypes), self.shape(min_rank=min_rank), draw)
        return v

    def like(self, v: Value, draw: Draw | None = None, dtype: DType | None = None) -> Value:
        """Another value of ``v``'s type (``dtype`` if given): from the pool, or fresh."""
        t = v.type if dtype is None else TensorType(dtype, v.type.shape)
        other = None if self.coin(0.4) else self.pick(lambda u: u == t)
        return other if other is not None else self.input(t.dtype, t.shape, draw)

    def emit(self, op: str, *inputs: Value, **attrs):
        node = self.b.make_node(op, inputs, attrs)
        if any(v.type.numel > 4 * MAX_ELEMENTS for v in node.outputs):
            raise Rejected
        self.b.nodes.append(node)
        self.pool.extend(node.outputs)
        return node.outputs[0] if len(node.outputs) == 1 else node.outputs

    def rollback(self, n_inputs: int, n_nodes: int, n_pool: int) -> None:
        for v in self.b.inputs[n_inputs:]:
            self.draws.pop(v, None)
        del self.b.inputs[n_inputs:], self.b.nodes[n_nodes:], self.pool[n_pool:]
