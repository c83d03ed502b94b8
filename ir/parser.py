"""The text format, reading side: ``parse(str(graph)) == graph``.

A small tokenizer and a recursive-descent parser for the grammar in docs/ir.md
("Text format"). The text is never executed; attribute values are read according to
the kind the op's :class:`AttrSpec` declares, and every node goes through its op's
type rule again, so the result types written in the text are checked, not trusted.

Example::

    >>> from parity.ir import parse
    >>> g = parse('''
    ... graph @f(%x: f32[B,4]) -> (f32[B,4]) {
    ...   %y: f32[B,4] = tanh(%x) loc("model.py", 12, "forward")
    ...   return %y
    ... }''')
    >>> g.nodes[0].op, str(g.nodes[0].loc)
    ('tanh', 'model.py:12 in forward')
"""

from __future__ import annotations

import difflib
import re
from typing import Any

import numpy as np

from .builder import GraphBuilder
from .dims import Dim, parse_dim
from .dtypes import DType
from .errors import ParseError, TypeRuleError
from .graph import Graph, SourceLoc, Value
from .lexer import Source, Token, tokenize
from .opdef import AttrKind, AttrSpec
from .sharding import GraphSharding, Mesh, PartitionSpec, ShardingError
from .types import TensorType

__all__ = ["parse"]


# Characters a dimension expression is written with (B*4, (S+1)//2, S%2); see ir/dims.py.
_DIM_CHAR = re.compile(r"[A-Za-z0-9_*/%+()-]")


