"""Shape and indexing ops as index rewrites: each rule reads its operand at another index.

``rule(writer, node, idx) -> expression`` returns ``node``'s value at ``idx`` by asking
the writer for its operand at a rewritten index (reshape, broadcast_in_dim, transpose,
slice, reverse, pad, concatenate, gather, dynamic slices), so they cost no copies: a
transpose becomes a strided load. ``iota`` computes its value from the index;
``reduce_window`` folds each output element's window in a loop.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...ir.dims import DimExpr
from ...ir.dtypes import DType
from ...ir.graph import Node, Value
from . import elementwise as ew
from .index import Index, delinearize, dim_text, linearize, static_int

if TYPE_CHECKING:
    from .writer import KernelWriter


def _reshape(w: KernelWriter, node: Node, idx: Index) -> str:
    x = node.inputs[0]
    src, dst = x.type.shape, node.outputs[0].type.shape
    if [n for n in src if n != 1] == [n for n in dst if n != 1]:
        it = iter(d for d, n in zip(idx.dims, dst) if n != 1)
        dims = tuple("0" if n == 1 else next(it) for n in src)
        return w.value(x, Index(dims, idx.flat, idx.valid))
    flat = idx.flat if idx.flat is not None else w.let(linearize(idx.dims, dst), "f")
    return w.value(x, Index(delinearize(w, flat, src), flat, idx.valid))


def _broadcast_in_dim(w, node, idx):
    x = node.inputs[0]
    out = node.outputs[0].type.shape
    bdims = node.attrs["broadcast_dimensions"]
    dims = tuple("0" if x.type.shape[i] == 1 else idx.dims[d] for i, d in enumerate(bdims))
    flat = idx.flat if math.prod(x.type.shape) == math.prod(out) else None
    return w.value(x, Index(dims, flat, idx.valid))


def _transpose(w, node, idx):
    perm = node.attrs["permutation"]
    dims = [""] * len(perm)
    for i, p in enumerate(perm):
        dims[p] = idx.dims[i]
    same = list(perm) == sorted(perm)
    return w.value(node.inputs[0], Index(tuple(dims), idx.flat if same else None, idx.valid))


def _slice(w, node, idx):
    a = node.attrs
    dims = []
    for d, start, step in zip(idx.dims, a["start_indices"], a["strides"]):
        e = d if step == 1 else ("0" if d == "0" else f"{d} * {step}")
        dims.append(e if start == 0 else (dim_text(start) if e == "0" else f"({dim_text(start)} + {e})"))
    same = node.inputs[0].type.shape == node.outputs[0].type.shape
    return w.value(node.inputs[0], Index(tuple(dims), idx.flat if same else None, idx.valid))


def _reverse(w, node, idx):
    shape = node.inputs[0].type.shape
    dims = list(idx.dims)
    for d in node.attrs["dimensions"]:
        if isinstance(shape[d], DimExpr) or shape[d] > 1:
            dims[d] = f"({dim_text(shape[d] - 1)} - {dims[d]})"
    return w.value(node.inputs[0], Index(tuple(dims), None, idx.valid))


def _pad(w, node, idx):
    x, pad_value = node.inputs
    a = node.attrs
    fill = w.value(pad_value, Index(()))
    dims, checks = [], []
    out = node.outputs[0].type.shape
    for d, n, m, lo, interior in zip(idx.dims, x.type.shape, out, a["edge_padding_low"], a["interior_padding"]):
        step = interior + 1
        known = static_int(d)
        if known is not None and isinstance(n, int):  # a size-1 result dim: decide statically
            p = known - lo
            if p < 0 or p % step or p // step >= n:
                return fill
            dims.append(str(p // step))
            continue
        p = d if lo == 0 else w.let(f"{d} - {lo}" if lo > 0 else f"{d} + {-lo}", "q")
        if interior:
            checks.append(f"({p} % {step} == 0)")
            p = w.let(f"{p} // {step}", "q")
        if lo > 0:
            checks.append(f"({p} >= 0)")
        if isinstance(m, DimExpr) or isinstance(n, DimExpr) or (m - 1 - lo) // step >= n:
            checks.append(f"({p} < {dim_text(n)})")  # the largest source index may reach past x
        dims.append(p)
    if not checks:
        return w.value(x, Index(tuple(dims), None, idx.valid))
    inside = w.conj(*checks)
    got = w.value(x, Index(tuple(dims), None, w.conj(idx.valid, inside)))
    return w.let(f"tl.where({inside}, {got}, {fill})")


def _concatenate(w, node, idx):
    axis = node.attrs["dimension"]
    d = idx.dims[axis]
    pieces, start = [], 0
    for x in node.inputs:
        n = x.type.shape[axis]
        if n:
            pieces.append((x, start, n))
        start += n
    if not pieces:  # the result is empty: no lane reads it
        return w.const(0, node.outputs[0].dtype)
    known = static_int(d)
    if known is not None:  # a size-1 result dim: one piece holds it
        x, begin, n = next(p for p in pieces if p[1] <= known < p[1] + p[2])
        dims = list(idx.dims)
        dims[axis] = str(known - begin)
        return w.value(x, Index(tuple(dims), None, idx.valid))
    expr = None
    for x, begin, n in reversed(pieces):
        dims = list(idx.dims)
        dims[axis] = d if begin == 0 else f"({d} - {dim_text(begin)})"
        inside = w.conj(f"({d} >= {dim_text(begin)})", f"({d} < {dim_text(begin + n)})")
        got = w.value(x, Index(tuple(dims), None, w.conj(idx.valid, inside)))
        # each choice bound on its own: hundreds of pieces must not nest hundreds deep
        expr = got if expr is None else w.let(f"tl.where({inside}, {got}, {expr})")
    return expr


def _iota(w, node, idx):
    out = node.outputs[0].dtype
    d = idx.dims[node.attrs["dimension"]]
    known = static_int(d)
    return w.let(ew.convert(w, DType.int64, out, f"({d})" if known is None else w.const(known, DType.int64)))


def _gather(w, node, idx):
    x, indices = node.inputs
    axis = node.attrs["axis"]
    n = x.type.shape[axis]
    if n == 0:
        return w.const(0, x.dtype)
    raw = w.index_value(w.value(indices, idx))
    # out-of-range is implementation-defined; clamp like the reference (and never read wild)
    at = w.let(f"tl.minimum(tl.maximum({raw}, 0), {dim_text(n - 1)})", "i")
    dims = list(idx.dims)
    dims[axis] = at
    return w.value(x, Index(tuple(dims), None, idx.valid))


def _clamped_starts(w, starts: Sequence[Value], shape, sizes) -> list[str]:
    out = []
    for s, n, size in zip(starts, shape, sizes):
        raw = w.index_value(w.value(s, Index(())))
        out.append(w.let(f"tl.minimum(tl.maximum({raw}, 0), {dim_text(n - size)})", "i"))
    return out


def _dynamic_slice(w, node, idx):
    x, *starts = node.inputs
    begin = _clamped_starts(w, starts, x.type.shape, node.outputs[0].type.shape)
    dims = tuple(f"({d} + {s})" for d, s in zip(idx.dims, begin))
    return w.value(x, Index(dims, None, idx.valid))


def _dynamic_update_slice(w, node, idx):
    x, update, *starts = node.inputs
    usize = update.type.shape
    begin = _clamped_starts(w, starts, x.type.shape, usize)
    if 0 in usize:
        return w.value(x, idx)
    inside = w.conj(*[c for d, s, n in zip(idx.dims, begin, usize)
                      for c in (f"({d} >= {s})", f"({d} < {s} + {dim_text(n)})")])
    dims = tuple(f"({d} - {s})" for d, s in zip(idx.dims, begin))
    new = w.value(update, Index(dims, None, w.conj(idx.valid, inside)))
    old = w.value(x, idx)
    return w.let(f"tl.where({inside}, {new}, {old})")


def _reduce_window(w, node, idx):
    """One output element folds its window in a loop over the window's flat positions."""
    x = node.inputs[0]
    a = node.attrs
    dtype = x.dtype
    window = a["window_dimensions"]
    is_max = a["kind"] == "max"
    if is_max:
        init = w.const(float("-inf") if dtype.is_float else dtype.iinfo.min, dtype)
    else:
        init = w.const(0, dtype)
    shape = w.domain.block_shape(w.deps_of(" ".join(idx.dims + ((idx.valid,) if idx.valid else ()))))
    acc = w.fresh("acc")
    w.line(f"{acc} = tl.full({shape}, 0, {ew.reg(dtype)}) + {init}")
    w.deps[acc] = w.deps_of(" ".join(idx.dims))
    loop, k = w.fresh("j"), w.fresh("k")
    w.line(f"for {loop} in range({math.prod(window)}):")
    with w.scope():
        w.line(f"{k} = tl.full([], 0, tl.int32) + {loop}")  # a tensor, also in the interpreter
        w.deps[k] = frozenset()
        offs = delinearize(w, k, window, "wk") if math.prod(window) > 1 else ("0",) * len(window)
        dims, checks = [], []
        for d, o, n, s, (lo, _), dil in zip(idx.dims, offs, x.type.shape, a["window_strides"], a["padding"],
                                            a["window_dilations"]):
            if static_int(d) is not None and static_int(o) is not None and isinstance(n, int):  # size-1 dim, window
                e = static_int(d) * s + static_int(o) * dil - lo
                if not 0 <= e < n:
                    return init  # every window position of this element is padding
                dims.append(str(e))
                continue
            e = w.let(f"{d} * {s} + {o} * {dil} - {lo}", "q")
            checks += [f"({e} >= 0)", f"({e} < {dim_text(n)})"]
            dims.append(e)
        inside = w.conj(*checks)
        got = w.value(x, Index(tuple(dims), None, w.conj(idx.valid, inside)))
        term = got if inside is None else f"tl.where({inside}, {got}, {init})"
        if is_max:
            scalar = x.type.with_shape(())
            combine = ew.RULES["max"](w, ew.TritonNodeContext({}, (scalar, scalar), (scalar,), name="max"), [acc, term])
        else:
            combine = f"{acc} + {term}"  # float16/bfloat16 accumulate in float32, rounded once
        w.line(f"{acc} = {combine}")
    return acc if is_max else w.let(ew.round_to(acc, dtype))


INDEX_RULES = {
    "reshape": _reshape, "broadcast_in_dim": _broadcast_in_dim, "transpose": _transpose, "slice": _slice,
    "reverse": _reverse, "pad": _pad, "concatenate": _concatenate, "iota": _iota, "gather": _gather,
    "dynamic_slice": _dynamic_slice, "dynamic_update_slice": _dynamic_update_slice,
    "reduce_window": _reduce_window,
}
