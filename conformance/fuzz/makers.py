"""The op makers of the fuzzer: each builds one op on a :class:`~.builder.FuzzBuilder`,
choosing operands from its pool (or fresh inputs with the draws the op needs) and
attributes that fit their shapes; the op table's type rule has the last word.

:data:`MAKERS` is the explicit registry, with the weights that shape the op mix.

Example::

    >>> import numpy as np
    >>> g = FuzzBuilder(np.random.default_rng(1))
    >>> MAKERS["unary"][0](g)
    >>> g.b.nodes[-1].op in _UNARY
    True
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...ir.dtypes import ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, DType
from ...ir.opdef import Group
from ...ir.ops import OP_TABLE, ops_in_family
from ..opdb.elementwise import domain
from .builder import FuzzBuilder, Rejected
from .draws import distinct, indices, key_bits, positive, shifts

# The op table's elementwise families, in table order (a new op there is fuzzed with no edit
# here). One-operand ops: every unary op and activation. Two-operand ops: comparisons,
# arithmetic (the float-accepting rest, drawn 3x as often) and logic/bits/shifts (no floats).
_UNARY = ops_in_family("unary") + ops_in_family("activations")
_COMPARE = tuple(op for op in ops_in_family("binary") if Group.COMPARISON in OP_TABLE[op].groups)
_ARITH = tuple(op for op in ops_in_family("binary")
               if op not in _COMPARE and DType.float32 in OP_TABLE[op].dtypes)
_BITS = tuple(op for op in ops_in_family("binary") if op not in _COMPARE + _ARITH)


def _dtypes(op: str) -> tuple[DType, ...]:
    # Complex graphs are not fuzzed yet: not every backend lowers complex numbers.
    return tuple(d for d in OP_TABLE[op].dtypes if not d.is_complex)


def _unary(g: FuzzBuilder):
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


def _binary(g: FuzzBuilder):
    op = g.choice(_ARITH * 3 + _COMPARE + _BITS)
    x = g.value(_dtypes(op))
    draw = shifts if op.startswith("shift") else (positive if op == "pow" and g.coin(0.5) else None)
    if op == "pow" and draw is positive:
        x, y = g.like(x, draw=positive), g.like(x)
    elif g.coin(0.2) and x.rank:  # the second operand broadcast from a lower rank inside the graph
        keep = g.subset(x.rank, nonempty=False)
        small = g.input(x.dtype, tuple(x.shape[i] for i in keep), draw)
        y = g.emit("broadcast_in_dim", small, shape=x.shape, broadcast_dimensions=keep)
    else:
        y = g.like(x, draw=draw)
    g.emit(op, *((y, x) if g.coin(0.3) and draw is None else (x, y)))


def _select(g: FuzzBuilder):
    x = g.value()
    if g.coin(0.5) and x.dtype is not DType.bool:
        pred = g.emit(g.choice(_COMPARE), x, g.like(x))
    else:
        pred = g.like(x, dtype=DType.bool)
    g.emit("select", pred, x, g.like(x))


def _clamp(g: FuzzBuilder):
    x = g.value(_dtypes("clamp"))
    g.emit("clamp", g.like(x), x, g.like(x))


def _convert(g: FuzzBuilder):
    x = g.value()
    op = "bitcast_convert" if g.coin(0.2) and not x.dtype.is_bool else "convert"
    targets = [d for d in ALL_DTYPES if op == "convert" or (d.bits == x.dtype.bits and not d.is_bool)]
    g.emit(op, x, dtype=g.choice(targets))


def _reduce(g: FuzzBuilder):
    x = g.value(min_rank=1)
    if x.dtype.is_bool:
        g.emit(g.choice(("reduce_and", "reduce_or")), x, axes=g.subset(x.rank))
    elif g.coin(0.25):
        axis = g.choice([i for i in range(x.rank) if x.shape[i] > 0])
        g.emit(g.choice(("argmax", "argmin")), x, axis=axis, index_dtype=g.choice((DType.int64, DType.int32)))
    else:
        g.emit(g.choice(("reduce_sum", "reduce_sum", "reduce_prod", "reduce_max", "reduce_min")), x,
               axes=g.subset(x.rank))


def _scan(g: FuzzBuilder):
    x = g.value(_dtypes("cumsum"), min_rank=1)
    # every scan of the table, cumsum twice as often
    g.emit(g.choice(("cumsum",) + ops_in_family("scan")), x, axis=g.int(0, x.rank - 1),
           reverse=g.coin(0.3))


def _sort(g: FuzzBuilder):
    x = g.value(_dtypes("sort"), min_rank=1)
    if g.coin(0.5):
        g.emit("sort", x, axis=g.int(0, x.rank - 1), descending=g.coin(0.5))
    else:
        g.emit("top_k", x, k=g.int(0, x.shape[-1]), largest=g.coin(0.7))


def _reshape(g: FuzzBuilder):
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


def _transpose(g: FuzzBuilder):
    x = g.value(min_rank=2)
    g.emit("transpose", x, permutation=tuple(int(i) for i in g.rng.permutation(x.rank)))


def _broadcast(g: FuzzBuilder):
    x = g.value()
    if x.rank >= 3:
        raise Rejected
    shape, dims = list(x.shape), list(range(x.rank))
    pos = g.int(0, x.rank)
    shape.insert(pos, g.int(1, 4))
    dims = [d if d < pos else d + 1 for d in dims]
    g.emit("broadcast_in_dim", x, shape=tuple(shape), broadcast_dimensions=tuple(dims))


def _slice(g: FuzzBuilder):
    x = g.value(min_rank=1)
    start, limit, strides = [], [], []
    for n in x.shape:
        a = g.int(0, n)
        start.append(a)
        limit.append(g.int(a, n))
        strides.append(g.choice((1, 1, 2, 3)))
    g.emit("slice", x, start_indices=tuple(start), limit_indices=tuple(limit), strides=tuple(strides))


def _concatenate(g: FuzzBuilder):
    x = g.value(min_rank=1)
    others = [g.like(x) for _ in range(g.int(1, 2))]
    g.emit("concatenate", x, *others, dimension=g.int(0, x.rank - 1))


def _pad(g: FuzzBuilder):
    x = g.value(min_rank=1)
    value = g.input(x.dtype, ())
    low = tuple(g.int(-1 if n else 0, 2) for n in x.shape)
    high = tuple(g.int(-1 if n else 0, 2) for n in x.shape)
    g.emit("pad", x, value, edge_padding_low=low, edge_padding_high=high,
           interior_padding=tuple(g.int(0, 1) for _ in x.shape))


def _reverse(g: FuzzBuilder):
    x = g.value(min_rank=1)
    g.emit("reverse", x, dimensions=g.subset(x.rank))


def _gather(g: FuzzBuilder):
    x = g.value(min_rank=1)
    axis = g.int(0, x.rank - 1)
    if x.shape[axis] == 0:
        raise Rejected
    shape = tuple(g.int(1, 4) if i == axis else g.int(min(1, n), n) for i, n in enumerate(x.shape))
    idx = g.input(g.choice((DType.int32, DType.int64)), shape, indices(x.shape[axis]))
    g.emit("gather", x, idx, axis=axis)


def _scatter(g: FuzzBuilder):
    x = g.value(min_rank=1)
    axis = g.int(0, x.rank - 1)
    reduce = g.choice(("add", "replace")) if x.dtype is not DType.bool else "replace"
    n = x.shape[axis]
    if n == 0:
        raise Rejected
    shape = tuple(g.int(1, n) if i == axis else g.int(min(1, m), m) for i, m in enumerate(x.shape))
    draw = distinct(n, axis) if reduce == "replace" else indices(n)
    idx = g.input(g.choice((DType.int32, DType.int64)), shape, draw)
    g.emit("scatter", x, idx, g.input(x.dtype, shape), axis=axis, reduce=reduce)


def _dynamic(g: FuzzBuilder):
    x = g.value(min_rank=1)
    it = g.choice((DType.int32, DType.int64))
    starts = [g.input(it, (), lambda r, d, s: np.asarray(r.integers(-2, 8), d.numpy)) for _ in x.shape]
    if g.coin(0.5):
        g.emit("dynamic_slice", x, *starts, slice_sizes=tuple(g.int(0, n) for n in x.shape))
    else:
        update = g.input(x.dtype, tuple(g.int(0, n) for n in x.shape))
        g.emit("dynamic_update_slice", x, update, *starts)


def _dot(g: FuzzBuilder):
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


def _linear(g: FuzzBuilder):
    x = g.value(FLOAT_DTYPES, min_rank=1)
    out = g.int(1, 5)
    g.emit("linear", x, g.input(x.dtype, (out, x.shape[-1])), g.input(x.dtype, (out,)))


def _conv(g: FuzzBuilder):
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


def _window(g: FuzzBuilder):
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


def _statistics(g: FuzzBuilder):
    x = g.value(FLOAT_DTYPES, min_rank=1)
    op = g.choice(("softmax", "log_softmax", "logsumexp", "mean", "var", "std"))
    if op in ("softmax", "log_softmax"):
        g.emit(op, x, axis=g.int(0, x.rank - 1))
    elif op in ("var", "std"):
        g.emit(op, x, axes=g.subset(x.rank), correction=g.int(0, 1))
    else:
        g.emit(op, x, axes=g.subset(x.rank))


def _norm(g: FuzzBuilder):
    x = g.value(FLOAT_DTYPES, min_rank=1)
    k = g.int(1, x.rank)
    shape = x.shape[x.rank - k:]
    if g.coin(0.5):
        g.emit("layer_norm", x, g.input(x.dtype, shape), g.input(x.dtype, shape), normalized_ndim=k)
    else:
        g.emit("rms_norm", x, g.input(x.dtype, shape), normalized_ndim=k, eps=1e-6)


def _random(g: FuzzBuilder):
    key = g.input(DType.uint32, (2,), key_bits)
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


def _source(g: FuzzBuilder):
    shape = g.shape(min_rank=1)
    d = g.dtype([d for d in ALL_DTYPES if d is not DType.bool])
    g.emit("iota", dtype=d, shape=shape, dimension=g.int(0, len(shape) - 1))


def _masking(g: FuzzBuilder):
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


def _loss(g: FuzzBuilder):
    x = g.value(FLOAT_DTYPES, min_rank=1)
    reduction = g.choice(("mean", "sum", "none"))
    if g.coin(0.5) or x.rank != 2 or 0 in x.shape:
        g.emit("mse_loss", x, g.like(x), reduction=reduction)
        return
    c = x.shape[1]
    target = g.input(g.choice((DType.int32, DType.int64)), (x.shape[0],), indices(c))
    g.emit("cross_entropy", x, target, reduction=reduction, label_smoothing=g.choice((0.0, 0.0, 0.1)))


#: name -> (maker, weight). The weights shape the op mix; every maker lets the type rules decide.
MAKERS: dict[str, tuple[Callable[[FuzzBuilder], None], float]] = {
    "unary": (_unary, 6), "binary": (_binary, 7), "select": (_select, 1.5), "clamp": (_clamp, 1),
    "convert": (_convert, 2.5), "reduce": (_reduce, 3), "scan": (_scan, 1.5), "sort": (_sort, 1),
    "reshape": (_reshape, 1.5), "transpose": (_transpose, 1.5), "broadcast": (_broadcast, 1.5),
    "slice": (_slice, 1.5), "concatenate": (_concatenate, 1), "pad": (_pad, 1), "reverse": (_reverse, 0.7),
    "gather": (_gather, 1), "scatter": (_scatter, 1), "dynamic": (_dynamic, 1), "dot": (_dot, 2),
    "linear": (_linear, 0.5), "conv": (_conv, 0.7), "window": (_window, 1), "statistics": (_statistics, 2),
    "norm": (_norm, 0.8), "random": (_random, 1), "source": (_source, 0.3), "masking": (_masking, 0.8),
    "loss": (_loss, 0.6),
}
