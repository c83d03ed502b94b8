"""Writing one kernel body: every value is emitted *at an index*.

The writer asks for "value v at index I" (:meth:`KernelWriter.value`), where ``I`` holds
one Triton index expression per dimension of v. Elementwise ops ask for their operands
at the same index; shape ops (reshape, broadcast_in_dim, transpose, slice, reverse, pad,
concatenate) and indexing ops (gather, dynamic_slice, dynamic_update_slice, iota) only
rewrite the index, so they cost no copies: a transpose becomes a strided load. Values are
memoized per (value, index), so a value read twice at one index is computed once.

What cannot be computed at an arbitrary index — a reduction outside a matching row
kernel, a dot_general outside its own kernel — is *demanded*: loaded from a buffer that
an earlier kernel writes. The scheduler (schedule.py) turns demands into kernels.

Each kernel kind (kernels.py) supplies a :class:`Domain`: its index variables, their
masks and block shapes, and what it computes in place (the row kernel's reductions, the
dot kernel's accumulator).
"""

from __future__ import annotations

import contextlib
import math
import re
import struct
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from ...ir.dtypes import DType
from ...ir.graph import Node, Value
from ...ir.opdef import Group, Kind
from ...ir.ops import OP_TABLE
from . import elementwise as ew

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Index rules (slice, pad, reverse, reshape...) wrap their operand's index expression;
# past this nesting depth the expression is bound to a variable. Python's parser stops at
# 200 nested parentheses ("too many nested parentheses": MobileNetV2's backward).
MAX_NESTING = 24


def nesting(expr: str) -> int:
    """The deepest parenthesis nesting in ``expr``."""
    depth = deepest = 0
    for ch in expr:
        if ch in "([":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in ")]":
            depth -= 1
    return deepest


@dataclass(frozen=True)
class Index:
    """Where a value is read: one expression per dim, the row-major flat offset if known,
    and the lanes that hold real data (``valid``; None: every lane of the domain)."""

    dims: tuple[str, ...]
    flat: str | None = None
    valid: str | None = None


class Domain:
    """A kernel's iteration space; subclasses in kernels.py."""

    def mask(self, dep: str) -> str:
        raise NotImplementedError

    def block_shape(self, deps: frozenset[str]) -> str:
        raise NotImplementedError

    def in_place(self, w: KernelWriter, node: Node, idx: Index) -> str | None:
        """The expression of a reduction/dot value this kernel computes itself, else None."""
        return None