def parse(text: str) -> Graph:
    """Read one graph in the text format (what ``str(graph)`` prints).

    Raises :class:`ParseError` with the 1-based line and column and a pointer line
    when the text does not follow the grammar, names an unknown op or value, defines
    a value twice, or declares types that disagree with the op's type rule.
    """
    return _Parser(text).parse_graph()


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.source = Source(text)
        self.tokens = tokenize(self.source)
        self.i = 0
        self.builder: GraphBuilder | None = None
        self.env: dict[str, tuple[Value, int]] = {}  # name -> (value, line it was defined on)

    # -- errors and positions ---------------------------------------------------------

    def error(self, message: str, pos: int) -> ParseError:
        return self.source.error(message, pos)

    def line_of(self, pos: int) -> int:
        return self.source.line_of(pos)

    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def advance(self) -> Token:
        token = self.tokens[self.i]
        self.i += 1
        return token

    def at(self, kind: str, text: str | None = None) -> bool:
        return self.tok.kind == kind and (text is None or self.tok.text == text)

    def accept(self, kind: str, text: str | None = None) -> Token | None:
        return self.advance() if self.at(kind, text) else None

    def expect(self, kind: str, text: str | None = None, what: str | None = None) -> Token:
        if self.at(kind, text):
            return self.advance()
        wanted = what or (repr(text) if text is not None else _KIND_NAMES[kind])
        raise self.error(f"expected {wanted}, found {_describe(self.tok)}", self.tok.pos)

    def comma_list(self, close: str, item) -> list:
        """Items separated by commas up to the closing punctuation (consumed)."""
        items = []
        if self.accept("PUNCT", close):
            return items
        while True:
            items.append(item())
            if self.accept("PUNCT", close):
                return items
            self.expect("PUNCT", ",", what=f"',' or {close!r}")

    # -- graph structure ----------------------------------------------------------------

    def parse_graph(self, *, nested: bool = False) -> Graph:
        """One graph; ``nested`` for a graph-valued attribute (it ends at its ``}``, not the text's end)."""
        self.expect("IDENT", "graph", what="'graph'")
        self.expect("PUNCT", "@")
        name = self.tok
        if name.kind not in ("IDENT", "STRING"):
            raise self.error(f"expected a graph name, found {_describe(name)}", name.pos)
        self.advance()
        self.builder = GraphBuilder(name.text)
        self.expect("PUNCT", "(")
        in_specs = self.comma_list(")", self.parse_param)
        self.expect("PUNCT", "->")
        self.expect("PUNCT", "(")
        declared = self.comma_list(")", lambda: (self.tok.pos, self.parse_type(), self.parse_sharding()))
        mesh_token = self.tok
        mesh = self.parse_mesh() if self.at("IDENT", "mesh") else None
        self.expect("PUNCT", "{", what="'{'" if mesh else "'mesh' or '{'")
        while not self.at("IDENT", "return"):
            if self.at("IDENT", "assume"):
                self.parse_assumption()
            else:
                self.parse_node()
        ret = self.advance()
        outputs = []
        if not self.at("PUNCT", "}"):
            outputs.append(self.use_value())
            while self.accept("PUNCT", ","):
                outputs.append(self.use_value())
        self.expect("PUNCT", "}", what="',' or '}'")
        if not nested:
            self.expect("EOF", what="the end of the text")
        if len(declared) != len(outputs):
            raise self.error(f"the header declares {len(declared)} result(s) but return gives {len(outputs)}",
                             ret.pos)
        for k, ((pos, t, _), value) in enumerate(zip(declared, outputs)):
            if t != value.type:
                raise self.error(f"result {k} is declared {t} in the header but return gives {value.type}", pos)
        graph = self.builder.build(outputs)
        out_specs = [spec for _, _, spec in declared]
        if mesh is None:
            if any(in_specs) or any(out_specs):
                raise self.error("the header gives partition specs ('sharding[...]') but no mesh; add one "
                                 "after the results: -> (...) mesh[data=4] {", mesh_token.pos)
            return graph
        return graph.with_sharding(GraphSharding(mesh, in_specs, out_specs))

    def parse_param(self) -> PartitionSpec | None:
        token = self.expect("VALUE", what="a parameter like %0")
        self.expect("PUNCT", ":")
        self.define(token, self.builder.input(self.parse_type()))
        return self.parse_sharding()

    # -- sharding (docs/sharding.md) ---------------------------------------------------

    def parse_sharding(self) -> PartitionSpec | None:
        """An optional ``sharding[...]`` after a header type."""
        if not self.accept("IDENT", "sharding"):
            return None
        return self.parse_spec()

    def parse_spec(self) -> PartitionSpec:
        """``[data, _]``, ``[(data, model)]``: read by ir/sharding.py from the bracketed text."""
        start = self.expect("PUNCT", "[", what="'[' (a partition spec like [data, _])")
        while not self.at("PUNCT", "]"):
            if self.at("EOF"):
                raise self.error("unterminated partition spec (missing ']')", start.pos)
            self.advance()
        end = self.advance()
        try:
            return PartitionSpec.parse(self.text[start.pos: end.pos + 1])
        except ShardingError as exc:
            raise self.error(str(exc), start.pos) from None

    def parse_mesh(self) -> Mesh:
        """``mesh[data=4, model=2]``."""
        self.expect("IDENT", "mesh")
        start = self.expect("PUNCT", "[", what="'[' (a mesh like [data=4, model=2])")

        def axis():
            name = self.expect("IDENT", what="a mesh axis name")
            self.expect("PUNCT", "=")
            size = self.expect("INT", what="an axis size")
            return name.text, int(size.text)

        axes = self.comma_list("]", axis)
        try:
            return Mesh(axes)
        except ShardingError as exc:
            raise self.error(str(exc), start.pos) from None

    def parse_node(self) -> None:
        declared = []  # (name token, type position, type)
        while True:
            name = self.expect("VALUE", what="a value like %3 (or 'return')")
            self.expect("PUNCT", ":")
            declared.append((name, self.tok.pos, self.parse_type()))
            if not self.accept("PUNCT", ","):
                break
        self.expect("PUNCT", "=")
        op = self.expect("IDENT", what="an op name")
        from .ops import OP_TABLE

        opdef = OP_TABLE.get(op.text)
        if opdef is None:
            close = difflib.get_close_matches(op.text, OP_TABLE, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise self.error(f"unknown op {op.text!r}{hint}", op.pos)
        self.expect("PUNCT", "(")
        operands = self.comma_list(")", self.use_value)
        attrs = self.parse_attrs(opdef) if self.at("PUNCT", "{") else {}
        loc = self.parse_loc() if self.at("IDENT", "loc") else None
        try:
            with self.builder.location(loc):
                node = self.builder.make_node(op.text, operands, attrs)
        except TypeRuleError as exc:
            raise self.error(str(exc), op.pos) from None
        if len(node.outputs) != len(declared):
            raise self.error(f"{op.text} has {len(node.outputs)} result(s), the line declares {len(declared)}",
                             declared[0][0].pos)
        for k, ((name, pos, t), value) in enumerate(zip(declared, node.outputs)):
            if t != value.type:
                raise self.error(f"result {k} of {op.text} is declared {t} but its type rule gives {value.type}",
                                 pos)
            self.define(name, value)
        self.builder.nodes.append(node)

    def parse_assumption(self) -> None:
        """``assume B*4 == N*2 "origin"``, ``assume S >= 1``, ``assume divisible(S, 8)``."""
        start = self.expect("IDENT", "assume")
        if self.at("IDENT", "divisible") or self.at("IDENT", "broadcast"):
            kind = self.advance().text
            self.expect("PUNCT", "(")
            lhs = self.parse_dim()
            self.expect("PUNCT", ",")
            rhs = self.parse_dim()
            self.expect("PUNCT", ")")
        else:
            lhs = self.parse_dim()
            first = self.expect("PUNCT", what="'==' or '>='")
            second = self.expect("PUNCT", "=", what="'==' or '>='")
            kind = first.text + second.text
            if kind not in ("==", ">="):
                raise self.error(f"expected '==' or '>=', found {kind!r}", first.pos)
            rhs = self.parse_dim()
        origin = self.advance().text if self.at("STRING") else ""
        try:
            self.builder.assume(kind, lhs, rhs, origin)
        except ValueError as exc:  # pragma: no cover - kinds are checked above
            raise self.error(str(exc), start.pos) from None

    def define(self, token: Token, value: Value) -> None:
        if token.text in self.env:
            line = self.env[token.text][1]
            raise self.error(f"value %{token.text} is already defined on line {line}", token.pos)
        self.env[token.text] = (value, self.line_of(token.pos))

    def use_value(self) -> Value:
        token = self.expect("VALUE", what="a value like %0")
        entry = self.env.get(token.text)
        if entry is None:
            raise self.error(f"value %{token.text} is not defined before this use", token.pos)
        return entry[0]

    def parse_type(self) -> TensorType:
        token = self.expect("IDENT", what="a type like f32[2,3]")
        dtype = self.dtype_of(token)
        self.expect("PUNCT", "[")
        return TensorType(dtype, tuple(self.comma_list("]", self.parse_dim)))

    def dtype_of(self, token: Token) -> DType:
        try:
            return DType.from_short(token.text)
        except ValueError as exc:
            raise self.error(str(exc), token.pos) from None

    def parse_dim(self) -> Dim:
        """A size, a symbol or an expression (``B*4``). The expression is read from the raw
        text up to a ``,``, ``]``, blank or unbalanced ``)``: the tokens do not split it
        the way ir/dims.py does (``S%2`` would look like a value)."""
        first, text = self.tok, self.text
        end, depth = first.pos, 0
        while end < len(text) and _DIM_CHAR.match(text[end]):
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            if depth < 0:
                break
            end += 1
        expected = "expected a dimension (a size >= 0 or a symbol name), found"
        if end == first.pos or first.kind == "EOF":
            raise self.error(f"{expected} {_describe(first)}", first.pos)
        while self.tok.pos < end:
            token = self.advance()
            if token.pos + len(token.text) + (token.kind == "VALUE") > end or token.kind == "STRING":
                raise self.error(f"{expected} {_describe(token)}", token.pos)
        try:
            dim = parse_dim(text[first.pos:end])
        except (ValueError, ZeroDivisionError) as exc:
            raise self.error(f"malformed dimension: {exc}", first.pos) from None
        if isinstance(dim, int) and dim < 0:
            raise self.error(f"{expected} {_describe(first)}", first.pos)
        return dim

    def parse_loc(self) -> SourceLoc:
        self.expect("IDENT", "loc")
        self.expect("PUNCT", "(")
        file = self.expect("STRING", what="a quoted file name").text
        self.expect("PUNCT", ",")
        line = int(self.expect("INT", what="a line number").text)
        function = ""
        if self.accept("PUNCT", ","):
            function = self.expect("STRING", what="a quoted function name").text
        self.expect("PUNCT", ")")
        return SourceLoc(file, line, function)

    # -- attributes ---------------------------------------------------------------------

    def parse_attrs(self, opdef) -> dict[str, Any]:
        self.expect("PUNCT", "{")
        specs, attrs = opdef.attr_specs, {}

        def one():
            key = self.expect("IDENT", what="an attribute name")
            spec = specs.get(key.text)
            if spec is None:
                known = ", ".join(specs) or "none"
                raise self.error(f"{opdef.name} has no attribute {key.text!r}; it takes: {known}", key.pos)
            if key.text in attrs:
                raise self.error(f"attribute {key.text!r} is given twice", key.pos)
            self.expect("PUNCT", "=")
            attrs[key.text] = self.parse_attr_value(spec)

        self.comma_list("}", one)
        return attrs

    def parse_attr_value(self, spec: AttrSpec) -> Any:
        kind = spec.kind
        if kind is AttrKind.INT:
            return self.parse_int()
        if kind is AttrKind.INTS:
            self.expect("PUNCT", "[", what="'[' (a list of ints)")
            return tuple(self.comma_list("]", self.parse_int))
        if kind is AttrKind.SHAPE:
            self.expect("PUNCT", "[", what="'[' (a shape)")
            return tuple(self.comma_list("]", self.parse_dim))
        if kind is AttrKind.PAIRS:
            self.expect("PUNCT", "[", what="'[' (a list of pairs)")
            return tuple(self.comma_list("]", self.parse_pair))
        if kind is AttrKind.FLOAT:
            return self.parse_float()
        if kind is AttrKind.BOOL:
            return self.parse_bool()
        if kind is AttrKind.STR:
            return self.expect("STRING", what="a quoted string").text
        if kind is AttrKind.DTYPE:
            return self.dtype_of(self.expect("IDENT", what="a dtype like f32"))
        if kind is AttrKind.ARRAY:
            return self.parse_dense()
        if kind is AttrKind.SPEC:
            return self.parse_spec()
        if kind is AttrKind.GRAPH:
            return self.parse_nested_graph()
        raise AssertionError(f"attribute kind {kind} has no text form")  # pragma: no cover

    def parse_nested_graph(self) -> Graph:
        """A graph-valued attribute: its values are numbered on their own and it reads nothing of
        the enclosing graph, so it is parsed with a fresh builder and value table."""
        if not self.at("IDENT", "graph"):
            raise self.error(f"expected a nested graph ('graph @body(...) -> (...) {{ ... }}'), "
                             f"found {_describe(self.tok)}", self.tok.pos)
        saved = self.builder, self.env
        self.env = {}
        try:
            return self.parse_graph(nested=True)
        finally:
            self.builder, self.env = saved

    def parse_int(self) -> int:
        return int(self.expect("INT", what="an integer").text)

    def parse_pair(self, parse_item=None, brackets: str = "[]", example: str = "[0, 1]") -> tuple:
        """Two items in brackets: an int pair ``[0, 1]``, or a complex element ``(1.5, -2.0)``."""
        parse_item = parse_item or self.parse_int
        self.expect("PUNCT", brackets[0], what=f"{brackets[0]!r} (a pair like {example})")
        first = parse_item()
        self.expect("PUNCT", ",")
        second = parse_item()
        self.expect("PUNCT", brackets[1])
        return first, second

    def parse_float(self) -> float:
        token = self.advance()
        if token.kind in ("FLOAT", "INT") or (token.kind == "IDENT" and token.text in ("inf", "nan")):
            return float(token.text)
        raise self.error(f"expected a float (like 1.5, -0.0, inf, nan), found {_describe(token)}", token.pos)

    def parse_bool(self) -> bool:
        token = self.advance()
        if token.kind == "IDENT" and token.text in ("true", "false"):
            return token.text == "true"
        raise self.error(f"expected true or false, found {_describe(token)}", token.pos)

    def parse_dense(self) -> np.ndarray:
        self.expect("IDENT", "dense", what="dense<type [...]> or dense<type 0x...>")
        self.expect("PUNCT", "<")
        type_pos = self.tok.pos
        t = self.parse_type()
        if not t.is_static:
            raise self.error(f"a dense array needs a static shape, got {t}", type_pos)
        np_dtype = t.dtype.numpy
        if self.at("HEX"):
            token = self.advance()
            raw = token.text[2:]
            expected = t.numel * np_dtype.itemsize * 2
            if len(raw) != expected:
                raise self.error(f"{t} needs {expected} hex digits, found {len(raw)}", token.pos)
            flat = np.frombuffer(bytes.fromhex(raw), dtype=np_dtype.newbyteorder("<")).astype(np_dtype)
        else:
            start = self.expect("PUNCT", "[", what="'[' or 0x... (the array's elements)")
            items = self.comma_list("]", lambda: self.parse_element(t.dtype))
            if len(items) != t.numel:
                raise self.error(f"{t} has {t.numel} element(s), found {len(items)}", start.pos)
            flat = self.to_array(items, t.dtype, start.pos)
        self.expect("PUNCT", ">")
        return flat.reshape(t.shape)

    def to_array(self, items: list, dtype: DType, pos: int) -> np.ndarray:
        if dtype.is_complex:  # items are (real, imaginary) pairs; each part must be exact
            parts = self.to_array([part for pair in items for part in pair], dtype.real_dtype, pos)
            flat = np.empty(len(items), dtype.numpy)
            flat.real, flat.imag = parts[0::2], parts[1::2]  # not re + 1j*im: 1j*inf has a NaN part
            return flat
        if not dtype.is_float:
            return np.array(items, dtype=object).astype(dtype.numpy)
        wide = np.array(items, dtype=np.float64)
        with np.errstate(over="ignore"):
            flat = wide.astype(dtype.numpy)
        inexact = ~((flat.astype(np.float64) == wide) | np.isnan(wide))
        if inexact.any():
            bad = float(wide[inexact][0])
            raise self.error(f"{bad!r} is not exactly representable in {dtype.short}", pos)
        return flat

    def parse_element(self, dtype: DType) -> Any:
        if dtype.is_complex:  # (real, imaginary)
            return self.parse_pair(self.parse_float, "()", "(1.5, -2.0)")
        if dtype.is_float:
            return self.parse_float()
        if dtype.is_bool:
            return self.parse_bool()
        token = self.tok
        value = self.parse_int()
        info = dtype.iinfo
        if not info.min <= value <= info.max:
            raise self.error(f"{value} does not fit in {dtype.short} [{info.min}, {info.max}]", token.pos)
        return value


_KIND_NAMES = {
    "VALUE": "a value name like %0", "IDENT": "a name", "INT": "an integer", "FLOAT": "a float",
    "STRING": "a quoted string", "HEX": "hex digits", "PUNCT": "punctuation", "EOF": "the end of the text",
}


def _describe(token: Token) -> str:
    if token.kind == "EOF":
        return "the end of the text"
    if token.kind == "STRING":
        return "a string"
    if token.kind == "VALUE":
        return f"%{token.text}"
    return repr(token.text)
