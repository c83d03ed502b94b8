"""parity's intermediate representation: types, the op table, graphs, the interpreter.

Example::

    >>> import numpy as np
    >>> from parity import ir
    >>> b = ir.GraphBuilder("f")
    >>> x = b.input(ir.f32[2])
    >>> g = b.build([b.tanh(x)])
    >>> ir.evaluate(g, [np.zeros(2, np.float32)])[0].tolist()
    [0.0, 0.0]
"""

from .builder import GraphBuilder
from .context import NodeContext, ReferenceContext
from .dims import DimExpr, parse_dim
from .dtypes import DType, bf16, bool_, c64, c128, f16, f32, f64, i8, i16, i32, i64, u8, u32
from .errors import ParityError, ParseError, TypeRuleError, UnsupportedOpError, VerifyError
from .expand import DecompositionError, decomposition
from .graph import Graph, Node, SourceLoc, Value
from .interpreter import evaluate
from .opdef import Accuracy, AttrKind, AttrSpec, Group, Kind, OpDef
from .ops import OP_TABLE, composites, primitives
from .parser import parse
from .shapes import ShapeBindings, ShapeError
from .types import Symbol, TensorType
from .verifier import verify

__all__ = [
    "Accuracy", "AttrKind", "AttrSpec", "DType", "DecompositionError", "DimExpr", "Graph", "GraphBuilder", "Group",
    "Kind", "Node", "NodeContext", "OP_TABLE", "OpDef", "ParityError", "ParseError", "ReferenceContext",
    "ShapeBindings", "ShapeError", "SourceLoc", "Symbol", "TensorType", "TypeRuleError",
    "UnsupportedOpError", "Value", "VerifyError", "bf16", "bool_", "c64", "c128", "composites", "decomposition",
    "evaluate", "f16", "f32", "f64", "i8", "i16", "i32", "i64", "parse", "parse_dim", "primitives", "u8", "u32",
    "verify",
]
