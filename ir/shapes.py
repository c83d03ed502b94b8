"""Binding symbolic dimensions to sizes, and resolving types and attributes with them.

A graph's types may name dimensions (``f32[B,16]``). At run time every ``B`` must have
one size. :class:`ShapeBindings` is the one place that binds them: it checks a concrete
shape against a type (rank, static dims, one size per symbol), remembers each symbol's
size, and resolves types and attributes (``reshape``'s ``shape`` may hold ``B``) to
concrete ones. Dimensions may be expressions (``B*4``, ``S//2``, ir/dims.py): they are
evaluated, or solved when linear in one unbound symbol. The interpreter and every
backend bind through it, and :meth:`ShapeBindings.bind_inputs` checks the graph's
constraints (:func:`graph_constraints`: what its type rules required, ir/constraints.py)
there, so a size the graph cannot take is an error.

Errors are :class:`ShapeError` (a :class:`ParityError`) unless the caller names its own
error class, as the interpreter does with its InterpreterError.

Example::

    >>> from parity.ir import GraphBuilder, Symbol, f32
    >>> b = GraphBuilder("f")
    >>> x, y = b.input(f32[Symbol("B"), 2]), b.input(f32[Symbol("B")])
    >>> bindings = ShapeBindings()
    >>> [str(t) for t in bindings.bind_inputs(b.build([x]), [(3, 2), (3,)])]
    ['f32[3,2]', 'f32[3]']
    >>> bindings.sizes, str(bindings.resolve(f32[Symbol("B"), Symbol("N")]))
    ({'B': 3}, 'f32[3,N]')
    >>> bindings.bind_inputs(b.build([x]), [(3, 2), (4,)])
    Traceback (most recent call last):
    ...
    parity.ir.shapes.ShapeError: input 1 of @f: dimension B is 4 here but 3 in an earlier input
    >>> N = Symbol("N")
    >>> b = GraphBuilder("g")
    >>> g = b.build([b.reshape(b.input(f32[N]), shape=(N // 3, 3))])
    >>> [str(c) for c in graph_constraints(g)]
    ['N must be divisible by 3 (reshape)']
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .builder import GraphBuilder
from .constraints import Constraint, collecting, nonnegative
from .dims import DimExpr, Symbol, free_symbols, linear_in, substitute
from .errors import ParityError
from .graph import Graph
from .ops import OP_TABLE
from .types import TensorType


class ShapeError(ParityError):
    """A concrete shape does not fit a type, or a symbol has no size where one is needed."""


class ShapeBindings:
    """Sizes of symbolic dimensions, one per symbol name, and what follows from them.

    ``sizes`` starts the bindings (e.g. sizes a user gave); ``error`` is the exception
    class raised on a mismatch (default :class:`ShapeError`; any ParityError subclass
    whose constructor takes one message).
    """

    def __init__(self, sizes: Mapping[str, int] | None = None, *, error: type[ParityError] = ShapeError):
        self.sizes: dict[str, int] = dict(sizes or {})
        self.error = error
        # (dim, size, what) of expression dims bind() could neither check nor solve yet
        self.pending: list[tuple[DimExpr, int, str]] = []

    def __repr__(self) -> str:
        return f"ShapeBindings({self.sizes})"

    # -- binding ----------------------------------------------------------------------------

    def bind(self, t: TensorType, shape: Sequence[int], what: str) -> TensorType:
        """Check that ``shape`` fits ``t`` and bind ``t``'s symbols; return ``t`` with ``shape``.

        ``what`` names the value in errors (``"input 0 of @f"``). Raises ``self.error`` when
        the rank or a static dim differs, or a symbol already has another size. A dim that
        is an expression (``B*4``) is checked against the sizes bound so far; one linear in
        a single unbound symbol binds it (``B*4+1`` of size 13 binds ``B`` to 3); any other
        waits in :attr:`pending` until :meth:`bind_inputs` has seen every input.
        """
        shape = tuple(int(size) for size in shape)
        if len(shape) != t.rank:
            raise self.error(f"{what} has shape {list(shape)}, expected {t}")
        expressions = []
        for dim, size in zip(t.shape, shape):
            if isinstance(dim, Symbol):
                bound = self.sizes.setdefault(dim.name, size)
                if bound != size:
                    raise self.error(f"{what}: dimension {dim} is {size} here but {bound} in an earlier input")
            elif isinstance(dim, DimExpr):
                expressions.append((dim, size, what))
            elif dim != size:
                raise self.error(f"{what} has shape {list(shape)}, expected {t}")
        self.pending.extend(expressions)
        self._settle()
        return t.with_shape(shape)

    def _settle(self) -> None:
        """Check or solve pending expression dims until none can make progress."""
        progress = True
        while progress:
            progress, waiting = False, []
            for dim, size, what in self.pending:
                value = substitute(dim, self.sizes)
                if isinstance(value, int):
                    if value != size:
                        given = ", ".join(f"{n} = {self.sizes[n]}" for n in sorted(free_symbols(dim)))
                        raise self.error(f"{what}: dimension {dim} is {size} here, but {given} makes it {value}")
                    continue
                (name, *more) = sorted(free_symbols(value))
                solved = None if more else linear_in(value, name)
                if solved is None:
                    waiting.append((dim, size, what))
                    continue
                a, b = solved
                if (size - b) % a or (size - b) // a < 0:
                    raise self.error(f"{what}: dimension {dim} is {size} here; no size of {name} gives that")
                self.sizes[name] = (size - b) // a
                progress = True
            self.pending = waiting

    def bind_unchecked(self, t: TensorType, shape: Sequence[int]) -> None:
        """Bind ``t``'s symbols not bound yet to their sizes in ``shape`` (a dim linear in one
        symbol solves it), checking nothing: for tracing a graph whose inputs already passed
        :meth:`bind` (every later shape follows from them)."""
        for dim, size in zip(t.shape, shape):
            if isinstance(dim, Symbol):
                self.sizes.setdefault(dim.name, size)
            elif isinstance(dim, DimExpr) and isinstance(size, int):
                # B*2 + 1 of size 7: B = 3 (a dim linear in one symbol not bound yet)
                unbound = free_symbols(dim) - self.sizes.keys()
                solved = linear_in(dim, min(unbound)) if len(unbound) == 1 else None
                if solved is not None and len(free_symbols(dim)) == 1:
                    self.sizes[min(unbound)] = (size - solved[1]) // solved[0]

    def bind_inputs(self, graph: Graph, shapes: Sequence[Sequence[int]]) -> list[TensorType]:
        """:meth:`bind` each graph input to its shape (``"input i of @name"`` in errors), then
        check what the graph relies on (:func:`graph_constraints`);
        return the inputs' concrete types. The caller checks the number of inputs."""
        types = [self.bind(value.type, shape, f"input {i} of @{graph.name}")
                 for i, (value, shape) in enumerate(zip(graph.inputs, shapes))]
        self.check_graph(graph)
        return types

    def check_graph(self, graph: Graph) -> None:
        """After binding every input of ``graph`` one by one: every expression dim must be
        decided, and the graph's constraints must hold (what :meth:`bind_inputs` ends with)."""
        for dim, size, what in self.pending:
            names = ", ".join(sorted(free_symbols(substitute(dim, self.sizes))))
            raise self.error(f"{what}: dimension {dim} is {size} here, but no input gives {names} its own "
                             "dimension, so the sizes cannot be told apart")
        self.check(_cached_constraints(graph), f"@{graph.name}")

    def check(self, constraints: Iterable[Constraint], what: str) -> None:
        """Raise ``self.error`` for the first constraint whose symbols are all bound and
        that fails at these sizes (constraints on unbound symbols wait)."""
        for constraint in constraints:
            if constraint.symbols <= self.sizes.keys():
                message = constraint.violation(self.sizes)
                if message is not None:
                    raise self.error(f"{what}: {message}")

    # -- resolving --------------------------------------------------------------------------

    def resolve(self, t: TensorType) -> TensorType:
        """``t`` with every bound symbol replaced by its size (unbound ones stay)."""
        if t.is_static:
            return t
        return t.with_shape(substitute(d, self.sizes) for d in t.shape)

    def resolve_attr(self, value: Any, *, strict: bool = False) -> Any:
        """An attribute value with bound symbols replaced, in tuples too. An unbound symbol
        stays, or with ``strict`` raises ``self.error``. A symbol bound to something other than
        an int (a tracer's symbolic size) gives what arithmetic on it gives."""
        if isinstance(value, DimExpr):
            resolved = substitute(value, self.sizes)
            if strict and isinstance(resolved, DimExpr):
                names = ", ".join(sorted(free_symbols(resolved)))
                raise self.error(f"dimension {names} has no size: no input binds it")
            return resolved
        if isinstance(value, tuple):
            return tuple(self.resolve_attr(v, strict=strict) for v in value)
        if isinstance(value, Graph) and self.sizes:
            return self.resolve_graph(value, strict=strict)
        return value

    def resolve_graph(self, graph: Graph, *, strict: bool = False) -> Graph:
        """A graph-valued attribute (a loop's body) with bound symbols replaced in its types and
        attributes: each node built again, so its type rule sees the sizes its operands have."""
        b = GraphBuilder(graph.name)
        env = {v: b.input(self.resolve(v.type)) for v in graph.inputs}
        for node in graph.nodes:
            with b.location(node.loc):
                new = b.make_node(node.op, [env[v] for v in node.inputs],
                                  self.resolve_attrs(node.attrs, strict=strict))
            b.nodes.append(new)
            env.update(zip(node.outputs, new.outputs))
        return b.build([env[v] for v in graph.outputs])

    def resolve_attrs(self, attrs: Mapping[str, Any], *, strict: bool = False) -> dict[str, Any]:
        """:meth:`resolve_attr` of every attribute."""
        return {name: self.resolve_attr(value, strict=strict) for name, value in attrs.items()}

    def unbound(self, t: TensorType) -> list[str]:
        """Names of ``t``'s symbols that have no size yet, in order, without repeats."""
        names = [name for d in t.shape if isinstance(d, DimExpr)
                 for name in sorted(free_symbols(d)) if name not in self.sizes]
        return list(dict.fromkeys(names))


