"""Indexing primitives: gather, scatter, dynamic_slice, dynamic_update_slice.

``gather``/``scatter`` take and put elements along one axis (``np.take_along_axis`` and
its inverse). Out-of-range gather/scatter indices are implementation-defined; the
reference clamps them to ``[0, dim - 1]`` so that it is deterministic. Dynamic slice
starts are fully defined: clamped to ``[0, dim - size]`` (docs/ir.md, "Indexing").

Duplicate scatter indices: the reducing modes (``add``, ``mul``, ``max``, ``min``) combine
every update written to one element, in an unspecified order (``add``/``mul`` on floats
round accordingly; ints wrap); ``max``/``min`` propagate NaN. With ``include_self=False``
an element that receives at least one update starts from the reduction's identity
instead of its value in x. For ``replace`` the element takes one of its updates, and
which one is implementation-defined (conformance writes each element at most once).
The torch ops (``index_put``, ``scatter_reduce`` with ``mean``, ``index_copy``, ...) are
translations onto this one op (frontend/aten/indexing.py).

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, evaluate, f32, i64
    >>> b = GraphBuilder()
    >>> x, idx = b.input(f32[3]), b.input(i64[2])
    >>> g = b.build([b.gather(x, idx, axis=0)])
    >>> evaluate(g, [np.array([1, 2, 3], np.float32), np.array([2, 0])])[0].tolist()
    [3.0, 1.0]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..dtypes import ALL_DTYPES, INT_DTYPES
from ..errors import TypeRuleError
from ..opdef import Accuracy, AttrKind, AttrSpec, Group, Kind, OpDef
from ..types import Dim, TensorType
from .reduction import highest, lowest
from .rules import check_axis, check_dtype, check_scalar_int, is_symbolic

_OUT_OF_RANGE = "out-of-range indices (the reference clamps them to [0, dim - 1])"


def _static_gt(a: Dim, b: Dim) -> bool:
    """a > b, where known statically (a symbol is checked when bound)."""
    return isinstance(a, int) and isinstance(b, int) and a > b


def _check_indices(op: str, x: TensorType, indices: TensorType, axis: int) -> None:
    """Indices of gather/scatter: integers of x's rank; dims other than `axis` fit in x's."""
    check_dtype(op, indices, INT_DTYPES, 1)
    check_axis(op, axis, x.rank)
    if indices.rank != x.rank:
        raise TypeRuleError(op, f"indices {indices} must have the rank of x {x}", 1)
    for d, (size, limit) in enumerate(zip(indices.shape, x.shape)):
        if d != axis and _static_gt(size, limit):
            raise TypeRuleError(op, f"dim {d} of indices {indices} exceeds x's {x}", 1)


def _gather_infer(types, attrs):
    x, indices = types
    _check_indices("gather", x, indices, attrs["axis"])
    return (indices.with_dtype(x.dtype),)


def _full_index(x_shape: Sequence[int], indices: np.ndarray, axis: int) -> tuple[np.ndarray, ...]:
    """Index arrays addressing x at ``indices`` along ``axis`` and at their own position elsewhere.

    Out-of-range indices are clamped (implementation-defined; this keeps the reference
    deterministic). The caller handles an empty axis, which has nothing to clamp to.
    """
    grid = list(np.indices(indices.shape, sparse=True))
    grid[axis] = np.clip(indices.astype(np.int64), 0, x_shape[axis] - 1)
    return tuple(grid)


def _gather_ref(ctx, x, indices):
    axis = ctx.attrs["axis"]
    if x.shape[axis] == 0:  # every index is out of range: zeros, as good as any value
        return np.zeros(indices.shape, dtype=x.dtype)
    return x[_full_index(x.shape, indices, axis)]


def _scatter_infer(types, attrs):
    x, indices, updates = types
    _check_indices("scatter", x, indices, attrs["axis"])
    if updates.dtype != x.dtype:
        raise TypeRuleError("scatter", f"updates dtype {updates.dtype.short} differs from x's {x.dtype.short}", 2)
    if updates.shape != indices.shape:
        raise TypeRuleError("scatter", f"updates {updates} must have the shape of indices {indices}", 2)
    reduce = attrs["reduce"]
    if reduce != "replace" and x.dtype.is_bool:
        raise TypeRuleError("scatter", f"reduce={reduce!r} does not take bool; use 'replace' or convert", "reduce")
    if reduce == "replace" and not attrs["include_self"]:
        raise TypeRuleError("scatter", "include_self=False needs a reducing mode (add, mul, max, min); "
                            "'replace' overwrites x anyway", "include_self")
    return (x,)


# reduce mode -> (NumPy ufunc, the identity a written element starts from without include_self)
SCATTER_REDUCERS = {
    "add": (np.add, lambda dtype: 0),
    "mul": (np.multiply, lambda dtype: 1),
    "max": (np.maximum, lowest),  # np.maximum/minimum propagate NaN, as the IR's max/min do
    "min": (np.minimum, highest),
}


def scatter_identity(reduce: str, dtype):
    """The value an element written by a ``reduce`` scatter starts from when include_self is False
    (0, 1, the dtype's lowest for max, its highest for min). Backends build their rule from it."""
    return SCATTER_REDUCERS[reduce][1](dtype)


def _scatter_ref(ctx, x, indices, updates):
    axis, reduce = ctx.attrs["axis"], ctx.attrs["reduce"]
    out = x.copy()
    if x.shape[axis] == 0 or updates.size == 0:  # nowhere to write, or nothing to write
        return out
    where = _full_index(x.shape, indices, axis)
    if reduce == "replace":
        out[where] = updates  # duplicates: NumPy keeps one (implementation-defined)
        return out
    ufunc = SCATTER_REDUCERS[reduce][0]
    if not ctx.attrs["include_self"]:
        out[where] = scatter_identity(reduce, ctx.in_types[0].dtype)  # every written element starts from the identity
    with np.errstate(all="ignore"):  # inf + -inf, 0 * inf: NaN by IEEE rules
        ufunc.at(out, where, updates)  # unbuffered: duplicate indices all combine; ints wrap
    return out


def _check_starts(op: str, types: Sequence[TensorType], rank: int, first: int) -> None:
    """One rank-0 integer start per dim of x, all of one dtype (no implicit promotion)."""
    starts = types[first:]
    if len(starts) != rank:
        raise TypeRuleError(op, f"takes one start index per dim of x (rank {rank}), got {len(starts)}", first)
    for i, t in enumerate(starts, start=first):
        check_scalar_int(op, t, i)
        if t.dtype != starts[0].dtype:
            raise TypeRuleError(op, f"start dtype {t.dtype.short} differs from operand {first}'s "
                                f"{starts[0].dtype.short}; insert a convert", i)


def _dynamic_slice_infer(types, attrs):
    op = "dynamic_slice"
    x = types[0]
    sizes = attrs["slice_sizes"]
    _check_starts(op, types, x.rank, 1)
    if len(sizes) != x.rank:
        raise TypeRuleError(op, f"has {len(sizes)} entries {list(sizes)}; x has rank {x.rank}", "slice_sizes")
    for d, (size, dim) in enumerate(zip(sizes, x.shape)):
        if is_symbolic(size) and size != dim:
            raise TypeRuleError(op, f"dim {d}: a symbolic size ({size}) must be x's whole dim ({dim})",
                                "slice_sizes")
        if isinstance(size, int) and (size < 0 or _static_gt(size, dim)):
            raise TypeRuleError(op, f"dim {d}: size {size} is not in [0, {dim}] (x is {x})", "slice_sizes")
    return (x.with_shape(sizes),)


def _clamped_window(shape: Sequence[int], sizes: Sequence[int], starts) -> tuple[slice, ...]:
    """The window [start, start + size) per dim, start clamped to [0, dim - size]."""
    window = []
    for dim, size, start in zip(shape, sizes, starts):
        begin = min(max(int(start), 0), dim - size)
        window.append(slice(begin, begin + size))
    return tuple(window)


def _dynamic_slice_ref(ctx, x, *starts):
    return x[_clamped_window(x.shape, ctx.out_types[0].shape, starts)].copy()


def _dynamic_update_slice_infer(types, attrs):
    op = "dynamic_update_slice"
    if len(types) < 2:
        raise TypeRuleError(op, "takes x, update and one start per dim of x; got only x", 0)
    x, update = types[:2]
    if update.dtype != x.dtype:
        raise TypeRuleError(op, f"update dtype {update.dtype.short} differs from x's {x.dtype.short}", 1)
    if update.rank != x.rank:
        raise TypeRuleError(op, f"update {update} must have the rank of x {x}", 1)
    for d, (size, dim) in enumerate(zip(update.shape, x.shape)):
        if _static_gt(size, dim):
            raise TypeRuleError(op, f"dim {d} of update {update} exceeds x's {x}", 1)
    _check_starts(op, types, x.rank, 2)
    return (x,)


def _dynamic_update_slice_ref(ctx, x, update, *starts):
    out = x.copy()
    out[_clamped_window(x.shape, update.shape, starts)] = update
    return out


_AXIS = AttrSpec("axis", AttrKind.INT, doc="the axis the indices select along")
_EXACT = (Accuracy.EXACT, frozenset({Group.INDEXING, Group.EXACT}))
_SELECTS = (Accuracy.EXACT, frozenset({Group.INDEXING, Group.EXACT, Group.SELECTS}))

# name -> (operands, attributes, type rule, reference, (accuracy, groups), implementation-defined, doc)
_INDEXING_OPS = {
    "gather": (("x", "indices"), (_AXIS,), _gather_infer, _gather_ref, _SELECTS, (_OUT_OF_RANGE,),
               "Take along `axis`: out[..i..] = x[..indices[..i..]..]; result has indices' shape."),
    # 'add'/'mul' on floats combine duplicates in some order (accumulation bound); 'replace',
    # 'max', 'min' and integer modes are exact (conformance/bounds.py holds them to bit-exact).
    "scatter": (("x", "indices", "updates"),
                (_AXIS, AttrSpec("reduce", AttrKind.STR, choices=("replace", "add", "mul", "max", "min"),
                                 doc="'replace' overwrites; the others combine every update (duplicates too)"),
                 AttrSpec("include_self", AttrKind.BOOL, default=True,
                          doc="False: a written element starts from the identity of `reduce`, not x")),
                _scatter_infer, _scatter_ref, (Accuracy.ACCUMULATION, frozenset({Group.INDEXING})),
                (_OUT_OF_RANGE, "which of several 'replace' updates to one element wins",
                 "the order duplicate updates combine in ('add'/'mul' round accordingly)",
                 "for 'max'/'min', which zero wins when -0.0 and 0.0 compete"),
                "Inverse of gather: x with updates put (replace) or combined (add, mul, max, min) at indices "
                "along `axis`."),
    "dynamic_slice": (("*operands",), (AttrSpec("slice_sizes", AttrKind.SHAPE, doc="the window size per dim"),),
                      _dynamic_slice_infer, _dynamic_slice_ref, _SELECTS, (),
                      "dynamic_slice(x, *starts): window of `slice_sizes`; starts clamped to [0, dim - size]."),
    "dynamic_update_slice": (("*operands",), (), _dynamic_update_slice_infer, _dynamic_update_slice_ref, _EXACT, (),
                             "dynamic_update_slice(x, update, *starts): update written at the clamped starts."),
}


def _indexing_op(name, operands, attrs, infer, reference, accuracy_groups, implementation_defined, doc) -> OpDef:
    accuracy, groups = accuracy_groups
    return OpDef(
        name=name,
        kind=Kind.PRIMITIVE,
        operands=operands,
        attrs=attrs,
        infer=infer,
        dtypes=ALL_DTYPES,
        accuracy=accuracy,
        groups=groups,
        reference=reference,
        doc=doc,
        implementation_defined=implementation_defined,
    )


OPS = tuple(_indexing_op(name, *row) for name, row in _INDEXING_OPS.items())
