"""Building ONNX graphs: fresh names, nodes, deduplicated constants and shape tensors.

The lowering rules never touch protobuf: they call :meth:`Emitter.op` (``onnx.helper
.make_node``), :meth:`Emitter.const` (``numpy_helper.from_array`` initializers) and the
shape helpers. Symbolic dimensions become run-time values read from the graph input
that carries them (``Shape`` with start/end), so reshapes and broadcasts work for any
size bound at run time.

Example::

    >>> import numpy as np
    >>> from parity.ir import f32
    >>> em = Emitter()
    >>> x = em.input("x", f32[2])
    >>> y = em.op("Neg", x)
    >>> [n.op_type for n in em.nodes], em.const(np.float32(1)) == em.const(np.float32(1))
    (['Neg'], True)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from onnx import AttributeProto, TensorProto, helper, numpy_helper

from ...ir.dims import free_symbols, linear_in
from ...ir.dtypes import DType
from ...ir.errors import ParityError
from ...ir.precision import Precision
from ...ir.types import Dim, DimExpr, Symbol, TensorType

ONNX_DTYPES: dict[DType, int] = {
    DType.bool: TensorProto.BOOL,
    DType.int8: TensorProto.INT8,
    DType.int16: TensorProto.INT16,
    DType.int32: TensorProto.INT32,
    DType.int64: TensorProto.INT64,
    DType.uint8: TensorProto.UINT8,
    DType.uint32: TensorProto.UINT32,
    DType.float16: TensorProto.FLOAT16,
    DType.bfloat16: TensorProto.BFLOAT16,
    DType.float32: TensorProto.FLOAT,
    DType.float64: TensorProto.DOUBLE,
}

# A shape entry: a static size, a symbol, or a tuple of entries meaning their product.
ShapeEntry = Dim | tuple


def value_info(name: str, t: TensorType):
    """``ValueInfoProto`` for a graph input/output; symbolic dims become ``dim_param``s
    holding their expression (``B``, ``B*4``, ``S//2``: ir/dims.py's text)."""
    dims = [str(d) if isinstance(d, DimExpr) else d for d in t.shape]
    return helper.make_tensor_value_info(name, ONNX_DTYPES[t.dtype], dims)


class Emitter:
    """Collects the nodes and initializers of one ONNX graph."""

    def __init__(self, reserved: Sequence[str] = (), precision: Precision = Precision.EXACT):
        self._reserved = frozenset(reserved)  # the graph's own input/output names: never generated
        self.precision = precision  # the tier the rules lower for (FAST: native kernels, elementwise.py)
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self.inputs: list[Any] = []
        self._counter = itertools.count()
        self._consts: dict[tuple, str] = {}
        self._const_values: dict[str, np.ndarray] = {}  # initializer name -> its values
        self._symbols: dict[str, tuple[str, int]] = {}  # symbol -> (graph input, axis)
        # symbol -> (graph input, axis, a, b) of an input dim a*symbol + b (B*2, S+1)
        self._linear: dict[str, tuple[str, int, int, int]] = {}
        self._symbol_values: dict[str, str] = {}

    def fresh(self, hint: str) -> str:
        name = f"{hint}_{next(self._counter)}"
        return name if name not in self._reserved else self.fresh(hint)

    def input(self, name: str, t: TensorType) -> str:
        self.inputs.append(value_info(name, t))
        for axis, dim in enumerate(t.shape):
            if isinstance(dim, Symbol):
                self._symbols.setdefault(dim.name, (name, axis))
            elif isinstance(dim, DimExpr) and len(free_symbols(dim)) == 1:
                (symbol,) = free_symbols(dim)
                solved = linear_in(dim, symbol)
                if solved is not None:
                    self._linear.setdefault(symbol, (name, axis, *solved))
        return name

    def op(self, op_type: str, *inputs: str, outputs: int = 1, **attrs: Any):
        """Append one node; return its output name (or a list of names for ``outputs > 1``)."""
        names = [self.fresh(op_type.lower()) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op_type, list(inputs), names, **attrs))
        return names[0] if outputs == 1 else names

    def if_(self, cond: str, then_branch: Callable[[], str], else_branch: Callable[[], str],
            t: TensorType) -> str:
        """An ``If`` node on the 1-element bool ``cond``: each branch's nodes are those its
        callable emits (it returns its result's name, of type ``t``), in a subgraph that
        reads the outer graph's values; constants stay in the outer graph."""
        graphs = []
        for label, build in (("then", then_branch), ("else", else_branch)):
            result, inner = self.subgraph(build)
            (result,) = self.own_outputs(inner, [result])
            graphs.append(helper.make_graph(inner, self.fresh(f"{label}_branch"), [], [value_info(result, t)]))
        return self.op("If", cond, then_branch=graphs[0], else_branch=graphs[1])

    def subgraph(self, build: Callable[[], Any]) -> tuple[Any, list]:
        """``build()`` with the nodes it emits collected apart: (what it returns, those nodes), for
        a subgraph (an If's branch, a Scan's body) that reads the outer graph's values by name.
        Constants stay in the outer graph; sizes read inside are forgotten after, since they
        exist only there."""
        outer_nodes, self.nodes = self.nodes, []
        outer_symbols = dict(self._symbol_values)
        try:
            return build(), self.nodes
        finally:
            self.nodes, self._symbol_values = outer_nodes, outer_symbols

    def own_outputs(self, nodes: list, names: Sequence[str]) -> list[str]:
        """Subgraph output names each made by one of ``nodes`` and all distinct: an outer value,
        a subgraph input or a repeat gets an Identity of its own appended to ``nodes``."""
        made = {out for n in nodes for out in n.output}
        owned: list[str] = []
        for name in names:
            if name not in made or name in owned:
                source, name = name, self.fresh("out")
                nodes.append(helper.make_node("Identity", [source], [name]))
            owned.append(name)
        return owned

    def const(self, value: Any, dtype: DType | None = None) -> str:
        """An initializer holding ``value`` (in ``dtype``); equal constants share one name."""
        array = np.asarray(value)
        if dtype is not None:
            array = array.astype(dtype.numpy)
        key = (array.dtype.str, array.shape, array.tobytes())
        name = self._consts.get(key)
        if name is None:
            name = self._consts[key] = self.fresh("c")
            # np.ascontiguousarray would turn a 0-d array into shape (1,)
            array = array if array.flags.c_contiguous else np.ascontiguousarray(array)
            self.initializers.append(numpy_helper.from_array(array, name))
            self._const_values[name] = array
        return name

    def constant_value(self, name: str) -> np.ndarray | None:
        """The values of ``name`` if it is an initializer, or an Identity or Reshape of one
        (the lowering's views of a broadcast constant); else None (computed at run time)."""
        while True:
            if name in self._const_values:
                return self._const_values[name]
            producer = next((n for n in reversed(self.nodes) if name in n.output), None)
            if producer is None or producer.op_type not in ("Identity", "Reshape"):
                return None
            name = producer.input[0]

    def scalar(self, value: Any, dtype: DType) -> str:
        return self.const(np.array(value, dtype.numpy))

    def expand(self, x: str, x_shape: Sequence[Dim], shape: Sequence[Dim]) -> str:
        """Broadcast ``x`` (of ``x_shape``; a shorter shape is aligned on the right) to ``shape``.

        ORT's Expand broadcasts a size-1 dim to a target of 0 as 1, so dims that may be
        empty (0 or a symbol, where x has 1) are cut back to the target with a Slice.
        """
        x_shape = (1,) * (len(shape) - len(x_shape)) + tuple(x_shape)
        # 1 where x already has the size: Expand broadcasts numpy-style (1 against a 0 gives
        # 0), and a symbolic size x carries needs no Shape/Concat at run time
        target = [1 if n == d else d for n, d in zip(x_shape, shape)]
        out = self.op("Expand", x, self.shape(target))
        risky = [i for i, (n, d) in enumerate(zip(x_shape, shape)) if n == 1 and (d == 0 or isinstance(d, DimExpr))]
        if not risky:
            return out
        ends = [shape[i] for i in risky]
        return self.op("Slice", out, self.ints([0] * len(risky)), self.shape(ends), self.ints(risky))

    def ints(self, values: Sequence[int]) -> str:
        """A 1-D int64 constant (axes, pads, static shapes)."""
        return self.const(np.array(list(values), np.int64).reshape(len(values)))

    def cast(self, x: str, dtype: DType) -> str:
        return self.op("Cast", x, to=ONNX_DTYPES[dtype])

    # -- shapes ---------------------------------------------------------------------------

    def symbol(self, dim: DimExpr) -> str:
        """A 1-element int64 tensor holding the run-time size of ``dim``: a symbol is read
        from the input that carries it (``Shape``), an expression (``B*4``, ``S//2``) is
        computed from its symbols, once per graph."""
        key = str(dim)
        name = self._symbol_values.get(key)
        if name is None:
            if isinstance(dim, Symbol):
                name = self._read_symbol(dim.name)
            else:
                name = self._expression(dim)
            self._symbol_values[key] = name
        return name

    def _read_symbol(self, symbol: str) -> str:
        """A symbol's size from an input dim that is the symbol (``Shape``), or one linear in
        it: ``B*2 + 1`` gives ``B = (dim - 1) / 2`` (exact: the input was bound to that form)."""
        if symbol in self._symbols:
            source, axis = self._symbols[symbol]
            return self.op("Shape", source, start=axis, end=axis + 1)
        if symbol in self._linear:
            source, axis, a, b = self._linear[symbol]
            size = self.op("Shape", source, start=axis, end=axis + 1)
            if b:
                size = self.op("Sub", size, self.ints([b]))
            return size if a == 1 else self.op("Div", size, self.ints([a]))
        raise ParityError(f"the onnx backend cannot read the size of {symbol}: no graph input has a dim that is "
                          f"{symbol} or linear in {symbol} alone (B*2 + 1); give one input that dim")

    def _expression(self, dim: DimExpr) -> str:
        """Sum of terms coeff * atom * ...; quotients and remainders of sizes are >= 0, where
        ONNX's truncating integer Div is floor division (ir/dims.py keeps numerators so)."""
        total = None
        for mono, coeff in dim._terms:
            factors = [self._atom(atom) for atom, power in mono for _ in range(power)]
            term = factors[0] if factors else self.ints([coeff])
            for factor in factors[1:]:
                term = self.op("Mul", term, factor)
            if factors and coeff != 1:
                term = self.op("Mul", term, self.ints([coeff]))
            total = term if total is None else self.op("Add", total, term)
        return total

    def _atom(self, atom) -> str:
        if atom[0] == "sym":
            return self.symbol(Symbol(atom[1]))
        num, den = (self.ints([d]) if isinstance(d, int) else self.symbol(d) for d in atom[1:])
        return self.op("Div" if atom[0] == "floordiv" else "Mod", num, den)

    def shape(self, entries: Sequence[ShapeEntry]) -> str:
        """A 1-D int64 shape tensor; static entries fold into one constant."""
        static = [_static(e) for e in entries]
        if all(s is not None for s in static):
            return self.ints(static)
        pieces = [self.ints([s]) if s is not None else self._entry(e) for e, s in zip(entries, static)]
        return pieces[0] if len(pieces) == 1 else self.op("Concat", *pieces, axis=0)

    def _entry(self, entry: ShapeEntry) -> str:
        if isinstance(entry, DimExpr):
            return self.symbol(entry)
        parts = [self._entry(e) if _static(e) is None else self.ints([_static(e)]) for e in entry]
        product = parts[0]
        for part in parts[1:]:
            product = self.op("Mul", product, part)
        return product


def with_subgraphs(nodes):
    """``nodes`` and the nodes of their subgraphs (an ``If``'s branches, a ``Scan``'s body), depth first."""
    for node in nodes:
        yield node
        for attribute in node.attribute:
            if attribute.type == AttributeProto.GRAPH:
                yield from with_subgraphs(attribute.g.node)


def _static(entry: ShapeEntry) -> int | None:
    if isinstance(entry, DimExpr):
        return None
    if isinstance(entry, tuple):
        sizes = [_static(e) for e in entry]
        return None if any(s is None for s in sizes) else math.prod(sizes)
    return entry
