"""Binding symbolic dimensions to sizes, and resolving types and attributes with them.

A graph's types may name dimensions (``f32[B,16]``). At run time every ``B`` must have
one size. :class:`ShapeBindings` is the one place that binds them: it checks a concrete
shape against a type (rank, static dims, one size per symbol), remembers each symbol's
size, and resolves types and attributes (``reshape``'s ``shape`` may hold ``B``) to
concrete ones. The interpreter and every backend bind through it; constraints on
symbols are checked here too when the IR grows them.

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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .errors import ParityError
from .types import Symbol, TensorType

if TYPE_CHECKING:  # pragma: no cover
    from .graph import Graph


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

    def __repr__(self) -> str:
        return f"ShapeBindings({self.sizes})"

    # -- binding ----------------------------------------------------------------------------

    def bind(self, t: TensorType, shape: Sequence[int], what: str) -> TensorType:
        """Check that ``shape`` fits ``t`` and bind ``t``'s symbols; return ``t`` with ``shape``.

        ``what`` names the value in errors (``"input 0 of @f"``). Raises ``self.error`` when
        the rank or a static dim differs, or a symbol already has another size.
        """
        shape = tuple(int(size) for size in shape)
        if len(shape) != t.rank:
            raise self.error(f"{what} has shape {list(shape)}, expected {t}")
        for dim, size in zip(t.shape, shape):
            if isinstance(dim, Symbol):
                bound = self.sizes.setdefault(dim.name, size)
                if bound != size:
                    raise self.error(f"{what}: dimension {dim} is {size} here but {bound} in an earlier input")
            elif dim != size:
                raise self.error(f"{what} has shape {list(shape)}, expected {t}")
        return t.with_shape(shape)

    def bind_unchecked(self, t: TensorType, shape: Sequence[int]) -> None:
        """Bind ``t``'s symbols not bound yet to their sizes in ``shape``, checking nothing:
        for tracing a graph whose inputs already passed :meth:`bind` (every later shape
        follows from them)."""
        for dim, size in zip(t.shape, shape):
            if isinstance(dim, Symbol):
                self.sizes.setdefault(dim.name, size)

    def bind_inputs(self, graph: Graph, shapes: Sequence[Sequence[int]]) -> list[TensorType]:
        """:meth:`bind` each graph input to its shape (``"input i of @name"`` in errors);
        return the inputs' concrete types. The caller checks the number of inputs."""
        return [self.bind(value.type, shape, f"input {i} of @{graph.name}")
                for i, (value, shape) in enumerate(zip(graph.inputs, shapes))]

    # -- resolving --------------------------------------------------------------------------

    def resolve(self, t: TensorType) -> TensorType:
        """``t`` with every bound symbol replaced by its size (unbound ones stay)."""
        if t.is_static:
            return t
        return t.with_shape(self.sizes.get(d.name, d) if isinstance(d, Symbol) else d for d in t.shape)

    def resolve_attr(self, value: Any, *, strict: bool = False) -> Any:
        """An attribute value with bound symbols replaced, in tuples too. An unbound symbol
        stays, or with ``strict`` raises ``self.error``."""
        if isinstance(value, Symbol):
            if value.name in self.sizes:
                return self.sizes[value.name]
            if strict:
                raise self.error(f"dimension {value} has no size: no input binds it")
            return value
        if isinstance(value, tuple):
            return tuple(self.resolve_attr(v, strict=strict) for v in value)
        return value

    def resolve_attrs(self, attrs: Mapping[str, Any], *, strict: bool = False) -> dict[str, Any]:
        """:meth:`resolve_attr` of every attribute."""
        return {name: self.resolve_attr(value, strict=strict) for name, value in attrs.items()}

    def unbound(self, t: TensorType) -> list[str]:
        """Names of ``t``'s symbols that have no size yet, in order, without repeats."""
        names = [d.name for d in t.shape if isinstance(d, Symbol) and d.name not in self.sizes]
        return list(dict.fromkeys(names))