def _cached_constraints(graph: Graph) -> list[Constraint]:
    """graph_constraints, remembered on the graph (keyed by its node list, which passes
    replace rather than edit) so that binding per call does not re-run the type rules."""
    key = (id(graph.nodes), len(graph.nodes), len(graph.assumptions))
    cached = graph.__dict__.get("_constraints")
    if cached is None or cached[0] != key:
        cached = (key, graph_constraints(graph))
        graph.__dict__["_constraints"] = cached
    return cached[1]


def graph_constraints(graph: Graph) -> list[Constraint]:
    """Every fact ``graph`` relies on that its types do not decide: its assumptions, then
    what its nodes' type rules require (origin: the op and its source line), and
    ``>= 0`` for each dimension expression of a value (a size is never negative)."""
    found: dict[tuple, Constraint] = {}

    def add(c: Constraint) -> None:
        if c.decided() is not True:
            found.setdefault((c.kind, c.lhs, c.rhs), c)

    for c in getattr(graph, "assumptions", ()):
        add(c)
    if all(v.type.is_static for v in graph.values()):
        return list(found.values())
    for node in graph.nodes:
        types = [v.type for v in node.inputs] + [v.type for v in node.outputs]
        if all(t.is_static for t in types):
            continue
        origin = node.op + (f" at {node.loc}" if node.loc is not None else "")
        with collecting() as required:
            OP_TABLE[node.op].result_types([v.type for v in node.inputs], node.attrs)
        for c in required:
            add(Constraint(c.kind, c.lhs, c.rhs, origin))
        for t in types:
            for dim in t.shape:
                if isinstance(dim, DimExpr) and not nonnegative(dim):
                    add(Constraint(">=", dim, 0, origin))
    return list(found.values())
