"""The text format, printing side. The grammar is in docs/ir.md; ir/parser.py reads it.

Values are numbered in order (inputs first), so the text is canonical: two graphs
that compute the same thing the same way print identically.

Example::

    >>> from parity.ir import GraphBuilder, f32
    >>> b = GraphBuilder("f")
    >>> x = b.input(f32[2])
    >>> print(b.build([b.exp(x)]))
    graph @f(%0: f32[2]) -> (f32[2]) {
      %1: f32[2] = exp(%0)
      return %1
    }
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from .dtypes import DType
from .opdef import AttrKind
from .ops import OP_TABLE
from .sharding import PartitionSpec
from .types import DimExpr

# Constants up to this many elements print as a readable list; larger ones as raw hex.
INLINE_ELEMENTS = 16

# Graph names matching this print bare (`@main`); any other name is quoted (`@"my fn"`).
BARE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")

# String escapes; any other non-printable character prints as \u{hex}.
ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}

NESTED_INDENT = "    "  # a nested graph's lines, under the node that holds it

UNDEFINED = "%?"  # how a tolerant listing shows an operand that the graph never defines


def print_graph(graph, *, locations: bool = True) -> str:
    """The canonical text of ``graph`` (what ``str(graph)`` returns)."""
    return "\n".join(graph_lines(graph, locations=locations))


def graph_lines(graph, *, locations: bool = True, tolerant: bool = False) -> list[str]:
    """The listing as lines: the header, one line per node (node i is line i + 1), return, ``}``.

    ``tolerant`` is for error messages about broken graphs (the verifier): an operand
    the graph never defines prints as ``%?`` and an unprintable attribute as its repr,
    instead of raising.
    """
    names: dict[int, str] = {}
    for value in graph.values():
        names.setdefault(id(value), f"%{len(names)}")

    def name_of(value) -> str:
        name = names.get(id(value))
        if name is None:
            if not tolerant:
                raise ValueError(f"{value!r} is used but never defined in @{graph.name}; run parity.ir.verify")
            return UNDEFINED
        return name

    def attr_text(value, kind) -> str:
        if kind is AttrKind.GRAPH and hasattr(value, "nodes"):
            # A nested graph (a loop's body): its own numbering, its lines indented under the node.
            # The node's listing line holds all of them, so node i is still line i + 1.
            inner = graph_lines(value, locations=locations, tolerant=tolerant)
            return "\n".join([inner[0], *(NESTED_INDENT + line for line in inner[1:])])
        try:
            return format_attr(value, kind)
        except (TypeError, ValueError):
            if not tolerant:
                raise
            return f"<{value!r}>"

    def type_of(value) -> str:
        # a broken graph (tolerant) may hold an operand that is no Value: it has no type to print
        return str(value.type) if hasattr(value, "type") or not tolerant else "?"

    sharding = graph.sharding
    in_specs = sharding.padded(len(graph.inputs), 0).inputs if sharding else ()
    out_specs = sharding.padded(0, len(graph.outputs)).outputs if sharding else ()

    def spec_of(specs, k: int) -> str:
        spec = specs[k] if k < len(specs) else None
        return "" if spec is None else f" sharding{spec}"

    params = ", ".join(f"{name_of(v)}: {type_of(v)}{spec_of(in_specs, k)}" for k, v in enumerate(graph.inputs))
    results = ", ".join(f"{type_of(v)}{spec_of(out_specs, k)}" for k, v in enumerate(graph.outputs))
    mesh = f" mesh{sharding.mesh}" if sharding else ""
    lines = [f"graph @{format_graph_name(graph.name)}({params}) -> ({results}){mesh} {{"]
    for node in graph.nodes:
        lhs = ", ".join(f"{name_of(v)}: {type_of(v)}" for v in node.outputs)
        args = ", ".join(name_of(v) for v in node.inputs)
        text = f"  {lhs} = {node.op}({args})"
        specs = OP_TABLE[node.op].attr_specs if node.op in OP_TABLE else {}
        if node.attrs:
            items = []
            for key, value in node.attrs.items():
                spec = specs.get(key)
                items.append(f"{key}={attr_text(value, spec.kind if spec else None)}")
            text += " {" + ", ".join(items) + "}"
        if locations and node.loc is not None:
            text += " " + format_loc(node.loc)
        lines.append(text)
    for assumption in getattr(graph, "assumptions", ()):
        text = f"  assume {assumption.to_text()}"
        if assumption.origin:
            text += f" {quote(assumption.origin)}"
        lines.append(text)
    lines.append("  return " + ", ".join(name_of(v) for v in graph.outputs))
    lines.append("}")
    return lines


def format_graph_name(name: str) -> str:
    return name if BARE_NAME.match(name) else quote(name)


def format_loc(loc) -> str:
    text = f"loc({quote(loc.file)}, {loc.line}"
    return text + (f", {quote(loc.function)})" if loc.function else ")")


def format_attr(value: Any, kind: AttrKind | None) -> str:
    if isinstance(value, PartitionSpec):
        return str(value)
    if kind is AttrKind.ARRAY or isinstance(value, np.ndarray):
        return _format_array(value)
    if kind is AttrKind.FLOAT or isinstance(value, float):
        return format_float(float(value))
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, DType):
        return value.short
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, (int, DimExpr)):
        return str(value)
    if isinstance(value, tuple):
        return "[" + ", ".join(format_attr(v, None) for v in value) + "]"
    raise TypeError(f"cannot print attribute value {value!r}")


def format_float(x: float) -> str:
    """repr() round-trips every float64 exactly; nan/inf get plain names."""
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return repr(x)


def _format_array(array: np.ndarray) -> str:
    dtype = DType.from_numpy(array.dtype)
    head = f"{dtype.short}[{','.join(str(d) for d in array.shape)}]"
    if array.size <= INLINE_ELEMENTS and not _has_odd_nan(array, dtype):
        flat = array.reshape(-1)
        if dtype.is_float:
            body = ", ".join(format_float(float(x)) for x in flat.astype(np.float64))
        elif dtype.is_complex:  # (real, imaginary) pairs
            body = ", ".join(f"({format_float(float(x.real))}, {format_float(float(x.imag))})" for x in flat)
        elif dtype.is_bool:
            body = ", ".join("true" if x else "false" for x in flat)
        else:
            body = ", ".join(str(int(x)) for x in flat)
        return f"dense<{head} [{body}]>"
    # Little-endian raw bytes: exact for every dtype, NaN payloads included.
    return f"dense<{head} 0x{array_bytes(array).hex()}>"


def array_bytes(array: np.ndarray) -> bytes:
    """The array's elements as little-endian bytes, row-major (the hex form's payload)."""
    return np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"), copy=False).tobytes()


def _has_odd_nan(array: np.ndarray, dtype: DType) -> bool:
    """A NaN whose bits differ from the canonical ``nan`` (sign, payload) only survives in hex."""
    if dtype.is_complex:  # each part on its own
        parts = DType.from_numpy(array.real.dtype)
        return _has_odd_nan(array.real, parts) or _has_odd_nan(array.imag, parts)
    if not dtype.is_float:
        return False
    nans = array[np.isnan(array)]
    if nans.size == 0:
        return False
    canonical = np.array(np.nan, dtype=array.dtype).tobytes()
    return any(x.tobytes() != canonical for x in nans)


def quote(text: str) -> str:
    """A double-quoted string literal the parser reads back to ``text`` exactly."""
    out = []
    for ch in text:
        escaped = ESCAPES.get(ch)
        if escaped is None and not ch.isprintable():
            escaped = f"\\u{{{ord(ch):x}}}"
        out.append(escaped or ch)
    return '"' + "".join(out) + '"'
