"""The text format, printing side. The grammar is in docs/ir.md; ir/parser.py reads it.

Values are numbered in order (inputs first), so the text is canonical: two graphs
that compute the same thing the same way print identically.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .dtypes import DType
from .opdef import AttrKind
from .types import Symbol

# Constants up to this many elements print as a readable list; larger ones as raw hex.
INLINE_ELEMENTS = 16


def print_graph(graph, *, locations: bool = True) -> str:
    from .ops import OP_TABLE

    names: dict[int, str] = {}

    def name_of(value) -> str:
        return names[id(value)]

    for value in graph.values():
        names[id(value)] = f"%{len(names)}"
    params = ", ".join(f"{name_of(v)}: {v.type}" for v in graph.inputs)
    results = ", ".join(str(v.type) for v in graph.outputs)
    lines = [f"graph @{graph.name}({params}) -> ({results}) {{"]
    for node in graph.nodes:
        lhs = ", ".join(f"{name_of(v)}: {v.type}" for v in node.outputs)
        args = ", ".join(name_of(v) for v in node.inputs)
        text = f"  {lhs} = {node.op}({args})"
        specs = OP_TABLE[node.op].attr_specs if node.op in OP_TABLE else {}
        if node.attrs:
            items = []
            for key, value in node.attrs.items():
                spec = specs.get(key)
                items.append(f"{key}={format_attr(value, spec.kind if spec else None)}")
            text += " {" + ", ".join(items) + "}"
        if locations and node.loc is not None:
            loc = node.loc
            text += f" loc({_quote(loc.file)}, {loc.line}"
            text += f", {_quote(loc.function)})" if loc.function else ")"
        lines.append(text)
    lines.append("  return " + ", ".join(name_of(v) for v in graph.outputs))
    lines.append("}")
    return "\n".join(lines)


def format_attr(value: Any, kind: AttrKind | None) -> str:
    if kind is AttrKind.ARRAY or isinstance(value, np.ndarray):
        return _format_array(value)
    if kind is AttrKind.FLOAT or isinstance(value, float):
        return format_float(float(value))
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, DType):
        return value.short
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, (int, Symbol)):
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
    if array.size <= INLINE_ELEMENTS:
        flat = array.reshape(-1)
        if dtype.is_float:
            body = ", ".join(format_float(float(x)) for x in flat.astype(np.float64))
        elif dtype.is_bool:
            body = ", ".join("true" if x else "false" for x in flat)
        else:
            body = ", ".join(str(int(x)) for x in flat)
        return f"dense<{head} [{body}]>"
    # Little-endian raw bytes: exact for every dtype, NaN payloads included.
    raw = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
    return f"dense<{head} 0x{raw.hex()}>"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
