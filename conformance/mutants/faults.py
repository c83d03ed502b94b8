"""The fault classes of mutation testing, and where each one applies, as data.

A :class:`Fault` changes what an executable returns (or, for ``exception``, that it
returns at all). It is planted at the executable's boundary by :class:`.planted.Planted`
and sees one output at a time with its :class:`Site`. Where a class is meaningful is a
:class:`Rule` over facts of the op table and the contract (accuracy class, groups, the
bound of the cell's output and its dtype); ``exempt`` names op cells where the fault
lies within the published contract, with the numbers that show it.

Example::

    >>> from parity.ir.dtypes import DType
    >>> FAULTS["relative_2^-10"].rule.why_not(Facts.of("exp", DType.float16))
    'dtypes: f16 is not among f32, f64'
    >>> FAULTS["zeros"].rule.why_not(Facts.of("exp", DType.float32)) is None
    True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from ...ir.dtypes import DType
from ...ir.graph import Graph, Node
from ...ir.interpreter import evaluate, evaluate_node
from ...ir.opdef import Accuracy, Group, Kind
from ...ir.ops import OP_TABLE
from ...ir.ops.conversion import round_float
from ..bounds import FAST_BOUNDS, Scale, bound_for

FLOAT, INT, BOOL, COMPLEX = "float", "int", "bool", "complex"
EVERY_KIND = frozenset({FLOAT, INT, BOOL, COMPLEX})


def kind_of(dtype: DType) -> str:
    return FLOAT if dtype.is_float else COMPLEX if dtype.is_complex else BOOL if dtype.is_bool else INT


@dataclass(frozen=True)
class Facts:
    """What a rule reads about one op × dtype cell: the op table's entry and the bound of its
    first output (with the op's default attributes)."""

    op: str
    dtype: DType  # the cell's dtype (the operand dtype the op table sweeps)
    out: DType  # the first output's dtype
    accuracy: Accuracy
    groups: frozenset[Group]
    bound: str  # exact | ulp | scaled
    zero_sign: bool  # exact, and the sign of a zero counts

    @classmethod
    def of(cls, op: str, dtype: DType, out: DType | None = None, attrs: Mapping | None = None) -> Facts:
        opdef, out = OP_TABLE[op], out or dtype
        try:
            b = bound_for(op, attrs or {a.name: a.default for a in opdef.attrs}, out)
            kind, zero_sign = b.kind, b.kind == "exact" and b.zero_sign
        except Exception:  # noqa: BLE001 - a bound that needs attributes the defaults lack
            kind, zero_sign = ("exact", False) if opdef.accuracy is Accuracy.EXACT else ("scaled", False)
        return cls(op, dtype, out, opdef.accuracy, opdef.groups, kind, zero_sign)


@dataclass(frozen=True)
class Rule:
    """Where a fault class applies: every field that is set must hold (``groups``: any of them).
    ``exempt``: ``"op"`` or ``"op[dtype]"`` → why that cell is not a fault the contract
    forbids (with the numbers)."""

    kinds: frozenset[str] = EVERY_KIND  # of the output dtype
    bounds: frozenset[str] = frozenset({"exact", "ulp", "scaled"})
    accuracy: frozenset[Accuracy] | None = None
    groups: frozenset[Group] | None = None
    ops: frozenset[str] | None = None
    dtypes: frozenset[str] | None = None  # output dtypes (short names)
    zero_sign: bool = False  # only where the sign of a zero is part of the contract
    exempt: Mapping[str, str] = field(default_factory=dict)

    def why_not(self, f: Facts) -> str | None:
        """None when the rule applies to the cell, else the reason it does not."""
        reason = self.exempt.get(f"{f.op}[{f.out.short}]") or self.exempt.get(f.op)
        checks = (
            (kind_of(f.out) in self.kinds, f"output kind: {kind_of(f.out)} is not {'/'.join(sorted(self.kinds))}"),
            (f.bound in self.bounds, f"bound: {f.bound} is not {'/'.join(sorted(self.bounds))}"),
            (self.accuracy is None or f.accuracy in self.accuracy,
             f"accuracy: {f.accuracy.value} is not {'/'.join(sorted(a.value for a in self.accuracy or ()))}"),
            (self.groups is None or bool(f.groups & self.groups),
             f"groups: none of {'/'.join(sorted(g.value for g in self.groups or ()))}"),
            (self.ops is None or f.op in self.ops, "ops: not one of the ops it is defined for"),
            (self.dtypes is None or f.out.short in self.dtypes,
             f"dtypes: {f.out.short} is not among {', '.join(sorted(self.dtypes or ()))}"),
            (not self.zero_sign or f.zero_sign, "the contract does not fix the sign of this op's zeros"),
            (reason is None, f"exempt: {reason}"),
        )
        return next((why for ok, why in checks if not ok), None)


@dataclass
class Site:
    """Where a fault is planted: one output of a compiled graph. ``node`` produced it (None
    when it is a graph input); ``arrays`` are the executable's arguments."""

    dtype: DType
    node: Node | None
    graph: Graph
    arrays: tuple
    value: object = None  # the graph output (an ir Value)

    def operands(self) -> list[np.ndarray]:
        """The producing node's operands, from the oracle on the same inputs (float64 for floats)."""
        index = self.graph.nodes.index(self.node)
        prefix = Graph(self.graph.name, self.graph.inputs, self.graph.nodes[:index], list(self.node.inputs))
        out = evaluate(prefix, [_host(a) for a in self.arrays], oracle=True)
        return [o.astype(np.float64) if v.type.dtype.is_float else o for o, v in zip(out, self.node.inputs)]


# A fault: (output array, its site) → the planted output, or None when it cannot be planted there.
PlantFn = Callable[[np.ndarray, Site], "np.ndarray | None"]


@dataclass(frozen=True)
class Fault:
    name: str
    what: str  # one line for reports
    plant: PlantFn | None  # None: the executable raises instead of returning
    rule: Rule = Rule()


def _host(a):
    from ..execute import as_array

    return as_array(a)


# -- the faults ---------------------------------------------------------------------------------

_UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def step_ulps(a: np.ndarray, dtype: DType, k: int) -> np.ndarray:
    """Every finite element moved ``k`` ULPs away from zero (toward zero where that would
    overflow); integers ``+k`` (wrapping)."""
    if not dtype.is_float:
        return (a.astype(np.int64) + k).astype(a.dtype) if dtype.bits < 64 else a + np.asarray(k, a.dtype)
    u = _UINT[a.dtype.itemsize]
    bits = np.ascontiguousarray(a).view(u)
    sign = u(1) << u(8 * a.dtype.itemsize - 1)
    mag = bits & ~sign
    inf_bits = np.array(np.inf, a.dtype).reshape(1).view(u)[0]
    finite = mag < inf_bits
    up = mag + u(k)
    moved = np.where(up < inf_bits, up, mag - u(k))
    return np.where(finite, (bits & sign) | moved, bits).astype(u).view(a.dtype)


def _ulps(k: int) -> PlantFn:
    return lambda a, site: step_ulps(a, site.dtype, k)


def _relative(r: float) -> PlantFn:
    return lambda a, site: round_float(a.astype(np.float64) * (1 + r), site.dtype) if site.dtype.is_float else None


def _zeros(a, site):
    return np.zeros_like(a)


def _where_float(change: Callable[[np.ndarray], np.ndarray]) -> PlantFn:
    def plant(a, site):
        if not site.dtype.is_float:
            return None
        wide = a.astype(np.float64)
        return round_float(change(wide), site.dtype)
    return plant


def _flush_normals(wide: np.ndarray, dtype: DType) -> np.ndarray:
    tiny = float(dtype.finfo.tiny)
    flushed = (np.abs(wide) >= tiny) & (np.abs(wide) < tiny * 2.0 ** FLUSHED_BINADES)
    return np.where(flushed, np.copysign(0.0, wide), wide)


# Normals in [tiny, tiny·2**8) become ±0. Subnormals are left alone: flushing them is the
# flush-to-zero a backend may declare per dtype, and η (the smallest subnormal) in every
# scaled bound allows them anyway.
FLUSHED_BINADES = 8


def _reverse(a, site):
    axes = [i for i, n in enumerate(a.shape) if n > 1]
    return np.flip(a, axes[-1]).copy() if axes else None


def _off_by_one(a, site):
    """out[..., i] = out[..., i + 1] along the last axis longer than 1 (the end clamped), as
    an index computed one too high reads (XLA clamps gather indices into range)."""
    axes = [i for i, n in enumerate(a.shape) if n > 1]
    if not axes:
        return None
    axis = axes[-1]
    index = np.minimum(np.arange(a.shape[axis]) + 1, a.shape[axis] - 1)
    return np.take(a, index, axis=axis)


def _complex_fault(change: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]) -> PlantFn:
    """A fault on the parts of a complex output: ``change(real, imag) -> (real, imag)``."""
    def plant(a, site):
        if not site.dtype.is_complex:
            return None
        out = np.empty(a.shape, a.dtype)
        out.real, out.imag = change(np.real(a), np.imag(a))
        return out
    return plant


