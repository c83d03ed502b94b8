"""Building graphs: one method per op, looked up in the op table.

``b.add(x, y)`` is ``b.op("add", x, y)``: the builder checks the operands against
the op's type rule at once, so a malformed graph fails where it is built, with the
op and operand named.

Example::

    >>> from parity.ir import GraphBuilder, f32
    >>> b = GraphBuilder("scale")
    >>> x = b.input(f32[4])
    >>> two = b.constant(2.0, f32)
    >>> y = b.mul(x, b.broadcast_in_dim(two, shape=(4,), broadcast_dimensions=()))
    >>> b.build([y]).op_counts()
    {'constant': 1, 'broadcast_in_dim': 1, 'mul': 1}
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from .constraints import Constraint
from .dims import Dim, monomials
from .dtypes import DType
from .errors import TypeRuleError
from .graph import Graph, Node, SourceLoc, Value
from .types import TensorType


class GraphBuilder:
    def __init__(self, name: str = "main"):
        self.name = name
        self.inputs: list[Value] = []
        self.nodes: list[Node] = []
        self.loc: SourceLoc | None = None
        self.assumptions: list[Constraint] = []

    # -- inputs and locations -------------------------------------------------------

    def input(self, type: TensorType) -> Value:
        value = Value(type)
        self.inputs.append(value)
        return value

    @contextlib.contextmanager
    def location(self, loc: SourceLoc | None) -> Iterator[None]:
        """Nodes built inside carry ``loc`` (the user's source line)."""
        saved = self.loc
        self.loc = loc
        try:
            yield
        finally:
            self.loc = saved

    # -- emitting ops -----------------------------------------------------------------

    def op(self, name: str, *inputs: Value, **attrs: Any) -> Any:
        """Append one node; return its Value, or a tuple of Values for multi-result ops."""
        node = self.make_node(name, inputs, attrs)
        self.nodes.append(node)
        return node.outputs[0] if len(node.outputs) == 1 else node.outputs

    def make_node(self, name: str, inputs: Sequence[Value], attrs: dict[str, Any]) -> Node:
        from .ops import OP_TABLE

        opdef = OP_TABLE.get(name)
        if opdef is None:
            raise TypeRuleError(name, "no such op in the op table (see `parity ops`)")
        for i, value in enumerate(inputs):
            if not isinstance(value, Value):
                raise TypeRuleError(name, f"expected a Value, got {type(value).__name__}", i)
        normalized = opdef.normalize_attrs(attrs)
        out_types = opdef.result_types([v.type for v in inputs], normalized)
        return Node(name, inputs, normalized, out_types, self.loc)

    def constant(self, value: Any, dtype: DType | None = None) -> Value:
        """A constant from a Python scalar or an array, in ``dtype`` (default: the array's)."""
        array = np.asarray(value)
        if dtype is not None:
            array = array.astype(dtype.numpy)
        elif array.dtype == np.float64 and not isinstance(value, np.ndarray):
            raise TypeRuleError("constant", "give a dtype for Python scalars (no implicit promotion)")
        return self.op("constant", value=array)

    def size_value(self, dim: Dim) -> Value:
        """A size (an int or an expression over symbols: ``s3-3``) as an ``i64[]`` value that the
        graph computes from its inputs' shapes, for programs that compute with sizes (a mean's
        divisor, ``torch.arange(n, n + 3)``). The IR has no op that reads a dim, so a symbol is
        the sum of that many ones (a dim is never negative), a quotient or remainder atom
        likewise, and the polynomial is evaluated in int64 arithmetic, so a negative value
        (``s3-3`` at ``s3 = 1``) is exact."""
        if isinstance(dim, int):
            return self.constant(dim, DType.int64)
        total = None
        for coeff, factors in monomials(dim):
            term = self.constant(coeff, DType.int64)
            for factor, power in factors:
                ones = self.op("broadcast_in_dim", self.constant(1, DType.int64), shape=(factor,),
                               broadcast_dimensions=())
                count = self.op("reduce_sum", ones, axes=(0,))
                for _ in range(power):
                    term = self.op("mul", term, count)
            total = term if total is None else self.op("add", total, term)
        return total

    def __getattr__(self, name: str):
        from .ops import OP_TABLE

        if name.startswith("_") or name not in OP_TABLE:
            raise AttributeError(f"GraphBuilder has no attribute or op {name!r}")

        def emit(*inputs: Value, **attrs: Any):
            return self.op(name, *inputs, **attrs)

        emit.__name__ = name
        return emit

    def assume(self, kind: str, lhs: Dim, rhs: Dim, origin: str = "") -> None:
        """Record a fact about the symbolic sizes the graph relies on (``assume("divisible",
        S, 8)``); binding sizes that break it is an error (ir/constraints.py)."""
        self.assumptions.append(Constraint(kind, lhs, rhs, origin))

    def build(self, outputs: Sequence[Value]) -> Graph:
        return Graph(self.name, self.inputs, self.nodes, list(outputs), assumptions=self.assumptions)
