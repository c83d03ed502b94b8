"""Contraction and lookup composites of torch.nn: ``linear matmul einsum embedding``.

All of them reduce to ``dot_general`` (or ``gather``) with explicit reshapes and
broadcasts, since the IR broadcasts nothing implicitly. Attention lives in
``attention.py``, pooling and resampling in ``pooling.py``.

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, evaluate, f32
    >>> b = GraphBuilder()
    >>> a, v = b.input(f32[2, 2]), b.input(f32[2])
    >>> g = b.build([b.einsum(a, v, equation="ij,j->i")])
    >>> evaluate(g, [np.eye(2, dtype=np.float32) * 3, np.array([1, 2], np.float32)])[0].tolist()
    [3.0, 6.0]
"""

from __future__ import annotations

import math
import string
from collections.abc import Sequence
from dataclasses import dataclass

from ..dtypes import ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, DType
from ..errors import TypeRuleError
from ..opdef import Accuracy, AttrKind, AttrSpec, Group, Kind, OpDef
from ..types import Dim, TensorType
from .compose import expand, full_like
from .rules import check_dtype

# What dot_general accepts.
CONTRACTION_DTYPES = FLOAT_DTYPES + (DType.int32, DType.int64)


def _same_dtype(op: str, types: Sequence[TensorType]) -> None:
    for i, t in enumerate(types[1:], start=1):
        if t.dtype != types[0].dtype:
            raise TypeRuleError(op, f"dtype {t.dtype.short} differs from operand 0's {types[0].dtype.short}; "
                                "insert a convert", i)