def _wrong_dtype(a, site):
    other = {np.dtype(np.float32): np.float64, np.dtype(np.int32): np.int64, np.dtype(np.bool_): np.uint8}
    return a.astype(other.get(a.dtype, np.float32))


def _wrong_shape(a, site):
    return a.reshape(a.shape + (1,))


# Dropped term: the term replaced by the op's identity, and which term (the one that counts most).
_IDENTITY = {"reduce_sum": 0.0, "cumsum": 0.0, "dot_general": 0.0, "reduce_prod": 1.0, "cumprod": 1.0,
             "reduce_max": -np.inf, "reduce_min": np.inf, "cummax": -np.inf, "cummin": np.inf}


def _drop_term(a, site):
    """The node's result with the largest term of its first operand (the largest, smallest
    one for max, min) replaced by the identity: an adder that skips one term."""
    node = site.node
    if node is None or node.op not in _IDENTITY or not site.dtype.is_float:
        return None
    operands = site.operands()
    x = operands[0].copy()
    flat = x.reshape(-1)
    finite = np.where(np.isfinite(flat), flat, np.nan)
    if not flat.size or np.isnan(finite).all():
        return None
    identity = _IDENTITY[node.op]
    pick = {-np.inf: np.nanargmax, np.inf: np.nanargmin}.get(identity)
    i = pick(finite) if pick else np.nanargmax(np.abs(finite))
    flat[i] = identity
    operands[0] = x
    out = evaluate_node(node.op, operands, node.attrs, [v.type for v in node.inputs],
                        [v.type for v in node.outputs], oracle=True)
    return round_float(np.asarray(out[node.outputs.index(site.value)]).astype(np.float64), site.dtype)


