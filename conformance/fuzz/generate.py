"""Random valid IR graphs: small DAGs whose types and shapes are consistent by construction.

A generator keeps a pool of values (graph inputs and results so far). Each step picks
an op *maker* (weighted, :data:`MAKERS`); the maker chooses operands from the pool (or
makes fresh inputs of the types it needs) and attributes that fit their shapes, and the
op table's type rule has the last word: a proposal it rejects is dropped and another
maker is tried. Every value is kept as a graph output, so conformance can measure every
node on its own (:mod:`..local`).

Inputs are drawn after the graph is built, each by the draw its maker chose: an op's
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

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...ir.builder import GraphBuilder
from ...ir.dtypes import ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, DType
from ...ir.errors import TypeRuleError
from ...ir.graph import Graph, Value
from ...ir.opdef import Group
from ...ir.ops import OP_TABLE, ops_in_family
from ...ir.types import TensorType
from .. import values as V
from ..opdb.elementwise import domain

Draw = Callable[[np.random.Generator, DType, tuple[int, ...]], np.ndarray]

MAX_ELEMENTS = 256  # per value: graphs stay small, so the oracle and shrinking stay fast
_DTYPE_WEIGHTS = {DType.float32: 8, DType.float16: 3, DType.bfloat16: 3, DType.float64: 2, DType.int32: 2,
                  DType.int64: 1, DType.int8: 1, DType.int16: 0.5, DType.uint8: 1, DType.uint32: 1, DType.bool: 1}


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


class Rejected(Exception):
    """A maker found nothing to build on (no suitable operand)."""


def generate(seed: int, index: int, *, max_ops: int = 8) -> FuzzGraph:
    """Graph ``index`` of the stream ``seed``: 1..``max_ops`` generated ops plus the helpers
    (broadcasts, keys, index inputs) they need."""
    rng = np.random.default_rng([seed, index])
    g = _Gen(rng)
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


class _Gen:
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
            return _with_specials
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


# -- input draws ------------------------------------------------------------------------------


def _with_specials(rng, d: DType, shape) -> np.ndarray:
    """Ordinary values with about a quarter of the elements replaced by special values."""
    base = V.normal(rng, d, shape)
    if not base.size:
        return base
    s = V.specials(d)
    pick = rng.random(shape) < 0.25
    return np.where(pick, s[rng.integers(0, s.size, size=shape)], base).astype(base.dtype)


def _indices(n: int) -> Draw:
    return lambda rng, d, shape: rng.integers(0, max(n, 1), size=shape).astype(d.numpy)


def _distinct(n: int, axis: int) -> Draw:
    """Indices in [0, n), distinct along ``axis`` (valid 'replace' scatters)."""
    def draw(rng, d, shape):
        moved = shape[:axis] + shape[axis + 1:] + (shape[axis],)
        keys = rng.random(moved[:-1] + (n,))
        out = np.argsort(keys, axis=-1)[..., :shape[axis]]
        return np.moveaxis(out, -1, axis).astype(d.numpy)

    return draw


def _shifts(rng, d, shape):
    return rng.integers(max(-2, int(d.iinfo.min)), d.bits + 2, size=shape).astype(d.numpy)


def _key(rng, d, shape):
    return rng.integers(0, 2**32, size=shape, dtype=np.uint64).astype(np.uint32)


def _positive(rng, d, shape):
    return V.magnitudes(rng, d, shape, -6, 6, signed=False)


# -- makers ---------------------------------------------------------------------------------------

# The op table's elementwise families, in table order (a new op there is fuzzed with no edit
# here). One-operand ops: every unary op and activation. Two-operand ops: comparisons,
# arithmetic (the float-accepting rest, drawn 3x as often) and logic/bits/shifts (no floats).
_UNARY = ops_in_family("unary") + ops_in_family("activations")
_COMPARE = tuple(op for op in ops_in_family("binary") if Group.COMPARISON in OP_TABLE[op].groups)
_ARITH = tuple(op for op in ops_in_family("binary")
               if op not in _COMPARE and DType.float32 in OP_TABLE[op].dtypes)
_BITS = tuple(op for op in ops_in_family("binary") if op not in _COMPARE + _ARITH)


def _dtypes(op: str) -> tuple[DType, ...]:
    return OP_TABLE[op].dtypes


def _unary(g: _Gen):
    op = g.choice(_UNARY)
    dom = domain(op)
    x = g.value(_dtypes(op), fresh=0.6 if dom else 0.2, draw=(lambda r, d, s: dom(r, d, s)) if dom else None)
    attrs = {}
    if op == "gelu":
        attrs["approximate"] = g.choice(("none", "tanh"))
    elif op in ("elu", "leaky_relu"):
        attrs["alpha" if op == "elu" else "negative_slope"] = g.choice((0.01, 0.5, 1.0, 2.0))
    elif op == "softplus":
        attrs.update(beta=g.choice((1.0, 0.5, 2.0)), threshold=g.choice((20.0, 5.0)))
    elif op == "hardtanh":
        attrs.update(min_val=-g.choice((1.0, 0.5, 2.0)), max_val=g.choice((1.0, 0.5, 3.0)))
    g.emit(op, x, **attrs)


def _binary(g: _Gen):
    op = g.choice(_ARITH * 3 + _COMPARE + _BITS)
    x = g.value(_dtypes(op))
    draw = _shifts if op.startswith("shift") else (_positive if op == "pow" and g.coin(0.5) else None)
    if op == "pow" and draw is _positive:
        x, y = g.like(x, draw=_positive), g.like(x)
    elif g.coin(0.2) and x.rank:  # the second operand broadcast from a lower rank inside the graph
        keep = g.subset(x.rank, nonempty=False)
        small = g.input(x.dtype, tuple(x.shape[i] for i in keep), draw)
        y = g.emit("broadcast_in_dim", small, shape=x.shape, broadcast_dimensions=keep)
    else:
        y = g.like(x, draw=draw)
    g.emit(op, *((y, x) if g.coin(0.3) and draw is None else (x, y)))


def _select(g: _Gen):
    x = g.value()
    if g.coin(0.5) and x.dtype is not DType.bool:
        pred = g.emit(g.choice(_COMPARE), x, g.like(x))
    else:
        pred = g.like(x, dtype=DType.bool)
    g.emit("select", pred, x, g.like(x))


def _clamp(g: _Gen):
    x = g.value(_dtypes("clamp"))
    g.emit("clamp", g.like(x), x, g.like(x))


def _convert(g: _Gen):
    x = g.value()
    op = "bitcast_convert" if g.coin(0.2) and not x.dtype.is_bool else "convert"
    targets = [d for d in ALL_DTYPES if op == "convert" or (d.bits == x.dtype.bits and not d.is_bool)]
    g.emit(op, x, dtype=g.choice(targets))


def _reduce(g: _Gen):
    x = g.value(min_rank=1)
    if x.dtype.is_bool:
        g.emit(g.choice(("reduce_and", "reduce_or")), x, axes=g.subset(x.rank))
    elif g.coin(0.25):
        axis = g.choice([i for i in range(x.rank) if x.shape[i] > 0])
        g.emit(g.choice(("argmax", "argmin")), x, axis=axis, index_dtype=g.choice((DType.int64, DType.int32)))
    else:
        g.emit(g.choice(("reduce_sum", "reduce_sum", "reduce_prod", "reduce_max", "reduce_min")), x,
               axes=g.subset(x.rank))


def _scan(g: _Gen):
    x = g.value(_dtypes("cumsum"), min_rank=1)
    # every scan of the table, cumsum twice as often
    g.emit(g.choice(("cumsum",) + ops_in_family("scan")), x, axis=g.int(0, x.rank - 1),
           reverse=g.coin(0.3))


def _sort(g: _Gen):
    x = g.value(_dtypes("sort"), min_rank=1)
    if g.coin(0.5):
        g.emit("sort", x, axis=g.int(0, x.rank - 1), descending=g.coin(0.5))
    else:
        g.emit("top_k", x, k=g.int(0, x.shape[-1]), largest=g.coin(0.7))


def _reshape(g: _Gen):
    x = g.value()
    n = x.type.numel
    dims, rest = [], n
    while rest > 1 and len(dims) < 3:
        f = g.choice([d for d in range(1, rest + 1) if rest % d == 0])
        dims.append(f)
        rest //= f
    dims = dims + [rest] if rest != 1 or not dims else dims
    if n == 0:
        dims = [0, g.int(1, 3)]
    g.emit("reshape", x, shape=tuple(int(d) for d in g.rng.permutation(dims)))


def _transpose(g: _Gen):
    x = g.value(min_rank=2)
    g.emit("transpose", x, permutation=tuple(int(i) for i in g.rng.permutation(x.rank)))


def _broadcast(g: _Gen):
    x = g.value()
    if x.rank >= 3:
        raise Rejected
    shape, dims = list(x.shape), list(range(x.rank))
    pos = g.int(0, x.rank)
    shape.insert(pos, g.int(1, 4))
    dims = [d if d < pos else d + 1 for d in dims]
    g.emit("broadcast_in_dim", x, shape=tuple(shape), broadcast_dimensions=tuple(dims))


def _slice(g: _Gen):
    x = g.value(min_rank=1)
    start, limit, strides = [], [], []
    for n in x.shape:
        a = g.int(0, n)
        start.append(a)
        limit.append(g.int(a, n))
        strides.append(g.choice((1, 1, 2, 3)))
    g.emit("slice", x, start_indices=tuple(start), limit_indices=tuple(limit), strides=tuple(strides))


def _concatenate(g: _Gen):
    x = g.value(min_rank=1)
    others = [g.like(x) for _ in range(g.int(1, 2))]
    g.emit("concatenate", x, *others, dimension=g.int(0, x.rank - 1))


def _pad(g: _Gen):
    x = g.value(min_rank=1)
    value = g.input(x.dtype, ())
    low = tuple(g.int(-1 if n else 0, 2) for n in x.shape)
    high = tuple(g.int(-1 if n else 0, 2) for n in x.shape)
    g.emit("pad", x, value, edge_padding_low=low, edge_padding_high=high,
           interior_padding=tuple(g.int(0, 1) for _ in x.shape))


def _reverse(g: _Gen):
    x = g.value(min_rank=1)
    g.emit("reverse", x, dimensions=g.subset(x.rank))


def _gather(g: _Gen):
    x = g.value(min_rank=1)
    axis = g.int(0, x.rank - 1)
    if x.shape[axis] == 0:
        raise Rejected
    shape = tuple(g.int(1, 4) if i == axis else g.int(min(1, n), n) for i, n in enumerate(x.shape))
    idx = g.input(g.choice((DType.int32, DType.int64)), shape, _indices(x.shape[axis]))
    g.emit("gather", x, idx, axis=axis)


def _scatter(g: _Gen):
    x = g.value(min_rank=1)
    axis = g.int(0, x.rank - 1)
    reduce = g.choice(("add", "replace")) if x.dtype is not DType.bool else "replace"
    n = x.shape[axis]
    if n == 0:
        raise Rejected
    shape = tuple(g.int(1, n) if i == axis else g.int(min(1, m), m) for i, m in enumerate(x.shape))
    draw = _distinct(n, axis) if reduce == "replace" else _indices(n)
    idx = g.input(g.choice((DType.int32, DType.int64)), shape, draw)
    g.emit("scatter", x, idx, g.input(x.dtype, shape), axis=axis, reduce=reduce)


def _dynamic(g: _Gen):
    x = g.value(min_rank=1)
    it = g.choice((DType.int32, DType.int64))
    starts = [g.input(it, (), lambda r, d, s: np.asarray(r.integers(-2, 8), d.numpy)) for _ in x.shape]
    if g.coin(0.5):
        g.emit("dynamic_slice", x, *starts, slice_sizes=tuple(g.int(0, n) for n in x.shape))
    else:
        update = g.input(x.dtype, tuple(g.int(0, n) for n in x.shape))
        g.emit("dynamic_update_slice", x, update, *starts)


def _dot(g: _Gen):
    lhs = g.value(_dtypes("dot_general"), min_rank=1)
    if lhs.rank > 3:
        raise Rejected
    k = lhs.rank - 1
    batch = (0,) if lhs.rank == 3 and g.coin(0.5) else ()
    rhs_shape = tuple(lhs.shape[b] for b in batch) + (lhs.shape[k], g.int(1, 5))
    rhs = g.input(lhs.dtype, rhs_shape)
    op = g.choice(("dot_general", "dot_general", "matmul")) if lhs.rank >= 2 else "dot_general"
    if op == "matmul" and not batch and lhs.rank <= 2:
        g.emit("matmul", lhs, rhs)
        return
    g.emit("dot_general", lhs, rhs, lhs_contracting_dims=(k,), rhs_contracting_dims=(len(batch),),
           lhs_batch_dims=batch, rhs_batch_dims=tuple(range(len(batch))))


def _linear(g: _Gen):
    x = g.value(FLOAT_DTYPES, min_rank=1)
    out = g.int(1, 5)
    g.emit("linear", x, g.input(x.dtype, (out, x.shape[-1])), g.input(x.dtype, (out,)))


def _conv(g: _Gen):
    d = g.dtype(FLOAT_DTYPES)
    spatial = g.int(1, 2)
    n, c = g.int(1, 2), g.choice((1, 2, 4))
    groups = g.choice([q for q in (1, 2) if c % q == 0])
    x = g.input(d, (n, c) + tuple(g.int(3, 6) for _ in range(spatial)))
    o = groups * g.int(1, 2)
    w = g.input(d, (o, c // groups) + tuple(g.int(1, 3) for _ in range(spatial)))
    g.emit("convolution", x, w, window_strides=tuple(g.int(1, 2) for _ in range(spatial)),
           padding=tuple((g.int(0, 1), g.int(0, 1)) for _ in range(spatial)),
           lhs_dilation=tuple(g.choice((1, 1, 2)) for _ in range(spatial)),
           rhs_dilation=tuple(g.choice((1, 1, 2)) for _ in range(spatial)), feature_group_count=groups)


def _window(g: _Gen):
    x = g.value(_dtypes("reduce_window"), min_rank=1)
    if g.coin(0.3) and x.rank in (3, 4) and x.dtype.is_float:
        kernel = tuple(g.int(1, min(2, n)) if n else 1 for n in x.shape[2:])
        if 0 in x.shape:
            raise Rejected
        op = g.choice(("max_pool", "avg_pool"))
        g.emit(op, x, kernel=kernel, stride=tuple(g.int(1, 2) for _ in kernel))
        return
    dims = tuple(g.int(1, min(3, n)) if n else 1 for n in x.shape)
    g.emit("reduce_window", x, kind=g.choice(("max", "sum")), window_dimensions=dims,
           window_strides=tuple(g.int(1, 2) for _ in dims), padding=tuple((g.int(0, 1), g.int(0, 1)) for _ in dims),
           window_dilations=tuple(1 for _ in dims))


def _statistics(g: _Gen):
    x = g.value(FLOAT_DTYPES, min_rank=1)
    op = g.choice(("softmax", "log_softmax", "logsumexp", "mean", "var", "std"))
    if op in ("softmax", "log_softmax"):
        g.emit(op, x, axis=g.int(0, x.rank - 1))
    elif op in ("var", "std"):
        g.emit(op, x, axes=g.subset(x.rank), correction=g.int(0, 1))
    else:
        g.emit(op, x, axes=g.subset(x.rank))


def _norm(g: _Gen):
    x = g.value(FLOAT_DTYPES, min_rank=1)
    k = g.int(1, x.rank)
    shape = x.shape[x.rank - k:]
    if g.coin(0.5):
        g.emit("layer_norm", x, g.input(x.dtype, shape), g.input(x.dtype, shape), normalized_ndim=k)
    else:
        g.emit("rms_norm", x, g.input(x.dtype, shape), normalized_ndim=k, eps=1e-6)


def _random(g: _Gen):
    key = g.input(DType.uint32, (2,), _key)
    op = g.choice(("uniform", "normal", "random_bits", "dropout"))
    shape = g.shape()
    if op == "random_bits":
        g.emit(op, key, shape=shape)
    elif op == "dropout":
        g.emit(op, g.value(FLOAT_DTYPES), key, p=g.choice((0.0, 0.1, 0.5, 0.9, 1.0)))
    elif op == "uniform":
        low = g.choice((0.0, -1.0, -3.5, 2.0))
        g.emit(op, key, shape=shape, dtype=g.dtype(FLOAT_DTYPES), low=low, high=low + g.choice((1.0, 0.25, 10.0)))
    else:
        g.emit(op, key, shape=shape, dtype=g.dtype(FLOAT_DTYPES))


def _source(g: _Gen):
    shape = g.shape(min_rank=1)
    d = g.dtype([d for d in ALL_DTYPES if d is not DType.bool])
    g.emit("iota", dtype=d, shape=shape, dimension=g.int(0, len(shape) - 1))


def _masking(g: _Gen):
    op = g.choice(("tril", "triu", "masked_fill", "one_hot"))
    if op == "one_hot":
        c = g.int(1, 6)
        d = g.choice((DType.int32, DType.int64))
        idx = g.input(d, g.shape(max_rank=2), lambda r, dt, s: r.integers(-1, c + 1, size=s).astype(dt.numpy))
        g.emit(op, idx, num_classes=c, dtype=g.dtype(INT_DTYPES))
    elif op == "masked_fill":
        x = g.value()
        g.emit(op, x, g.like(x, dtype=DType.bool), g.input(x.dtype, ()))
    else:
        x = g.value(min_rank=2)
        g.emit(op, x, diagonal=g.int(-2, 2))


def _loss(g: _Gen):
    x = g.value(FLOAT_DTYPES, min_rank=1)
    reduction = g.choice(("mean", "sum", "none"))
    if g.coin(0.5) or x.rank != 2 or 0 in x.shape:
        g.emit("mse_loss", x, g.like(x), reduction=reduction)
        return
    c = x.shape[1]
    target = g.input(g.choice((DType.int32, DType.int64)), (x.shape[0],), _indices(c))
    g.emit("cross_entropy", x, target, reduction=reduction, label_smoothing=g.choice((0.0, 0.0, 0.1)))


#: name -> (maker, weight). The weights shape the op mix; every maker lets the type rules decide.
MAKERS: dict[str, tuple[Callable[[_Gen], None], float]] = {
    "unary": (_unary, 6), "binary": (_binary, 7), "select": (_select, 1.5), "clamp": (_clamp, 1),
    "convert": (_convert, 2.5), "reduce": (_reduce, 3), "scan": (_scan, 1.5), "sort": (_sort, 1),
    "reshape": (_reshape, 1.5), "transpose": (_transpose, 1.5), "broadcast": (_broadcast, 1.5),
    "slice": (_slice, 1.5), "concatenate": (_concatenate, 1), "pad": (_pad, 1), "reverse": (_reverse, 0.7),
    "gather": (_gather, 1), "scatter": (_scatter, 1), "dynamic": (_dynamic, 1), "dot": (_dot, 2),
    "linear": (_linear, 0.5), "conv": (_conv, 0.7), "window": (_window, 1), "statistics": (_statistics, 2),
    "norm": (_norm, 0.8), "random": (_random, 1), "source": (_source, 0.3), "masking": (_masking, 0.8),
    "loss": (_loss, 0.6),
}