class KernelWriter:
    """The body of one kernel, built by emitting values at indices."""

    def __init__(self, domain: Domain, *, cuda: bool, buffers, splat):
        self.domain = domain
        self.cuda = cuda
        self.buffers = buffers  # value -> True if read from memory (inputs, extern results, ...)
        self.splat = splat  # constant value -> scalar, or None for a constant buffer
        self.prologue: list[str] = []
        self.lines: list[str] = []
        self.indent = 1
        self.deps: dict[str, frozenset[str]] = {}
        self.memo: list[dict] = [{}]
        self._bound: list[dict[str, str]] = [{}]  # per scope: deep index expression -> its variable
        self.params: dict[object, str] = {}  # Value -> pointer parameter name
        self.demands: set[Value] = set()
        self.emitted: Counter[Value] = Counter()
        self._consts: dict[tuple, str] = {}
        self._n = 0

    # -- text -------------------------------------------------------------------------

    def fresh(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}{self._n}"

    def line(self, text: str) -> None:
        self.lines.append("    " * self.indent + text)

    def let(self, expr: str, prefix: str = "t", deps: frozenset[str] | None = None) -> str:
        """Bind ``expr`` to a fresh variable and record what it depends on."""
        if _IDENT.fullmatch(expr) and expr in self.deps:
            return expr
        name = self.fresh(prefix)
        self.line(f"{name} = {expr}")
        self.deps[name] = self.deps_of(expr) if deps is None else deps
        return name

    def declare(self, name: str, deps: Sequence[str]) -> None:
        """Register an index variable the kernel skeleton defines (``xoff``, ``r0``, ...)."""
        self.deps[name] = frozenset(deps)

    def axis(self, name: str, expr: str, dep: str, size: int, mask: str) -> None:
        """Define a domain index variable and its mask (``mask = name < size``)."""
        self.line(f"{name} = {expr}")
        self.line(f"{mask} = {name} < {size}")
        self.declare(name, dep)
        self.declare(mask, dep)

    def deps_of(self, expr: str) -> frozenset[str]:
        found: set[str] = set()
        for ident in _IDENT.findall(expr):
            found |= self.deps.get(ident, frozenset())
        return frozenset(found)

    def domain_mask(self, *exprs: str | None) -> list[str]:
        """The domain masks of every index variable the expressions depend on."""
        deps: set[str] = set()
        for e in exprs:
            if e is not None:
                deps |= self.deps_of(e)
        return [self.domain.mask(d) for d in sorted(deps)]

    def all_of(self, parts) -> str | None:
        """The conjunction of bool tensors (None: no condition).

        Triton's interpreter mis-types ``&`` between a 0-d bool and a block of bools, so
        such mixes go through int8.
        """
        parts = [p for p in parts if p is not None]
        if len(parts) <= 1:
            return parts[0] if parts else None
        scalar = [not self.deps_of(p) for p in parts]
        if any(scalar) and not all(scalar):
            return "(" + " & ".join(f"({p}).to(tl.int8)" for p in parts) + " != 0)"
        return " & ".join(f"({p})" if " " in p else p for p in parts)

    @contextlib.contextmanager
    def scope(self) -> Iterator[None]:
        """A nested block (a loop body): its memo entries do not outlive it."""
        self.indent += 1
        self.memo.append({})
        self._bound.append({})
        try:
            yield
        finally:
            self.memo.pop()
            self._bound.pop()
            self.indent -= 1

    def const(self, value, dtype: DType) -> str:
        """A scalar constant in ``dtype``'s register type, bit-exact (NaN payloads, -0.0)."""
        rdt = ew.reg(dtype)
        if dtype.is_float:
            rounded = np.asarray(value, dtype=np.float64).astype(dtype.numpy).astype(np.float64)
            if rdt == "tl.float64":
                bits = struct.unpack("<q", struct.pack("<d", float(rounded)))[0]
                key = ("f64", bits)
                expr = f"tl.full([], {bits}, tl.int64).to(tl.float64, bitcast=True)"
            else:
                bits = struct.unpack("<i", struct.pack("<f", float(rounded)))[0]
                key = ("f32", bits)
                expr = f"tl.full([], {bits}, tl.int32).to(tl.float32, bitcast=True)"
        else:
            v = int(bool(value)) if dtype.is_bool else int(value)
            key = (rdt, v)
            expr = f"tl.full([], {v}, {rdt})"
        name = self._consts.get(key)
        if name is None:
            name = self.fresh("c")
            self._consts[key] = name
            self.prologue.append(f"    {name} = {expr}")
            self.deps[name] = frozenset()
        return name

    # -- values -----------------------------------------------------------------------

    def value(self, v: Value, idx: Index) -> str:
        """The expression of ``v`` at ``idx`` (a variable name), emitting code as needed."""
        idx = Index(tuple(self.bounded(fold(d)) for d in idx.dims), self.bounded(idx.flat), self.bounded(idx.valid))
        key = (v, idx.dims, idx.valid)
        for layer in reversed(self.memo):
            if key in layer:
                return layer[key]
        name = self._emit(v, idx)
        self.memo[-1][key] = name
        self.emitted[v] += 1
        return name

    def bounded(self, expr: str | None) -> str | None:
        """``expr``, or a variable bound to it when it nests deeper than :data:`MAX_NESTING`."""
        if expr is None or nesting(expr) <= MAX_NESTING:
            return expr
        for layer in reversed(self._bound):
            if expr in layer:
                return layer[expr]
        name = self.let(expr, "i")
        self._bound[-1][expr] = name
        return name

    def seed(self, v: Value, idx: Index, name: str) -> None:
        """Make ``v`` at ``idx`` known as ``name`` (the dot kernel's accumulator)."""
        self.memo[-1][(v, idx.dims, idx.valid)] = name

    def _emit(self, v: Value, idx: Index) -> str:
        node = v.producer
        if node is None:
            return self.load(v, idx)
        if v in self.buffers or (node.op == "constant" and self.splat(v) is None):
            self.demands.add(v)  # written by an extern call, another kernel, or a constant buffer
            return self.load(v, idx)
        if node.op == "constant":
            return self.const(self.splat(v), v.dtype)
        rule = INDEX_RULES.get(node.op)
        if rule is not None:
            return rule(self, node, idx)
        if node.op in ew.RULES or node.op in ("convert", "bitcast_convert"):
            return self._elementwise(node, idx)
        expr = self.domain.in_place(self, node, idx)
        if expr is not None:
            return expr
        self.demands.add(v)  # computed by an earlier kernel
        return self.load(v, idx)

    def _elementwise(self, node: Node, idx: Index) -> str:
        args = [self.value(v, idx) for v in node.inputs]
        deps = [self.deps_of(a) for a in args]
        if node.op in ew.MIXED_MASKS and any(deps) and not all(deps):
            shape = self.domain.block_shape(frozenset().union(*deps))
            args = [a if d else self.let(f"tl.broadcast_to({a}, {shape})", deps=frozenset().union(*deps))
                    for a, d in zip(args, deps)]
        out = node.outputs[0].dtype
        src = node.inputs[0].dtype
        if node.op == "convert":
            return self.let(ew.convert(self, src, out, args[0]))
        if node.op == "bitcast_convert":
            return self.let(ew.bitcast(src, out, args[0]))
        in_dtypes = tuple(v.dtype for v in node.inputs)
        expr = ew.RULES[node.op](self, ew.Op(node.op, in_dtypes, out, node.attrs), args)
        if out.is_float and node.op not in ew.NO_ROUNDING:
            expr = ew.round_to(expr, out)
        return self.let(expr)

    # -- memory -----------------------------------------------------------------------

    def param(self, v: Value) -> str:
        name = self.params.get(v)
        if name is None:
            name = f"p{len(self.params)}"
            self.params[v] = name
        return name

    def offset(self, shape: Sequence[int], idx: Index) -> str:
        if idx.flat is not None:
            return idx.flat
        return linearize(idx.dims, shape)

    def load(self, v: Value, idx: Index) -> str:
        ptr = self.param(v)
        off = self.offset(v.type.shape, idx)
        mask = self.all_of(self.domain_mask(off) + [idx.valid])
        wider = self.deps_of(mask or "") - self.deps_of(off)
        if wider:  # Triton wants the pointer block at least as wide as the mask
            off = f"{off} + tl.zeros({self.domain.block_shape(self.deps_of(off) | wider)}, tl.int32)"
        addr = f"{ptr} + {off}" if off != "0" else ptr
        expr = f"tl.load({addr}, mask={mask}, other=0)" if mask else f"tl.load({addr})"
        expr = ew.load_to_reg(expr, v.dtype)
        return self.let(expr, "v", deps=self.deps_of(off) | self.deps_of(idx.valid or ""))

    def store(self, v: Value, idx: Index, expr: str, ptr: str) -> None:
        off = self.offset(v.type.shape, idx)
        mask = self.all_of(self.domain_mask(off, expr))
        wider = self.deps_of(expr) - self.deps_of(off)
        if wider:  # size-1 dims drop out of the offset: Triton wants the pointer as wide as the value
            off = f"{off} + tl.zeros({self.domain.block_shape(self.deps_of(off) | wider)}, tl.int32)"
        value = ew.reg_to_store(expr, v.dtype)
        addr = f"{ptr} + {off}" if off != "0" else ptr
        self.line(f"tl.store({addr}, {value}, mask={mask})" if mask else f"tl.store({addr}, {value})")

    def index_value(self, expr: str) -> str:
        """A data-dependent index (an int tensor of any width) as int64."""
        return self.let(f"({expr}).to(tl.int64)", "i")

    def conj(self, *parts: str | None) -> str | None:
        """The conjunction of conditions, bound to a variable."""
        expr = self.all_of(parts)
        return None if expr is None else self.let(expr, "m")