def _low_precision_sum(a, site):
    """A sum accumulated in its own 16-bit dtype, one term after another (each partial sum
    rounded), instead of in float32."""
    node = site.node
    if node is None or node.op not in ("reduce_sum", "cumsum") or site.dtype.bits != 16:
        return None
    x = site.operands()[0]
    axes = (node.attrs["axis"],) if node.op == "cumsum" else tuple(node.attrs["axes"])
    axes = tuple(ax % x.ndim for ax in axes)
    if not axes or x.size == 0:
        return None
    keep = [i for i in range(x.ndim) if i not in axes]
    moved = np.transpose(x, keep + list(axes))
    rows = moved.reshape(int(np.prod([x.shape[i] for i in keep], dtype=np.int64)), -1)
    acc = np.zeros(rows.shape[0])
    partial = np.empty_like(rows)
    for k in range(rows.shape[1]):
        acc = round_float(acc + rows[:, k], site.dtype).astype(np.float64)
        partial[:, k] = acc
    if node.op == "reduce_sum":
        return round_float(acc.reshape(a.shape), site.dtype)
    out = np.transpose(partial.reshape(moved.shape), np.argsort(keep + list(axes)))
    return round_float(out, site.dtype)


# How far past its fast-tier bound the fast-tier fault puts each element: past the bound, and
# (after rounding to the dtype) within about twice it, so only a check of that bound kills it.
FAST_FAULT_FACTOR = 1.5


def _past_fast_bound(a, site):
    """Each finite element set to the oracle plus 1.5 times its fast-tier allowance
    (bounds.FAST_BOUNDS: c0·ε·S, S = 1 or max(|o|, |operands|))."""
    node = site.node
    bound = FAST_BOUNDS.get(node.op) if node is not None else None
    if bound is None or not site.dtype.is_float or bound.scale not in (Scale.UNIT, Scale.OPERANDS):
        return None
    operands = site.operands()
    oracle = evaluate_node(node.op, operands, node.attrs, [v.type for v in node.inputs],
                           [v.type for v in node.outputs], oracle=True)[node.outputs.index(site.value)]
    o = np.asarray(oracle).astype(np.float64)
    s = np.ones_like(o) if bound.scale is Scale.UNIT else np.maximum.reduce(
        [np.abs(o), *(np.abs(x) for x, v in zip(operands, node.inputs) if v.type.dtype.is_float)])
    with np.errstate(all="ignore"):
        moved = o + FAST_FAULT_FACTOR * bound.c0 * float(site.dtype.finfo.eps) * s
    return round_float(np.where(np.isfinite(o) & np.isfinite(moved), moved, a.astype(np.float64)), site.dtype)


def _scatter_recomputed(change: Callable[[Mapping], dict | None]) -> PlantFn:
    """The scatter node's result computed by the oracle with its attributes changed: a backend
    that lowers the mode wrong (accumulates instead of replacing, drops include_self)."""
    def plant(a, site):
        node = site.node
        attrs = change(node.attrs) if node is not None and node.op == "scatter" else None
        if attrs is None:
            return None
        out = evaluate_node("scatter", site.operands(), attrs, [v.type for v in node.inputs],
                            [v.type for v in node.outputs], oracle=True)[0]
        out = np.asarray(out)
        return round_float(out.astype(np.float64), site.dtype) if site.dtype.is_float else out.astype(a.dtype)
    return plant


