"""What an op *is*: the record every entry of the op table fills in.

One :class:`OpDef` holds everything about an op — operands, attributes, type rule,
kind, property groups, accuracy class, reference implementation (primitives) or
decomposition (composites). Nothing about an op is written anywhere else.

Example::

    >>> from parity.ir.ops import OP_TABLE
    >>> OP_TABLE["exp"].kind.value, sorted(g.value for g in OP_TABLE["exp"].groups)
    ('primitive', ['elementwise'])
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .dtypes import DType
from .errors import TypeRuleError
from .sharding import PartitionSpec, ShardingError
from .types import DimExpr, TensorType


class Kind(enum.Enum):
    PRIMITIVE = "primitive"  # every backend must implement it; has a reference
    COMPOSITE = "composite"  # has a decomposition into primitives; backends may claim it


class Group(enum.Enum):
    """Property groups that drive passes, lowering tables and tolerances."""

    ELEMENTWISE = "elementwise"
    REDUCTION = "reduction"
    SHAPE = "shape"  # moves data without computing (reshape, slice, transpose, ...)
    EXACT = "exact"  # result must be bit-exact against the oracle
    COMPARISON = "comparison"
    INDEXING = "indexing"  # gather/scatter/dynamic slices
    SCAN = "scan"
    CONTRACTION = "contraction"  # dot_general, convolution
    RANDOM = "random"
    NORMALIZATION = "normalization"
    ACTIVATION = "activation"
    LOSS = "loss"
    # Reading a product, the op never fuses it into an addition beyond its own bound: it
    # does not add to its operand (mul, max, comparisons, convert, sort, ...), or it adds
    # within its accumulation bound (reduce_sum, dot_general, convolution). A backend whose
    # compiler contracts a*b + c into one FMA need not guard products these ops read.
    NO_FUSED_ADD = "no_fused_add"
    # An accumulation whose terms are multiplied (reduce_prod, cumprod): summing in a tree does
    # not shorten its chain of roundings, so its bound counts every term.
    MULTIPLICATIVE = "multiplicative"
    # Its result is elements of its first operand, picked by run-time indices and otherwise
    # unchanged (gather, dynamic_slice): like a shape op, it passes values on to its users.
    SELECTS = "selects"
    # A composite whose decomposition computes float16/bfloat16 in float32 itself and rounds
    # once at the end (without compose.widened, which marks the composites it wraps).
    COMPUTES_WIDE = "computes_wide"


class Accuracy(enum.Enum):
    """Accuracy class: which bound of the numerical contract applies (docs/conformance.md)."""

    EXACT = "exact"
    CORRECTLY_ROUNDED = "correctly_rounded"
    TRANSCENDENTAL = "transcendental"
    ACCUMULATION = "accumulation"
    COMPOSITE = "composite"  # the bound of its decomposition, propagated


class AttrKind(enum.Enum):
    INT = "int"
    INTS = "ints"  # tuple[int, ...]
    SHAPE = "shape"  # tuple[int | DimExpr, ...]
    PAIRS = "pairs"  # tuple[tuple[int, int], ...], e.g. convolution padding
    FLOAT = "float"
    BOOL = "bool"
    STR = "str"
    DTYPE = "dtype"
    ARRAY = "array"  # np.ndarray (the constant op's value)
    SPEC = "spec"  # ir.sharding.PartitionSpec (the sharding_constraint op's spec)
    GRAPH = "graph"  # ir.graph.Graph (the loop op's body): printed as a nested block


REQUIRED = object()


@dataclass(frozen=True)
class AttrSpec:
    name: str
    kind: AttrKind
    default: Any = REQUIRED
    choices: tuple[str, ...] | None = None  # for STR attributes
    doc: str = ""

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


InferFn = Callable[[Sequence[TensorType], Mapping[str, Any]], Sequence[TensorType]]
ReferenceFn = Callable[..., Any]
DecomposeFn = Callable[..., Any]


@dataclass(frozen=True)
class OpDef:
    """One entry of the op table.

    ``operands`` names the operands in order; a single name starting with ``*`` makes
    the op variadic (``("*inputs",)`` for concatenate). ``dtypes`` lists the dtypes the
    op accepts for operand ``dtype_operand`` (0 unless set; select's is 1, its on_true,
    since its operand 0 is the bool predicate): that operand's dtype is "the op's dtype",
    the one conformance sweeps and backends' claims name (:meth:`op_dtype`). ``infer`` returns the
    result types or raises :class:`TypeRuleError`. Primitives set ``reference``:
    ``reference(ctx, *arrays) -> array | tuple[array, ...]``, ``ctx`` a
    :class:`~parity.ir.context.ReferenceContext`. Composites set
    ``decompose``: ``decompose(builder, attrs, *values) -> Value | tuple[Value, ...]``.
    """

    name: str
    kind: Kind
    operands: tuple[str, ...]
    infer: InferFn
    dtypes: tuple[DType, ...]
    accuracy: Accuracy
    attrs: tuple[AttrSpec, ...] = ()
    groups: frozenset[Group] = frozenset()
    reference: ReferenceFn | None = None
    decompose: DecomposeFn | None = None
    num_results: int | None = 1  # None: as many as the type rule gives (the loop op's)
    doc: str = ""
    # Semantics a backend may legitimately differ on; conformance does not compare them.
    implementation_defined: tuple[str, ...] = field(default=())
    # The operand whose dtype is the op's dtype (the one ``dtypes`` lists); see op_dtype.
    dtype_operand: int = 0

    def __post_init__(self):
        if self.kind is Kind.PRIMITIVE and self.reference is None:
            raise ValueError(f"primitive {self.name} needs a reference implementation")
        if self.kind is Kind.COMPOSITE and self.decompose is None:
            raise ValueError(f"composite {self.name} needs a decomposition")
        if self.dtype_operand and (self.is_variadic or self.dtype_operand >= len(self.operands)):
            raise ValueError(f"{self.name}: dtype_operand {self.dtype_operand} is not one of its operands "
                             f"{list(self.operands)}")

    def op_dtype(self, in_types: Sequence[TensorType], out_types: Sequence[TensorType]) -> DType:
        """The op's dtype for these operand and result types: operand ``dtype_operand``'s,
        or the first result's for an op without operands (constant, iota). ``dtypes``,
        conformance cases and backend claims are all keyed by it."""
        if not in_types:
            return out_types[0].dtype
        return in_types[self.dtype_operand].dtype

    @property
    def is_variadic(self) -> bool:
        return len(self.operands) == 1 and self.operands[0].startswith("*")

    @property
    def attr_specs(self) -> dict[str, AttrSpec]:
        return {spec.name: spec for spec in self.attrs}

    def normalize_attrs(self, attrs: Mapping[str, Any]) -> dict[str, Any]:
        """Fill defaults, check names and kinds, and make every value hashable and canonical."""
        specs = self.attr_specs
        unknown = sorted(set(attrs) - set(specs))
        if unknown:
            known = ", ".join(specs) or "none"
            raise TypeRuleError(self.name, f"unknown attribute(s) {unknown}; this op takes: {known}")
        out = {}
        for spec in self.attrs:
            if spec.name in attrs:
                out[spec.name] = _coerce_attr(self.name, spec, attrs[spec.name])
            elif spec.required:
                raise TypeRuleError(self.name, "missing required attribute", spec.name)
            else:
                out[spec.name] = spec.default
        return out

    def check_operand_count(self, n: int) -> None:
        if self.is_variadic:
            if n < 1:
                raise TypeRuleError(self.name, "takes at least one operand, got none")
        elif n != len(self.operands):
            names = ", ".join(self.operands)
            raise TypeRuleError(self.name, f"takes {len(self.operands)} operand(s) ({names}), got {n}")

    def result_types(self, in_types: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
        """Check operands and (already normalized) attributes; return the result types."""
        self.check_operand_count(len(in_types))
        out = tuple(self.infer(tuple(in_types), attrs))
        if self.num_results is not None and len(out) != self.num_results:
            raise AssertionError(f"type rule of {self.name} returned {len(out)} types, expected {self.num_results}")
        return out


def _coerce_attr(op: str, spec: AttrSpec, value: Any) -> Any:
    kind = spec.kind
    try:
        if kind is AttrKind.INT:
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise TypeError
            return int(value)
        if kind is AttrKind.INTS:
            return tuple(_as_int(v) for v in value)
        if kind is AttrKind.SHAPE:
            return tuple(v if isinstance(v, DimExpr) else _as_int(v) for v in value)
        if kind is AttrKind.PAIRS:
            pairs = tuple((_as_int(a), _as_int(b)) for a, b in value)
            return pairs
        if kind is AttrKind.FLOAT:
            if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
                raise TypeError
            return float(value)
        if kind is AttrKind.BOOL:
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError
            return bool(value)
        if kind is AttrKind.STR:
            if not isinstance(value, str):
                raise TypeError
            if spec.choices is not None and value not in spec.choices:
                raise TypeRuleError(op, f"must be one of {list(spec.choices)}, got {value!r}", spec.name)
            return value
        if kind is AttrKind.DTYPE:
            if isinstance(value, str):
                return DType.from_short(value)
            if not isinstance(value, DType):
                raise TypeError
            return value
        if kind is AttrKind.ARRAY:
            if not isinstance(value, np.ndarray):
                raise TypeError
            DType.from_numpy(value.dtype)  # rejects dtypes the IR does not have
            # np.ascontiguousarray would turn a 0-d array into shape (1,)
            array = value if value.flags.c_contiguous else np.ascontiguousarray(value)
            array.setflags(write=False)
            return array
        if kind is AttrKind.GRAPH:
            # A Graph, known by what a body is used for: ir/graph.py imports the op table, which
            # imports this module, so the class cannot be imported here (tests/test_layering.py).
            if not all(hasattr(value, name) for name in ("inputs", "nodes", "outputs", "content_hash")):
                raise TypeError
            return value
        if kind is AttrKind.SPEC:
            try:
                return PartitionSpec.of(value)
            except ShardingError as exc:  # its message says what is wrong with the spec
                raise TypeRuleError(op, str(exc), spec.name) from None
    except TypeRuleError:
        raise
    except (TypeError, ValueError):
        pass
    raise TypeRuleError(op, f"expected a value of kind {kind.value}, got {value!r}", spec.name)


def _as_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError
    return int(value)
