"""Shape primitives: ops that move elements without computing on them.

``reshape broadcast_in_dim transpose slice concatenate pad reverse`` (docs/ir.md, "Shape
ops"). Every op accepts every dtype and is bit-exact. Type rules check each attribute
against the operand's shape. Symbolic dimensions are expressions (ir/dims.py): a result
size is computed from them (``concatenate`` of ``B`` and ``3`` is ``B+3``); a fact that
holds for every size passes, one that fails for every size is an error naming both
expressions, and one that depends on the sizes is required (ir/constraints.py) and
checked when they are bound.

Example::

    >>> from parity.ir import GraphBuilder, f32
    >>> b = GraphBuilder()
    >>> x = b.input(f32[2, 3])
    >>> str(b.transpose(x, permutation=(1, 0)).type)
    'f32[3,2]'
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np

from ..constraints import require
from ..dtypes import ALL_DTYPES, COMPLEX_DTYPES
from ..errors import TypeRuleError
from ..opdef import Accuracy, AttrKind, AttrSpec, Group, Kind, OpDef
from ..types import Dim, TensorType
from .rules import check_axes, dims_differ, is_symbolic

_GROUPS = frozenset({Group.SHAPE, Group.EXACT})


def _check_length(op: str, attr: str, values: Sequence, rank: int) -> None:
    if len(values) != rank:
        raise TypeRuleError(op, f"has {len(values)} entries {list(values)}; the operand has rank {rank}", attr)


def _per_dim(op: str, x: TensorType, attrs, names: Sequence[str]):
    """(i, (x's dim i, attrs[name][i] for each name)), after checking each list has x's rank."""
    for name in names:
        _check_length(op, name, attrs[name], x.rank)
    return enumerate(zip(x.shape, *(attrs[name] for name in names)))


def _fmt(shape: Sequence[Dim]) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]"


# -- reshape ---------------------------------------------------------------------------


def _monomial(count: Dim):
    """(coefficient, {atom: power}) of a one-term element count, else None."""
    if isinstance(count, int):
        return count, Counter()
    if len(count._terms) != 1:
        return None
    mono, coeff = count._terms[0]
    return coeff, Counter(dict(mono))


def _reshape_infer(types, attrs):
    (x,) = types
    shape = attrs["shape"]
    have, want = math.prod(x.shape), math.prod(shape)
    if have == want:
        return (x.with_shape(shape),)
    # Both one term: common factors cancel. With factors left on only one side, the other
    # side's coefficient must be a multiple of this side's (the leftover factors make up
    # the rest); with none left the coefficients must match. Factors are taken as
    # non-zero here. Anything else depends on the sizes: required, checked when bound.
    split_x, split_out = _monomial(have), _monomial(want)
    if split_x is None or split_out is None:
        ok = True
    else:
        (have_k, have_syms), (want_k, want_syms) = split_x, split_out
        left_x, left_out = have_syms - want_syms, want_syms - have_syms
        if not left_x and not left_out:
            ok = have_k == want_k
        elif not left_x:
            ok = want_k == 0 and have_k == 0 or want_k != 0 and have_k % want_k == 0
        elif not left_out:
            ok = have_k == 0 and want_k == 0 or have_k != 0 and want_k % have_k == 0
        else:
            ok = True
    if not ok:
        raise TypeRuleError(
            "reshape",
            f"cannot reshape {x} to {_fmt(shape)}: the element counts differ "
            f"({_count(x.shape)} vs {_count(shape)})",
            "shape",
        )
    require("==", have, want)
    return (x.with_shape(shape),)


def _count(shape: Sequence[Dim]) -> str:
    return str(math.prod(shape))


def _reshape_ref(ctx, x):
    return x.reshape(ctx.out_types[0].shape)


# -- broadcast_in_dim ------------------------------------------------------------------


def _broadcast_infer(types, attrs):
    (x,) = types
    shape, dims = attrs["shape"], attrs["broadcast_dimensions"]
    op = "broadcast_in_dim"
    _check_length(op, "broadcast_dimensions", dims, x.rank)
    for i, d in enumerate(dims):
        if not 0 <= d < len(shape):
            raise TypeRuleError(op, f"entry {i} is {d}, out of range for result rank {len(shape)}",
                                "broadcast_dimensions")
        if i and d <= dims[i - 1]:
            raise TypeRuleError(op, f"{list(dims)} is not strictly increasing", "broadcast_dimensions")
        size, target = x.shape[i], shape[d]
        if size == target or size == 1:
            continue
        # Decided when both are static, or the size can be neither 1 nor the target
        # (B*4 against B*3); otherwise required, checked when the sizes are bound.
        if isinstance(size, int) and isinstance(target, int) or dims_differ(size, target) and dims_differ(size, 1):
            raise TypeRuleError(
                op,
                f"operand dim {i} has size {size}, result dim {d} has size {target}: "
                f"sizes must be equal or the operand's must be 1 (operand {x}, shape {_fmt(shape)})",
                "shape",
            )
        require("broadcast", size, target)
    return (x.with_shape(shape),)


def _broadcast_ref(ctx, x):
    shape = ctx.out_types[0].shape
    dims = ctx.attrs["broadcast_dimensions"]
    view = [1] * len(shape)
    for i, d in enumerate(dims):
        view[d] = x.shape[i]
    return np.broadcast_to(x.reshape(view), shape)


# -- transpose ---------------------------------------------------------------------------


def _transpose_infer(types, attrs):
    (x,) = types
    perm = attrs["permutation"]
    if sorted(perm) != list(range(x.rank)):
        raise TypeRuleError("transpose", f"{list(perm)} is not a permutation of 0..{x.rank - 1} "
                            f"(operand {x})", "permutation")
    return (x.with_shape(x.shape[p] for p in perm),)


def _transpose_ref(ctx, x):
    return np.transpose(x, ctx.attrs["permutation"])


# -- slice -----------------------------------------------------------------------------------


def _slice_infer(types, attrs):
    (x,) = types
    op = "slice"
    out = []
    for i, (dim, start, limit, stride) in _per_dim(op, x, attrs, ("start_indices", "limit_indices", "strides")):
        if stride < 1:
            raise TypeRuleError(op, f"stride {stride} of dim {i} must be >= 1", "strides")
        if start < 0:
            raise TypeRuleError(op, f"start {start} of dim {i} is negative", "start_indices")
        below, beyond = limit - start, limit - dim  # must be >= 0 and <= 0
        if isinstance(below, int) and below < 0:
            raise TypeRuleError(op, f"dim {i}: limit {limit} is below start {start}", "limit_indices")
        if isinstance(beyond, int) and beyond > 0:
            raise TypeRuleError(op, f"dim {i}: limit {limit} exceeds the operand's size {dim} ({x})",
                                "limit_indices")
        if not isinstance(below, int):
            require(">=", limit, start)  # graph_constraints drops what holds for every size
        if not isinstance(beyond, int):
            require(">=", dim, limit)
        out.append((limit - start + stride - 1) // stride)
    return (x.with_shape(out),)


def _slice_ref(ctx, x):
    a = ctx.attrs
    index = tuple(slice(s, lim, st) for s, lim, st in zip(a["start_indices"], a["limit_indices"], a["strides"]))
    return x[index]


# -- concatenate -----------------------------------------------------------------------------


def _concatenate_infer(types, attrs):
    op = "concatenate"
    first = types[0]
    axis = attrs["dimension"]
    if not 0 <= axis < first.rank:
        raise TypeRuleError(op, f"{axis} is out of range for rank {first.rank} (operand 0 is {first})", "dimension")
    shape = list(first.shape)
    for i, t in enumerate(types[1:], start=1):
        if t.dtype != first.dtype:
            raise TypeRuleError(op, f"dtype {t.dtype.short} differs from operand 0's {first.dtype.short}", i)
        if t.rank != first.rank:
            raise TypeRuleError(op, f"rank {t.rank} ({t}) differs from operand 0's rank {first.rank} ({first})", i)
        for d, (a, b) in enumerate(zip(shape, t.shape)):
            if d != axis:
                shape[d] = _merge_dim(op, a, b, i, f"dim {d} of {t} differs from operand 0's {first}")
    shape[axis] = sum(t.shape[axis] for t in types)
    return (first.with_shape(shape),)


def _merge_dim(op: str, a: Dim, b: Dim, operand: int, message: str) -> Dim:
    """Two dims that must be equal: equal or provably different ones are decided (the
    message gets both); otherwise equality is required at run time, the static one kept."""
    if a == b:
        return a
    if dims_differ(a, b):
        raise TypeRuleError(op, f"{message} (expected {a}, got {b})" if is_symbolic(a) or is_symbolic(b)
                            else message, operand)
    require("==", a, b)
    return a if isinstance(a, int) else b if isinstance(b, int) else a


def _concatenate_ref(ctx, *xs):
    return np.concatenate(xs, axis=ctx.attrs["dimension"])


# -- pad -------------------------------------------------------------------------------------


_PAD_ATTRS = ("edge_padding_low", "edge_padding_high", "interior_padding")


def _pad_infer(types, attrs):
    x, value = types
    op = "pad"
    if value.rank != 0 or value.dtype != x.dtype:
        raise TypeRuleError(op, f"padding_value must be a rank-0 {x.dtype.short}, got {value}", 1)
    out = []
    for i, (dim, lo, hi, inner) in _per_dim(op, x, attrs, _PAD_ATTRS):
        if inner < 0:
            raise TypeRuleError(op, f"interior padding {inner} of dim {i} is negative", "interior_padding")
        if is_symbolic(dim):
            if inner:
                require(">=", dim, 1)  # (dim - 1) gaps, as below, only when dim is not 0
            out.append(lo + dim + (dim - 1) * inner + hi)
            continue
        size = lo + dim + max(dim - 1, 0) * inner + hi
        if size < 0:
            raise TypeRuleError(op, f"dim {i} of size {dim} would have size {size} after padding "
                                f"low {lo}, high {hi}, interior {inner} (negative padding crops too much)",
                                "edge_padding_low")
        out.append(size)
    return (x.with_shape(out),)


def _pad_ref(ctx, x, value):
    a = ctx.attrs
    # Interior first: the elements land every (inner + 1) slots of a value-filled array.
    spread = tuple(max(d - 1, 0) * inner + d for d, inner in zip(x.shape, a["interior_padding"]))
    full = np.full(spread, value, dtype=x.dtype)
    full[tuple(slice(None, None, inner + 1) for inner in a["interior_padding"])] = x
    # Then the edges: positive amounts pad with the value, negative ones crop.
    grown = np.pad(full, [(max(lo, 0), max(hi, 0)) for lo, hi in zip(a["edge_padding_low"], a["edge_padding_high"])],
                   constant_values=value)
    crop = tuple(slice(max(-lo, 0), n - max(-hi, 0))
                 for n, lo, hi in zip(grown.shape, a["edge_padding_low"], a["edge_padding_high"]))
    return grown[crop]


# -- reverse ---------------------------------------------------------------------------------


def _reverse_infer(types, attrs):
    (x,) = types
    check_axes("reverse", attrs["dimensions"], x.rank, "dimensions")
    return (x,)


def _reverse_ref(ctx, x):
    return np.flip(x, axis=ctx.attrs["dimensions"])


def _ints(name: str, doc: str) -> AttrSpec:
    return AttrSpec(name, AttrKind.INTS, doc=doc)


# name -> (operands, attributes, type rule, reference, doc)
_SHAPE_OPS = {
    "reshape": (("x",), (AttrSpec("shape", AttrKind.SHAPE, doc="the result shape"),),
                _reshape_infer, _reshape_ref, "Row-major reshape; element counts must match."),
    "broadcast_in_dim": (
        ("x",),
        (AttrSpec("shape", AttrKind.SHAPE, doc="the result shape"),
         _ints("broadcast_dimensions", "result dim of each operand dim, strictly increasing")),
        _broadcast_infer, _broadcast_ref,
        "Operand dim i becomes result dim broadcast_dimensions[i]; sizes equal or 1."),
    "transpose": (("x",), (_ints("permutation", "result dim i is operand dim permutation[i]"),),
                  _transpose_infer, _transpose_ref, "Permute the dims."),
    "slice": (
        ("x",),
        (_ints("start_indices", "first index kept, per dim"),
         AttrSpec("limit_indices", AttrKind.SHAPE,
                  doc="one past the last index, per dim; a symbol keeps that symbolic dim whole"),
         _ints("strides", "step per dim, >= 1")),
        _slice_infer, _slice_ref, "Static strided slice: 0 <= start <= limit <= dim."),
    "concatenate": (("*inputs",), (AttrSpec("dimension", AttrKind.INT, doc="the axis to join along"),),
                    _concatenate_infer, _concatenate_ref,
                    "Join operands of one dtype along `dimension`; other dims must match."),
    "pad": (
        ("x", "padding_value"),
        (_ints("edge_padding_low", "added before each dim; negative crops"),
         _ints("edge_padding_high", "added after each dim; negative crops"),
         _ints("interior_padding", "inserted between elements of each dim, >= 0")),
        _pad_infer, _pad_ref, "Pad with a rank-0 value: edges (negative crops) and interior."),
    "reverse": (("x",), (_ints("dimensions", "the dims to flip"),), _reverse_infer, _reverse_ref,
                "Flip the listed dims."),
}


def _fresh(reference):
    """Copy the result: NumPy returns views (read-only for broadcast_to) that would alias the inputs."""

    def fresh(ctx, *arrays):
        return np.array(reference(ctx, *arrays), copy=True)

    fresh.__name__ = reference.__name__
    return fresh


def _shape_op(name, operands, attrs, infer, reference, doc) -> OpDef:
    return OpDef(
        name=name,
        kind=Kind.PRIMITIVE,
        operands=operands,
        attrs=attrs,
        infer=infer,
        dtypes=ALL_DTYPES + COMPLEX_DTYPES,
        accuracy=Accuracy.EXACT,
        groups=_GROUPS,
        reference=_fresh(reference),
        doc=doc,
    )


OPS = tuple(_shape_op(name, *row) for name, row in _SHAPE_OPS.items())
