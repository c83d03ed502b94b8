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
dot kernel's accumulator). Index arithmetic is in index.py, the shape and indexing rules
in index_rules.py, the elementwise rules in elementwise.py.
"""

from __future__ import annotations

import contextlib
import re
import struct
from collections import Counter
from collections.abc import Iterator, Sequence

import numpy as np

from ...ir.dtypes import DType
from ...ir.graph import Node, Value
from . import elementwise as ew
from .index import Index, dim_text, fold, linearize
from .index_rules import INDEX_RULES

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

    def axis(self, name: str, expr: str, dep: str, size, mask: str) -> None:
        """Define a domain index variable and its mask (``mask = name < size``)."""
        self.line(f"{name} = {expr}")
        self.line(f"{mask} = {name} < {dim_text(size)}")
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
        if node.op in ew.RULES or node.op in ew.CONVERSIONS:
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
        conversion = ew.CONVERSIONS.get(node.op)
        if conversion is not None:
            return self.let(conversion(self, src, out, args[0]))
        view = ew.TritonNodeContext(node.attrs, tuple(v.type for v in node.inputs), tuple(v.type for v in node.outputs),
                                    name=node.op)
        expr = ew.RULES[node.op](self, view, args)
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
