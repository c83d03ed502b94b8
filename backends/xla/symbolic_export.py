"""StableHLO of a graph with symbolic dims, through ``jax.export``'s shape polymorphism.

Each IR symbol becomes a JAX dimension variable, named as the user named it
(``dim_names``, e.g. ``{"s0": "batch"}``); IR dim expressions (``B*4``, ``S//2``, ``N % 3``)
become JAX's (``4*batch``, ``floordiv(S, 2)``, ``mod(N, 3)``) while the xla rules trace
(:mod:`.traced_sizes`). What the graph relies on about its sizes (its constraints: torch's
bounds, a reshape's divisibility) becomes ``jax.export`` symbolic constraints, which the
exported module checks as shape assertions when it is called; a "1 or S" broadcast fact
has no such form and is refused by name.

The module takes inputs of any size its dims allow (``tensor<?x?x32xf32>``): compile it
for a shape by refining the shapes (``jax.export`` does it in :meth:`Exported.call`).

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, Symbol, f32
    >>> B = Symbol("B")
    >>> b = GraphBuilder("f"); x = b.input(f32[B, 4])
    >>> exported = export_symbolic(b.build([b.reshape(x, shape=(B * 2, 2))]), {"B": "batch"})
    >>> "tensor<?x4xf32>" in exported.mlir_module()
    True
    >>> [a.shape for a in exported.call(np.ones((3, 4), np.float32))]
    [(6, 2)]
"""

from __future__ import annotations

from collections.abc import Mapping

import jax
from jax import export as jax_export

from ...ir.constraints import Constraint
from ...ir.dims import Symbol, substitute
from ...ir.errors import ParityError
from ...ir.graph import Graph
from ...ir.shapes import graph_constraints
from .lowering import run_graph
from .traced_sizes import TracedSizes


def symbolic_names(graph: Graph) -> list[str]:
    """The IR symbols of ``graph``'s input types, in order of first appearance."""
    names = [d.name for t in graph.input_types for d in t.shape if isinstance(d, Symbol)]
    return list(dict.fromkeys(names))


def export_symbolic(graph: Graph, dim_names: Mapping[str, str] | None = None) -> jax_export.Exported:
    """``graph`` exported by ``jax.export`` with its input symbols as dimension variables.

    ``dim_names`` renames IR symbols (``{"s0": "batch"}``); a symbol not named keeps its
    IR name. Raises :class:`ParityError` when an input dim is an expression of symbols
    (``f32[B*2]``: no dimension variable of its own) or a constraint has no JAX form."""
    for i, t in enumerate(graph.input_types):
        for d in t.shape:
            if not isinstance(d, (int, Symbol)):
                raise ParityError(f"StableHLO export of @{graph.name}: input {i} has the dimension {d}, an "
                                  "expression; jax.export needs each input dim to be a size or one symbol")
    names = {name: (dim_names or {}).get(name, name) for name in symbolic_names(graph)}
    # First without constraints: JAX's spelling of each constraint's expressions needs the variables.
    plain = dict(zip(names, jax_export.symbolic_shape(",".join(names.values()))))
    constraints = [_jax_constraint(c, plain, graph) for c in graph_constraints(graph)]
    scope = jax_export.SymbolicScope([c for c in constraints if c is not None])
    variables = dict(zip(names, jax_export.symbolic_shape(",".join(names.values()), scope=scope)))
    specs = [jax.ShapeDtypeStruct(tuple(substitute(d, variables) for d in t.shape), t.dtype.numpy)
             for t in graph.input_types]

    def traced(*args):
        return run_graph(graph, args, bindings=TracedSizes())

    traced.__name__ = graph.name or "graph"
    with jax.enable_x64(True):
        return jax_export.export(jax.jit(traced))(*specs)


def _jax_constraint(constraint: Constraint, variables: Mapping[str, object], graph: Graph) -> str | None:
    """The ``jax.export`` text of one constraint (None when every size satisfies it)."""
    lhs, rhs = substitute(constraint.lhs, variables), substitute(constraint.rhs, variables)
    if constraint.kind == ">=":
        if isinstance(rhs, int) and rhs <= 0 and not isinstance(lhs, int) and _is_variable(lhs, variables):
            return None  # a dimension variable is >= 1 already
        return f"{lhs} >= {rhs}"
    if constraint.kind == "==":
        return f"{lhs} == {rhs}"
    if constraint.kind == "divisible":
        return f"mod({lhs}, {rhs}) == 0"
    raise ParityError(f"StableHLO export of @{graph.name} relies on {constraint}, which jax.export cannot "
                      "state; export with that dim static, or use format='onnx' (checked at run time there)")


def _is_variable(dim, variables: Mapping[str, object]) -> bool:
    return any(dim is v for v in variables.values())
