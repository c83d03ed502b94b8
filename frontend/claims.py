"""Whether a backend can run an IR node: its claims, looking through composites.

Example::

    >>> from parity.backends.registry import get_backend
    >>> from parity.frontend.claims import ClaimCheck
    >>> from parity.ir.builder import GraphBuilder
    >>> from parity.ir.dtypes import DType
    >>> from parity.ir.types import TensorType
    >>> b = GraphBuilder("g")
    >>> x = b.input(TensorType(DType.float32, (2,)))
    >>> graph = b.build([b.exp(x)])
    >>> ClaimCheck(get_backend("reference"))(graph.nodes[0]) is None
    True
"""

from __future__ import annotations

from ..backends.base import declined_by_predicate
from ..backends.registry import backend_names, get_backend
from ..ir.errors import ParityError
from ..ir.expand import decomposition
from ..ir.graph import Node
from ..ir.opdef import Kind
from ..ir.ops import OP_TABLE, node_dtype


class ClaimCheck:
    """Why a backend cannot run an IR node (None when it can), looking through composites."""

    def __init__(self, backend):
        self.backend = backend
        self.claims = backend.claims()
        self._composites: dict[tuple, str | None] = {}

    def __call__(self, node: Node) -> str | None:
        op = node.op
        claim = self.claims.get(op)
        dtype = node_dtype(node)  # the op's dtype as claims key it (select: on_true's, not the predicate's)
        claimed = claim is not None and dtype in claim.dtypes
        declined = self.declined_by_predicate(node) if claimed else None
        if claimed and declined is None:
            return None
        opdef = OP_TABLE[op]
        if declined is not None and opdef.kind is Kind.PRIMITIVE:
            return (f"backend {self.backend.name!r} claims the IR op {op!r} but its claim's predicate declines "
                    f"this node: {declined}")
        # Plugins may predate the declined fields: getattr.
        if claim is not None and opdef.kind is Kind.PRIMITIVE:
            why = (getattr(self.backend, "declined_cells", {}).get((op, dtype))
                   or getattr(self.backend, "declined_dtypes", {}).get(dtype))
            return (f"backend {self.backend.name!r} claims the IR op {op!r} but not for dtype {dtype.short}"
                    + (f": {why}" if why else ""))
        if opdef.kind is Kind.PRIMITIVE:
            why = getattr(self.backend, "declined", {}).get(op) or getattr(self.backend, "declined_dtypes", {}).get(dtype)
            return f"backend {self.backend.name!r} does not claim the IR op {op!r}" + (f": {why}" if why else "")
        # A composite not claimed (in this dtype, or declined by the predicate) runs if its decomposition does.
        key = (op, tuple(str(v.type) for v in node.inputs), repr(sorted(node.attrs.items())))
        if key not in self._composites:
            self._composites[key] = self._check_decomposition(node)
        why = self._composites[key]
        if why is not None and declined is not None:
            return f"the claim's predicate of backend {self.backend.name!r} declines {op!r} ({declined}), and {why}"
        return why

    def declined_by_predicate(self, node: Node) -> str | None:
        """Why the predicate of the backend's claim on ``node``'s op turns it down (None: it takes it)."""
        return declined_by_predicate(self.claims, node)

    def _check_decomposition(self, node: Node) -> str | None:
        expanded = decomposition(node.op, node.attrs, [v.type for v in node.inputs],
                                 out_types=[v.type for v in node.outputs], loc=node.loc)
        for inner in expanded.nodes:
            why = self(inner)
            if why is not None:
                return f"{why} (needed by the decomposition of {node.op!r})"
        return None


def backends_that_run(nodes: list[Node], exclude: str | None = None) -> list[str]:
    """The registered backends (other than ``exclude``) that claim every IR node of ``nodes``.

    Used by error messages, so that a fix line only suggests backends that would work;
    a backend that cannot be loaded here is left out.
    """
    found = []
    for name in backend_names():
        if name == exclude:
            continue
        try:
            check = ClaimCheck(get_backend(name))
        except (ParityError, ImportError):
            continue
        if all(check(node) is None for node in nodes):
            found.append(name)
    return found