def broadcast_shapes(op: str, a: Sequence[Dim], b: Sequence[Dim], operand: int = 1) -> tuple[Dim, ...]:
    """NumPy broadcasting of two shapes (right-aligned; sizes equal or one of them 1)."""
    rank = max(len(a), len(b))
    a = (1,) * (rank - len(a)) + tuple(a)
    b = (1,) * (rank - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x != y and 1 not in (x, y):
            raise TypeRuleError(op, f"shapes {list(a)} and {list(b)} do not broadcast", operand)
        out.append(y if x == 1 else x)
    return tuple(out)


def expand_to(b, x, shape: Sequence[Dim]):
    """Broadcast x to ``shape`` right-aligned (NumPy rules); a no-op when the shapes match."""
    shape = tuple(shape)
    if x.shape == shape:
        return x
    return expand(b, x, shape, range(len(shape) - x.rank, len(shape)))


# -- linear ------------------------------------------------------------------------------------


def _linear_infer(types, attrs):
    x, w, bias = types
    check_dtype("linear", x, FLOAT_DTYPES)
    _same_dtype("linear", types)
    if x.rank < 1 or w.rank != 2 or w.shape[1] != x.shape[-1]:
        raise TypeRuleError("linear", f"w must be [out, in] with in = x's last dim; x is {x}, w is {w}", 1)
    if bias.shape != (w.shape[0],):
        raise TypeRuleError("linear", f"bias must be [out] = [{w.shape[0]}], got {bias}", 2)
    return (x.with_shape(x.shape[:-1] + (w.shape[0],)),)


def _linear(b, attrs, x, w, bias):
    y = b.dot_general(x, w, lhs_contracting_dims=(x.rank - 1,), rhs_contracting_dims=(1,),
                      lhs_batch_dims=(), rhs_batch_dims=())
    return b.add(y, expand(b, bias, y.shape, (y.rank - 1,)))


# -- matmul -------------------------------------------------------------------------------------


def _matmul_shapes(a: TensorType, b: TensorType):
    """(a as [..., M, K], b as [..., K, N], batch shape, result shape) under torch.matmul's rules."""
    op = "matmul"
    for i, t in enumerate((a, b)):
        if t.rank == 0:
            raise TypeRuleError(op, f"operands need rank ≥ 1, got {t}", i)
    a_mat = a.shape if a.rank >= 2 else (1,) + a.shape  # a vector is a row (removed again below)
    b_mat = b.shape if b.rank >= 2 else b.shape + (1,)  # a vector is a column
    if a_mat[-1] != b_mat[-2]:
        raise TypeRuleError(op, f"contracted sizes differ: {a} @ {b} ({a_mat[-1]} vs {b_mat[-2]})", 1)
    batch = broadcast_shapes(op, a_mat[:-2], b_mat[:-2])
    out = batch + (a_mat[-2:-1] if a.rank >= 2 else ()) + (b_mat[-1:] if b.rank >= 2 else ())
    return a_mat, b_mat, batch, out


def _matmul_infer(types, attrs):
    a, b = types
    check_dtype("matmul", a, CONTRACTION_DTYPES)
    _same_dtype("matmul", types)
    return (a.with_shape(_matmul_shapes(a, b)[3]),)


def _matmul(b, attrs, x, y):
    x_mat, y_mat, batch, out = _matmul_shapes(x.type, y.type)
    x = b.reshape(x, shape=x_mat) if x.shape != x_mat else x
    y = b.reshape(y, shape=y_mat) if y.shape != y_mat else y
    if y.rank == 2:  # no batch on the right: x's leading dims pass through dot_general as free dims
        z = b.dot_general(x, y, lhs_contracting_dims=(x.rank - 1,), rhs_contracting_dims=(0,),
                          lhs_batch_dims=(), rhs_batch_dims=())
    else:
        n = len(batch)
        x = expand_to(b, x, batch + x_mat[-2:])
        y = expand_to(b, y, batch + y_mat[-2:])
        z = b.dot_general(x, y, lhs_contracting_dims=(n + 1,), rhs_contracting_dims=(n,),
                          lhs_batch_dims=tuple(range(n)), rhs_batch_dims=tuple(range(n)))
    return b.reshape(z, shape=out) if z.shape != out else z


# -- einsum ---------------------------------------------------------------------------------------

_LETTERS = frozenset(string.ascii_letters)


@dataclass(frozen=True)
class _Einsum:
    """A parsed equation: one label list per operand, the output labels, each label's size.

    Ellipsis dims get the labels ``...0``, ``...1``, ... right-aligned across operands, so
    they broadcast like NumPy dims.
    """

    inputs: tuple[tuple[str, ...], ...]
    output: tuple[str, ...]
    sizes: dict[str, Dim]


def _einsum_error(equation: str, message: str) -> TypeRuleError:
    return TypeRuleError("einsum", f"{message} in equation {equation!r}", "equation")


def _split_term(equation: str, term: str) -> tuple[list[str], bool]:
    """Letters of one term and whether it has an ellipsis."""
    has_ellipsis = "..." in term
    letters = term.replace("...", "", 1)
    if term.count("...") > 1 or not set(letters) <= _LETTERS:
        raise _einsum_error(equation, f"term {term!r} must be letters with at most one '...'")
    return list(term.replace("...", ".", 1)), has_ellipsis


def _parse_einsum(equation: str, types: Sequence[TensorType]) -> _Einsum:
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(types):
        raise _einsum_error(equation, f"{len(terms)} input terms for {len(types)} operands")
    split = [_split_term(equation, t) for t in terms]
    ell_ranks = []
    for i, ((chars, has_ell), t) in enumerate(zip(split, types)):
        explicit = len(chars) - has_ell
        if (t.rank < explicit) if has_ell else (t.rank != explicit):
            raise _einsum_error(equation, f"term {terms[i]!r} does not fit operand {i} {t}")
        ell_ranks.append(t.rank - explicit if has_ell else 0)
    n_ell = max(ell_ranks)
    ellipsis = [f"...{p}" for p in range(n_ell)]
    inputs, sizes = [], {}
    for i, ((chars, _), e, t) in enumerate(zip(split, ell_ranks, types)):
        labels = []
        for c in chars:
            labels += ellipsis[n_ell - e:] if c == "." else [c]
        for label, size in zip(labels, t.shape):
            seen = sizes.setdefault(label, size)
            if seen != size and 1 not in (seen, size):
                raise _einsum_error(equation, f"label {label!r} has sizes {seen} and {size} (operand {i})")
            if seen == 1:
                sizes[label] = size
        inputs.append(tuple(labels))
    if arrow:
        chars, has_ell = _split_term(equation, rhs)
        output = [x for c in chars for x in (ellipsis if c == "." else [c])]
        if len(set(output)) != len(output) or not set(output) <= set(sizes):
            raise _einsum_error(equation, f"output {rhs!r} repeats a label or names one no input has")
    else:  # implicit: the broadcast dims, then the letters seen once, in ASCII order
        counts = [x for labels in inputs for x in labels]
        output = ellipsis + sorted(c for c in set(counts) if c in _LETTERS and counts.count(c) == 1)
    return _Einsum(tuple(inputs), tuple(output), sizes)


def _einsum_infer(types, attrs):
    check_dtype("einsum", types[0], CONTRACTION_DTYPES)
    _same_dtype("einsum", types)
    plan = _parse_einsum(attrs["equation"], types)
    return (types[0].with_shape(plan.sizes[x] for x in plan.output),)


def _diagonal(b, x, labels: list[str]):
    """Take the diagonal for each label repeated within one operand ('ii->i')."""
    for j in range(len(labels) - 1, -1, -1):
        i = labels.index(labels[j])
        if i == j:
            continue
        rows = b.iota(dtype=DType.int64, shape=x.shape, dimension=i)
        cols = b.iota(dtype=DType.int64, shape=x.shape, dimension=j)
        zeros = full_like(b, 0, x)
        x = b.reduce_sum(b.select(b.eq(rows, cols), x, zeros), axes=(j,))  # select: no 0 * inf
        labels = labels[:j] + labels[j + 1:]
    return x, labels


def _sum_out(b, x, labels: list[str], needed: set[str]):
    axes = tuple(i for i, x_label in enumerate(labels) if x_label not in needed)
    if not axes:
        return x, labels
    return b.reduce_sum(x, axes=axes), [x_label for x_label in labels if x_label in needed]


def _fit(b, x, labels: Sequence[str], shared: Sequence[str], sizes):
    """Broadcast size-1 dims of shared labels to the label's size (einsum broadcasts)."""
    shape = tuple(sizes[x_label] if x_label in shared else d for x_label, d in zip(labels, x.shape))
    if shape == x.shape:
        return x
    return expand(b, x, shape, range(x.rank))


def _contract(b, sizes, x, x_labels, y, y_labels, later: set[str]):
    shared = [label for label in x_labels if label in y_labels]
    batch = [label for label in shared if label in later]
    summed = [label for label in shared if label not in later]
    x, y = _fit(b, x, x_labels, shared, sizes), _fit(b, y, y_labels, shared, sizes)
    z = b.dot_general(x, y,
                      lhs_contracting_dims=tuple(x_labels.index(s) for s in summed),
                      rhs_contracting_dims=tuple(y_labels.index(s) for s in summed),
                      lhs_batch_dims=tuple(x_labels.index(s) for s in batch),
                      rhs_batch_dims=tuple(y_labels.index(s) for s in batch))
    labels = batch + [s for s in x_labels if s not in shared] + [s for s in y_labels if s not in shared]
    return z, labels


def _einsum(b, attrs, *xs):
    plan = _parse_einsum(attrs["equation"], [x.type for x in xs])
    terms = [_diagonal(b, x, list(labels)) for x, labels in zip(xs, plan.inputs)]
    out = set(plan.output)
    acc, acc_labels = terms[0]
    # Contract left to right; a label is summed as soon as nothing later needs it.
    for i, (y, y_labels) in enumerate(terms[1:], start=1):
        later = out.union(*(set(labels) for _, labels in terms[i + 1:]))
        acc, acc_labels = _sum_out(b, acc, acc_labels, later | set(y_labels))
        y, y_labels = _sum_out(b, y, y_labels, later | set(acc_labels))
        acc, acc_labels = _contract(b, plan.sizes, acc, acc_labels, y, y_labels, later)
    acc, acc_labels = _sum_out(b, acc, acc_labels, out)
    perm = tuple(acc_labels.index(label) for label in plan.output)
    return b.transpose(acc, permutation=perm) if perm != tuple(range(len(perm))) else acc


# -- embedding -----------------------------------------------------------------------------------


def _embedding_infer(types, attrs):
    weight, indices = types
    check_dtype("embedding", indices, INT_DTYPES, 1)
    if weight.rank != 2:
        raise TypeRuleError("embedding", f"weight must be [num_embeddings, dim], got {weight}", 0)
    return (weight.with_shape(indices.shape + (weight.shape[1],)),)


def _embedding(b, attrs, weight, indices):
    n, dim = math.prod(indices.shape), weight.shape[1]
    # gather takes along an axis with indices of x's rank: one index row per embedding column.
    rows = expand(b, b.reshape(indices, shape=(n,)), (n, dim), (0,))
    return b.reshape(b.gather(weight, rows, axis=0), shape=indices.shape + (dim,))


# -- the table ---------------------------------------------------------------------------------------

# name -> (operands, attrs, infer, decompose, dtypes, groups, implementation-defined, doc)
_OPS = {
    "linear": (("x", "w", "b"), (), _linear_infer, _linear, FLOAT_DTYPES, {Group.CONTRACTION}, (),
               "x @ w.T + b: x [..., in], w [out, in], b [out] → [..., out] (a frontend passes zeros "
               "for a missing bias)."),
    "matmul": (("a", "b"), (), _matmul_infer, _matmul, CONTRACTION_DTYPES, {Group.CONTRACTION}, (),
               "torch.matmul: 1-d operands are a row/column (removed from the result), batch dims "
               "broadcast."),
    "einsum": (("*xs",), (AttrSpec("equation", AttrKind.STR, doc="e.g. 'bij,bjk->bik'; '...' broadcasts"),),
               _einsum_infer, _einsum, CONTRACTION_DTYPES, {Group.CONTRACTION}, (),
               "torch.einsum: labels repeated within an operand take its diagonal; size-1 dims "
               "broadcast; without '->' the output is the broadcast dims then the letters seen once "
               "in ASCII order."),
    "embedding": (("weight", "indices"), (), _embedding_infer, _embedding, ALL_DTYPES, {Group.INDEXING},
                  ("out-of-range indices (torch raises)",),
                  "weight [V, D] rows picked by integer indices of any shape → [*indices, D]."),
}

OPS = tuple(
    OpDef(name=name, kind=Kind.COMPOSITE, operands=operands, attrs=attrs, infer=infer, dtypes=dtypes,
          accuracy=Accuracy.COMPOSITE, groups=frozenset(groups), decompose=decompose,
          implementation_defined=impl, doc=doc)
    for name, (operands, attrs, infer, decompose, dtypes, groups, impl, doc) in _OPS.items()
)