# scatter mode -> the mode a wrong lowering computes instead
_WRONG_MODE = {"replace": "add", "add": "replace", "mul": "add", "max": "min", "min": "max"}


def _wrong_mode(attrs):
    return {**attrs, "reduce": _WRONG_MODE[attrs["reduce"]], "include_self": True}


def _flipped_include_self(attrs):
    return None if attrs["reduce"] == "replace" else {**attrs, "include_self": not attrs["include_self"]}


_FLOATS = frozenset({FLOAT})
_NOT_EXACT = frozenset({"ulp", "scaled"})
_REDUCING = frozenset(_IDENTITY)

FAULTS: dict[str, Fault] = {f.name: f for f in (
    Fault("exact+1ulp", "every element of a bit-exact op 1 ULP (integers: 1) away from zero", _ulps(1),
          Rule(kinds=frozenset({FLOAT, INT}), bounds=frozenset({"exact"}))),
    Fault("transcendental+8ulp", "every element of a transcendental op 8 ULP away from zero", _ulps(8),
          Rule(kinds=_FLOATS, accuracy=frozenset({Accuracy.TRANSCENDENTAL}), bounds=_NOT_EXACT)),
    Fault("relative_2^-10", "every element times 1 + 2⁻¹⁰", _relative(2.0 ** -10),
          # In f16 2⁻¹⁰ is one ULP (ε = 2⁻¹⁰) and in bf16 an eighth of one (ε = 2⁻⁷): within the contract.
          Rule(kinds=_FLOATS, bounds=_NOT_EXACT, dtypes=frozenset({"f32", "f64"}))),
    Fault("dropped_term", "the largest term of a reduction, scan or dot left out", _drop_term,
          Rule(kinds=_FLOATS, ops=_REDUCING)),
    Fault("reversed_axis", "the output reversed along its last axis longer than 1", _reverse),
    Fault("off_by_one", "each index one too high along the last axis (the end clamped)", _off_by_one,
          Rule(groups=frozenset({Group.INDEXING, Group.SHAPE}))),
    Fault("zeros", "every element 0", _zeros),
    Fault("nan_to_zero", "NaN returned as 0", _where_float(lambda w: np.where(np.isnan(w), 0.0, w)),
          Rule(kinds=_FLOATS)),
    Fault("lost_negative_zero", "−0.0 returned as +0.0", _where_float(lambda w: np.where(w == 0, 0.0, w)),
          Rule(kinds=_FLOATS, zero_sign=True)),
    Fault("flushed_normals", f"normal values in [tiny, tiny·2^{FLUSHED_BINADES}) returned as ±0",
          lambda a, site: _where_float(lambda w: _flush_normals(w, site.dtype))(a, site), Rule(kinds=_FLOATS)),
    Fault("low_precision_sum", "a 16-bit sum accumulated in its own dtype, term by term", _low_precision_sum,
          Rule(ops=frozenset({"reduce_sum", "cumsum"}), dtypes=frozenset({"f16", "bf16"}))),
    Fault("past_fast_bound", f"every element {FAST_FAULT_FACTOR:g}× its fast-tier bound from the oracle "
          "(precision='fast': an FMA or native kernel off by more than measured)", _past_fast_bound,
          Rule(kinds=_FLOATS, dtypes=frozenset({"f32", "f64"}),
               ops=frozenset(op for op in FAST_BOUNDS if OP_TABLE[op].kind is Kind.PRIMITIVE))),
    Fault("swapped_parts", "a complex result's real and imaginary parts swapped",
          _complex_fault(lambda re, im: (im, re)), Rule(kinds=frozenset({COMPLEX}))),
    Fault("conjugated", "a complex result conjugated (its imaginary part negated)",
          _complex_fault(lambda re, im: (re, -im)), Rule(kinds=frozenset({COMPLEX}))),
    Fault("dropped_imaginary", "a complex result's imaginary part returned as 0",
          _complex_fault(lambda re, im: (re, np.zeros_like(im))), Rule(kinds=frozenset({COMPLEX}))),
    Fault("scatter_wrong_mode", "a scatter combining in another mode (replace↔add, mul→add, max↔min)",
          _scatter_recomputed(_wrong_mode), Rule(kinds=frozenset({FLOAT, INT}), ops=frozenset({"scatter"}))),
    Fault("scatter_include_self_flipped", "a reducing scatter with include_self ignored or inverted",
          _scatter_recomputed(_flipped_include_self), Rule(kinds=frozenset({FLOAT, INT}), ops=frozenset({"scatter"}))),
    Fault("exception", "the executable raises", None),
    Fault("wrong_dtype", "the output in another dtype (f32→f64, i32→i64, bool→u8, others→f32)", _wrong_dtype),
    Fault("wrong_shape", "the output with an extra axis of size 1", _wrong_shape),
)}