# -- index arithmetic ----------------------------------------------------------------------

def strides(shape: Sequence[int]) -> list[int]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return out[::-1]


def linearize(dims: Sequence[str], shape: Sequence[int]) -> str:
    terms = []
    for d, n, s in zip(dims, shape, strides(shape)):
        if n == 1 or d == "0":
            continue
        terms.append(d if s == 1 else f"{d} * {s}")
    return " + ".join(terms) if terms else "0"


def delinearize(w: KernelWriter, flat: str, shape: Sequence[int], prefix: str = "d") -> tuple[str, ...]:
    """Per-dim index variables of a row-major ``flat`` offset into ``shape``."""
    dims = []
    first = True
    for n, s in zip(shape, strides(shape)):
        if n == 1:
            dims.append("0")
            continue
        expr = flat if s == 1 else f"({flat} // {s})"
        if not first:
            expr = f"{expr} % {n}"
        first = False
        dims.append(w.let(expr, prefix))
    return tuple(dims)


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
        dims.append(e if start == 0 else (str(start) if e == "0" else f"({start} + {e})"))
    same = node.inputs[0].type.shape == node.outputs[0].type.shape
    return w.value(node.inputs[0], Index(tuple(dims), idx.flat if same else None, idx.valid))


def _reverse(w, node, idx):
    shape = node.inputs[0].type.shape
    dims = list(idx.dims)
    for d in node.attrs["dimensions"]:
        if shape[d] > 1:
            dims[d] = f"({shape[d] - 1} - {dims[d]})"
    return w.value(node.inputs[0], Index(tuple(dims), None, idx.valid))


