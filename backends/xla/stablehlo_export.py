"""Export of an IR graph for XLA: StableHLO text (MLIR) and ``jax.export``'s serialized form.

``parity.export(format="stablehlo" | "jax")`` reaches these through the backend
(``XlaBackend.export`` / ``export_serialized``). A static graph's text is what XLA receives
(:func:`export_stablehlo`); a graph with symbolic dims keeps them symbolic through
``jax.export``'s shape polymorphism (:mod:`.symbolic_export`).

Example::

    >>> from parity.ir import GraphBuilder, f32
    >>> b = GraphBuilder("sq"); x = b.input(f32[2])
    >>> print(export_header(b.build([b.mul(x, x)]), ["x"], None), end="")
    // parity export of @sq: @main takes the inputs as %arg0.. in this order
    // input %arg0: x: f32[2]
    // output 0: out0: f32[2]
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import jax

from ...ir.errors import ParityError
from ...ir.graph import Graph
from ...ir.shapes import ShapeBindings
from .lowering import graph_function
from .symbolic_export import export_symbolic, symbolic_names


def write_stablehlo(graph: Graph, path, *, input_names: Sequence[str] | None = None,
                    output_names: Sequence[str] | None = None, dim_names: dict[str, str] | None = None) -> str:
    """Write ``graph`` to ``path`` as StableHLO text and return the text. A header comment
    names each input (``%argN``) and output with its IR type. Symbolic dims stay symbolic
    (``tensor<?x32xf32>``) through ``jax.export``'s shape polymorphism, named by
    ``dim_names`` (:mod:`.symbolic_export`); the module asserts the graph's size
    constraints when it runs."""
    header = export_header(graph, input_names, output_names)
    if symbolic_names(graph):
        dims = ", ".join(f"{(dim_names or {}).get(n, n)}" for n in symbolic_names(graph))
        header += f"// dynamic dims: {dims} (jax.export shape polymorphism)\n"
        text = header + export_symbolic(graph, dim_names).mlir_module()
    else:
        text = header + export_stablehlo(graph)
    Path(path).write_text(text)
    return text


def write_serialized(graph: Graph, path, *, dim_names: dict[str, str] | None = None) -> jax.export.Exported:
    """Write ``graph`` to ``path`` as ``jax.export``'s serialized form and return the
    ``jax.export.Exported``. Another process runs the file with
    ``jax.export.deserialize(data).call(*inputs)``, at any size its dims allow: symbolic
    dims stay symbolic (:mod:`.symbolic_export`). The inputs are positional in the graph's
    order (no names are kept)."""
    exported = export_symbolic(graph, dim_names)
    Path(path).write_bytes(exported.serialize())
    return exported


def export_stablehlo(graph: Graph, shapes: dict[str, int] | None = None) -> str:
    """The StableHLO text (MLIR) of ``graph``, as XLA receives it.

    Symbolic dimensions need sizes: ``shapes={"B": 8}``.

    Example::

        >>> from parity.ir import GraphBuilder, f64
        >>> b = GraphBuilder(); x = b.input(f64[2])
        >>> "stablehlo.exponential" in export_stablehlo(b.build([b.exp(x)]))
        True
    """
    bindings = ShapeBindings(shapes)
    types = []
    for t in graph.input_types:
        missing = bindings.unbound(t)
        if missing:
            raise ParityError(f"export_stablehlo: give sizes for the symbolic dims {missing} "
                              f"(shapes={{'{missing[0]}': ...}}); StableHLO text here is static")
        types.append(bindings.resolve(t))
    with jax.enable_x64(True):
        specs = [jax.ShapeDtypeStruct(t.shape, t.dtype.numpy) for t in types]
        return jax.jit(graph_function(graph)).lower(*specs).as_text()


def export_header(graph: Graph, input_names: Sequence[str] | None, output_names: Sequence[str] | None) -> str:
    """MLIR comment lines naming the inputs (%argN) and outputs of the exported function."""
    lines = [f"// parity export of @{graph.name}: @main takes the inputs as %arg0.. in this order"]
    for i, value in enumerate(graph.inputs):
        lines.append(f"// input %arg{i}: {input_names[i] if input_names else f'in{i}'}: {value.type}")
    for i, value in enumerate(graph.outputs):
        lines.append(f"// output {i}: {output_names[i] if output_names else f'out{i}'}: {value.type}")
    return "\n".join(lines) + "\n"