def static_int(expr: str) -> int | None:
    """The value of an index expression that is a literal integer, else None."""
    return int(expr) if re.fullmatch(r"-?\d+", expr) else None


_LITERAL = re.compile(r"[-+*/%() \d]+")


def fold(expr: str) -> str:
    """An index expression without variables as its integer literal (``(4 - 1)`` → ``3``):
    Triton would see a Python int, not a tensor, and index rules test literals statically."""
    if static_int(expr) is None and _LITERAL.fullmatch(expr):
        return str(eval(expr))  # noqa: S307 - digits and arithmetic only (checked above)
    return expr


def _pad(w, node, idx):
    x, pad_value = node.inputs
    a = node.attrs
    fill = w.value(pad_value, Index(()))
    dims, checks = [], []
    out = node.outputs[0].type.shape
    for d, n, m, lo, interior in zip(idx.dims, x.type.shape, out, a["edge_padding_low"], a["interior_padding"]):
        step = interior + 1
        known = static_int(d)
        if known is not None:  # a size-1 result dim: decide statically
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
        if (m - 1 - lo) // step >= n:  # the largest source index reaches past x
            checks.append(f"({p} < {n})")
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
        dims[axis] = d if begin == 0 else f"({d} - {begin})"
        inside = w.conj(f"({d} >= {begin})", f"({d} < {begin + n})")
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
    at = w.let(f"tl.minimum(tl.maximum({raw}, 0), {n - 1})", "i")
    dims = list(idx.dims)
    dims[axis] = at
    return w.value(x, Index(tuple(dims), None, idx.valid))


def _clamped_starts(w, starts: Sequence[Value], shape, sizes) -> list[str]:
    out = []
    for s, n, size in zip(starts, shape, sizes):
        raw = w.index_value(w.value(s, Index(())))
        out.append(w.let(f"tl.minimum(tl.maximum({raw}, 0), {n - size})", "i"))
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
    inside = w.conj(*[c for d, s, n in zip(idx.dims, begin, usize) for c in (f"({d} >= {s})", f"({d} < {s} + {n})")])
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
            if static_int(d) is not None and static_int(o) is not None:  # size-1 dim and window
                e = static_int(d) * s + static_int(o) * dil - lo
                if not 0 <= e < n:
                    return init  # every window position of this element is padding
                dims.append(str(e))
                continue
            e = w.let(f"{d} * {s} + {o} * {dil} - {lo}", "q")
            checks += [f"({e} >= 0)", f"({e} < {n})"]
            dims.append(e)
        inside = w.conj(*checks)
        got = w.value(x, Index(tuple(dims), None, w.conj(idx.valid, inside)))
        term = got if inside is None else f"tl.where({inside}, {got}, {init})"
        if is_max:
            combine = ew.RULES["max"](w, ew.Op("max", (dtype, dtype), dtype, {}), [acc, term])
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

# Ops emitted at any index inside any kernel (no kernel of their own).
INLINE_OPS = frozenset(INDEX_RULES) | frozenset(ew.RULES) | {"convert", "bitcast_convert", "constant"}
REDUCE_OPS = frozenset(op.name for op in OP_TABLE.values() if Group.REDUCTION in op.groups
                       and op.kind is Kind.PRIMITIVE and op.name != "reduce_window")
