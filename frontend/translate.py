"""FX graphs at the ATen level → ``ir.Graph``, one node at a time through the aten table.

:func:`fx_to_ir` is the entry point (used by ``parity.compile`` for every forward and
backward graph AOTAutograd produces, and by ``parity.capture``). Each FX node is
looked up in :data:`parity.frontend.aten.TABLE`; its translation function emits IR
through a :class:`~.context.TranslationContext` (frontend/context.py), which knows the node's expected result types (from
``node.meta["val"]``), torch's type-promotion rules and numpy-style broadcasting, and
makes both explicit with ``convert`` / ``broadcast_in_dim``. The IR type of every
result is checked against torch's: a mismatch is a translator bug and names the op.

Example::

    >>> import torch
    >>> from torch.fx.experimental.proxy_tensor import make_fx
    >>> gm = make_fx(lambda x: x * 2 + 1)(torch.ones(3))
    >>> fx_to_ir(gm).graph.op_counts()
    {'constant': 2, 'broadcast_in_dim': 2, 'mul': 1, 'add': 1}
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx

from ..ir.builder import GraphBuilder
from ..ir.dims import free_symbols
from ..ir.dtypes import DType
from ..ir.errors import ParityError, TypeRuleError
from ..ir.graph import Graph, Node, Value
from ..ir.types import DimExpr, Symbol, TensorType
from .aten import TABLE
from .claims import backends_that_run
from .context import TranslationContext
from .errors import TranslationBug, UnsupportedAtenOp, dtype_not_in_ir
from .input_updates import UPDATES_META
from .sharding import TABLE as PARITY_OPS
from .sizes import UntranslatedCase, dim_of, shape_of
from .source import loc_from_stack_trace
from .tensors import TORCH_TO_IR, ir_dtype

# Ops that are bookkeeping, not computation, at the FX level.
_GETITEM = operator.getitem


@dataclass
class Translation:
    """An IR graph plus how to call it with the FX graph's arguments.

    ``inputs[k]`` is the FX placeholder index feeding IR input ``k``; the last
    ``num_keys`` IR inputs are random keys (u32[2]) drawn per call. ``outputs`` says
    where each FX output comes from: ``("ir", k)``, ``("input", j)`` (a placeholder
    passed through), ``("sym", name)`` (a symbolic size), ``("sym", expr)`` (a size
    expression over symbols the inputs carry: an ir DimExpr) or ``("const", value)``.
    ``symbols`` maps each symbol name to ``(placeholder, dim)`` where it can be read.
    ``size_carrier`` names the symbols that only an integer argument gives (a backward
    graph whose one tensor input is a scalar): IR input ``len(inputs)`` is then
    ``i8[0, *size_carrier]``, an empty array whose shape binds them. ``size_values`` are the
    size expressions the graph uses as tensor values (``x * n`` for an int argument ``n`` that
    automatic dynamic made symbolic, ``arange(past, past + seq)``): each is an ``i64[]`` IR input
    after the carrier and before the keys, its value computed per call from the bound sizes.
    ``updates`` maps FX outputs that are an input's new value, written back into it after the
    call, to the placeholder they update (frontend/input_updates.py).
    """

    graph: Graph
    inputs: list[int]
    outputs: list[tuple]
    num_keys: int = 0
    symbols: dict[str, tuple[int, int | None]] = field(default_factory=dict)
    aten_ops: list[str] = field(default_factory=list)
    size_carrier: tuple[str, ...] = ()
    size_values: tuple[DimExpr, ...] = ()
    updates: dict[int, int] = field(default_factory=dict)


def aten_name(target: Any) -> str:
    """``aten.add.Tensor`` for an OpOverload; the qualified name for other callables."""
    if isinstance(target, torch._ops.OpOverload):
        return str(target)
    return getattr(target, "__qualname__", None) or str(target)


def table_key(target: Any) -> str:
    """The key of an FX target in the aten table: ``add.Tensor`` (no ``aten.`` prefix)."""
    name = aten_name(target)
    return name[5:] if name.startswith("aten.") else name


# Python's operators on SymInts, as the expression they build (for error messages).
_OPERATORS = {"mul": "*", "add": "+", "sub": "-", "floordiv": "//", "mod": "%", "truediv": "/", "neg": "-",
              "sym_sum": "+"}

# FX nodes that compute a size from sizes (s6 * 4): the same operator on IR dims.
_SIZE_ARITHMETIC = {operator.mul: operator.mul, operator.add: operator.add, operator.sub: operator.sub,
                    operator.floordiv: operator.floordiv, operator.mod: operator.mod, operator.neg: operator.neg,
                    torch.sym_sum: lambda *sizes: sum(sizes, 0)}

# Python's float arithmetic on sizes (``numel / channels``, then ``1.0 / that``: batch norm's backward
# decomposition): a float64[] value, computed as Python computes it, for the tensor op that uses it.
_SIZE_FLOAT_ARITHMETIC = {operator.truediv: "div", operator.mul: "mul", operator.add: "add", operator.sub: "sub"}

# FX nodes that pick the larger or smaller of two sizes: the IR op on their size values.
_SIZE_EXTREMES = {torch.sym_max: "max", torch.sym_min: "min"}


def fx_to_ir(gm: torch.fx.GraphModule, example_inputs: Sequence[Any] | None = None, *,
             name: str = "main", claims: Callable[[Node], str | None] | None = None,
             backend: str | None = "reference", sizes_as_inputs: bool = False) -> Translation:
    """Translate an aten-level FX graph into a :class:`Translation` (an ``ir.Graph`` + calling spec).

    Nodes need ``meta["val"]`` (fake tensors, as AOTAutograd, make_fx and torch.export
    leave them); when it is missing and ``example_inputs`` are given, shapes are
    propagated first. ``claims(node)`` may return why an emitted IR node cannot run
    (the backend's claim check); the aten op is then reported as unsupported.
    ``sizes_as_inputs`` makes each size the graph uses as a value an ``i64[]`` input that the
    caller computes per call (parity.compile's CompiledGraph does); else the graph computes it
    (TranslationContext.size_value). Raises :class:`UnsupportedAtenOp` for an op with no translation.
    """
    if example_inputs is not None and any("val" not in n.meta for n in gm.graph.nodes if n.op != "output"):
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.passes.fake_tensor_prop import FakeTensorProp

        FakeTensorProp(gm, FakeTensorMode(allow_non_fake_inputs=True)).propagate(*example_inputs)
    return _Translator(gm, name, claims, backend, sizes_as_inputs).run()


class _Translator:
    def __init__(self, gm, name, claims, backend, sizes_as_inputs=False):
        self.gm = gm
        self.sizes_as_inputs = sizes_as_inputs
        self.b = GraphBuilder(name)
        self.claims = claims
        self.backend = backend
        self.env: dict[torch.fx.Node, Any] = {}
        self.keys: list[Value] = []
        self.symbols: dict[str, tuple[int, int | None]] = {}
        self.inputs: list[int] = []
        self.placeholders: dict[torch.fx.Node, int] = {}
        self.aten_ops: list[str] = []
        self.size_values: dict[DimExpr, Value] = {}

    def size_input(self, expr: DimExpr) -> Value:
        """The ``i64[]`` IR input that holds the value of the size ``expr`` at each call."""
        unknown = sorted(free_symbols(expr) - self.symbols.keys())
        if unknown:
            raise UntranslatedCase(f"the symbolic size {expr} is used as a tensor value, and no input carries "
                                   f"{', '.join(unknown)}")
        if expr not in self.size_values:
            self.size_values[expr] = self.b.input(TensorType(DType.int64, ()))
        return self.size_values[expr]

    def run(self) -> Translation:
        outputs: list[tuple] = []
        ir_outputs: list[Value] = []
        loc = None
        for node in self.gm.graph.nodes:
            # a node a decomposition added without a stack (a dtype convert) is the previous node's line
            loc = loc_from_stack_trace(node.meta.get("stack_trace")) or loc
            if node.op == "placeholder":
                self._placeholder(node)
            elif node.op == "call_function" and node.target is _GETITEM:
                base, index = node.args
                self.env[node] = self.env[base][index]
            elif node.op == "call_function" and node.target is operator.truediv:
                self.env[node] = self._size_float(node, loc)
            elif node.op == "call_function" and node.target in _SIZE_ARITHMETIC:
                self.env[node] = self._size_arithmetic(node, loc)
            elif node.op == "call_function" and node.target in _SIZE_EXTREMES:
                self.env[node] = self._size_extreme(node, loc)
            elif node.op == "call_function":
                foreign = foreign_dtype(node)
                if foreign is not None:  # complex, float8, quantized: no IR value can hold it
                    raise UnsupportedAtenOp(aten_name(node.target), loc, dtype_not_in_ir(foreign),
                                            backend=self.backend)
                fn = self.translation(node.target)
                name = aten_name(node.target)
                if fn is None:
                    why = "parity has no translation for this op (see `parity aten`)"
                    if getattr(node.target, "__module__", None) in ("_operator", "operator"):
                        symbol = _OPERATORS.get(node.target.__name__, node.target.__name__)
                        expr = f" {symbol} ".join(str(getattr(a, "meta", {}).get("val", a)) for a in node.args)
                        why = (f"arithmetic on symbolic sizes ({expr}) has no IR form: IR dims take + - * // %, "
                               f"not {symbol}")
                    raise UnsupportedAtenOp(name, loc, why, backend=self.backend)
                self.aten_ops.append(name)
                self.env[node] = self._call(fn, node, name, loc)
            elif node.op == "get_attr":
                self.env[node] = self._constant(node)
            elif node.op == "output":
                for out in _flatten_outputs(node.args[0]):
                    outputs.append(self._output(out, ir_outputs))
            else:
                raise UnsupportedAtenOp(f"{node.op} {node.target}", loc,
                                        "only aten-level graphs (call_function nodes) translate",
                                        backend=self.backend)
        carried = {d.name for v in self.b.inputs for d in v.type.shape if isinstance(d, Symbol)}
        carrier = tuple(name for name in self.symbols if name not in carried and name in self._symbols_in_types())
        if carrier:  # sizes no tensor input has: an empty i8[0, *sizes] input binds them
            self.b.input(TensorType(DType.int8, (0, *(Symbol(name) for name in carrier))))
        for late in (*self.size_values.values(), *self.keys):  # after the tensors and the carrier, in this order
            self.b.inputs.remove(late)
            self.b.inputs.append(late)
        graph = self.b.build(ir_outputs)
        names = {node.name: index for node, index in self.placeholders.items()}
        updates = {m: names[name] for m, name in self.gm.meta.get(UPDATES_META, {}).items() if name in names}
        return Translation(graph, self.inputs, outputs, len(self.keys), self.symbols, self.aten_ops, carrier,
                           tuple(self.size_values), updates)

    def _symbols_in_types(self) -> set[str]:
        """The symbols the IR graph's types and assumptions name: those a call must bind. A symbol
        the graph only uses as a value (an int argument: Translation.size_values) is not one, and
        may be negative, which no dim can be."""
        used: set[str] = set()
        values = [*self.b.inputs, *(out for node in self.b.nodes for out in node.outputs)]
        for dim in (d for v in values for d in v.type.shape):
            used |= free_symbols(dim)
        for node in self.b.nodes:  # a slice's start may be a size no type holds (x[k:k + 2])
            for attr in node.attrs.values():
                for dim in (attr if isinstance(attr, (tuple, list)) else (attr,)):
                    if isinstance(dim, DimExpr):
                        used |= free_symbols(dim)
        for fact in self.b.assumptions:
            used |= free_symbols(fact.lhs) | free_symbols(fact.rhs)
        return used

    def translation(self, target):
        """The translation function of an FX target (an aten overload), or None."""
        key = table_key(target)
        return TABLE.get(key) or PARITY_OPS.get(key)

    # -- nodes ------------------------------------------------------------------------

    def _placeholder(self, node):
        index = len(self.placeholders)
        self.placeholders[node] = index
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor) and val.dtype not in TORCH_TO_IR:
            raise UnsupportedAtenOp(f"input {node.name}", None, dtype_not_in_ir(val.dtype), backend=self.backend)
        if isinstance(val, torch.Tensor):
            t = TensorType(ir_dtype(val.dtype), shape_of(val.shape))
            for d, dim in enumerate(t.shape):
                if isinstance(dim, Symbol):
                    self.symbols.setdefault(dim.name, (index, d))
            self.env[node] = self.b.input(t)
            self.inputs.append(index)
        elif isinstance(val, torch.SymInt):
            sym = dim_of(val)
            if isinstance(sym, Symbol):
                self.symbols.setdefault(sym.name, (index, None))
            self.env[node] = sym
        else:
            self.env[node] = val

    def _size_arithmetic(self, node, loc):
        """``s6 * 4`` on symbolic sizes (a SymInt node): the same arithmetic on IR dims."""
        args = [self.env[a] if isinstance(a, torch.fx.Node) else a for a in node.args]
        if node.target is torch.sym_sum:  # sym_sum([a, b, c]): one list of sizes
            args = [self.env[a] if isinstance(a, torch.fx.Node) else a for a in node.args[0]]
        if node.target in _SIZE_FLOAT_ARITHMETIC and any(isinstance(a, (float, Value)) for a in args):
            return self._size_float(node, loc)  # a float computed from sizes (a SymFloat); it checks the rest
        if not all(isinstance(a, (int, DimExpr)) and not isinstance(a, bool) for a in args):
            symbol = _OPERATORS.get(node.target.__name__, node.target.__name__)
            raise UnsupportedAtenOp(aten_name(node.target), loc,
                                    f"{symbol} on {', '.join(map(repr, args))}: only int sizes combine",
                                    backend=self.backend)
        dim = _SIZE_ARITHMETIC[node.target](*args)
        val = node.meta.get("val")
        if isinstance(val, torch.SymInt):
            expected = dim_of(val)
            if expected != dim:  # the IR's arithmetic and torch's sympy agree, or it is a bug
                raise TranslationBug(f"{node.target.__name__} at {loc}: the IR computes {dim}, torch {expected}")
        return dim

    def _size_float(self, node, loc):
        """``s6 * 64 / 4`` or ``1.0 / that`` (a SymFloat node): float64 arithmetic on the sizes' values,
        exact as Python's; the tensor op that takes it converts it as it converts a Python float."""
        args = [self.env[a] if isinstance(a, torch.fx.Node) else a for a in node.args]
        if not all(isinstance(a, (int, float, DimExpr, Value)) and not isinstance(a, bool) for a in args):
            symbol = _OPERATORS.get(node.target.__name__, node.target.__name__)
            raise UnsupportedAtenOp(aten_name(node.target), loc,
                                    f"{symbol} on {', '.join(map(repr, args))}: only numbers and sizes combine",
                                    backend=self.backend)
        ctx = TranslationContext(self, node, aten_name(node.target))
        with self.b.location(loc):
            values = [ctx.value(a, DType.float64) for a in args]
            return getattr(self.b, _SIZE_FLOAT_ARITHMETIC[node.target])(*values)

    def _size_extreme(self, node, loc):
        """``torch.sym_max(s3 - 3, 0)`` (a sliding window's offset): no IR dim is a maximum, so
        the result is an ``i64[]`` tensor value, which tensor arithmetic takes (``arange + offset``);
        a use as a size is an error of that use, never a guess."""
        ctx = TranslationContext(self, node, aten_name(node.target))
        with self.b.location(loc):
            a, b = (ctx.value(self.env[a] if isinstance(a, torch.fx.Node) else a, DType.int64) for a in node.args)
            return getattr(self.b, _SIZE_EXTREMES[node.target])(a, b)

    def _constant(self, node):
        """A tensor held by the GraphModule (a captured constant) becomes an IR constant."""
        from .tensors import to_array

        value = self.gm
        for part in node.target.split("."):
            value = getattr(value, part)
        if not isinstance(value, torch.Tensor):
            return value
        with self.b.location(loc_from_stack_trace(node.meta.get("stack_trace"))):
            return self.b.constant(to_array(value).copy())

    def _call(self, fn, node, name, loc):
        args = torch.fx.node.map_arg(node.args, self._arg)
        kwargs = torch.fx.node.map_arg(node.kwargs, self._arg)
        start = len(self.b.nodes)
        ctx = TranslationContext(self, node, name)
        with self.b.location(loc):
            try:
                result = fn(ctx, *args, **kwargs)
            except UntranslatedCase as exc:
                raise UnsupportedAtenOp(name, loc, str(exc), backend=self.backend, in_ir=True) from None
            except TypeRuleError as exc:
                if _has_symbolic_sizes(node):  # a limit of the IR at symbolic sizes: compiled per shape instead
                    raise UnsupportedAtenOp(name, loc, f"the IR has no form of it at these symbolic sizes: {exc}",
                                            backend=self.backend, in_ir=True) from None
                raise TranslationBug(f"translating {name} at {loc}: {exc}") from exc
            except ParityError:
                raise
            except Exception as exc:  # a bug in a translation function: name the aten op
                raise TranslationBug(f"translating {name} at {loc} failed: {exc!r}") from exc
        _check_types(name, loc, result, node.meta.get("val"))
        if self.claims is not None:
            emitted = self.b.nodes[start:]
            for ir_node in emitted:
                why = self.claims(ir_node)
                if why is not None:
                    raise UnsupportedAtenOp(name, loc, why, backend=self.backend,
                                            alternatives=backends_that_run(emitted, exclude=self.backend))
        return result

    def _arg(self, node):
        return self.env[node]

    def _output(self, out, ir_outputs) -> tuple:
        if out is None:
            return ("const", None)
        if isinstance(out, torch.fx.Node):
            if out in self.placeholders:
                return ("input", self.placeholders[out])
            value = self.env[out]
        else:
            value = out
        if isinstance(value, Value):
            ir_outputs.append(value)
            return ("ir", len(ir_outputs) - 1)
        if isinstance(value, Symbol):
            return ("sym", value.name)
        if isinstance(value, DimExpr):  # a size expression (saved for the backward): evaluated per call
            unknown = sorted(free_symbols(value) - self.symbols.keys())
            if unknown:
                raise UnsupportedAtenOp("output", None, f"the output is the size {value}, and no input carries "
                                        f"{', '.join(unknown)}", backend=self.backend)
            return ("sym", value)
        return ("const", value)


def foreign_dtype(node: torch.fx.Node) -> torch.dtype | None:
    """A dtype the IR lacks among ``node``'s tensor results and operands, or a dtype argument
    (``quantize_per_tensor(x, s, z, torch.quint8)``: fake tensors show quantized values as float)."""
    from torch.utils._pytree import tree_leaves

    values = [node.meta.get("val")]
    for leaf in tree_leaves((node.args, node.kwargs)):
        values.append(leaf.meta.get("val") if isinstance(leaf, torch.fx.Node) else leaf)
    for value in values:
        for item in value if isinstance(value, (tuple, list)) else (value,):
            dtype = item.dtype if isinstance(item, torch.Tensor) else item
            if isinstance(dtype, torch.dtype) and dtype not in TORCH_TO_IR:
                return dtype
    return None


def _flatten_outputs(args) -> list:
    if isinstance(args, (list, tuple)):
        out = []
        for a in args:
            out.extend(_flatten_outputs(a) if isinstance(a, (list, tuple)) else [a])
        return out
    return [args]


def _check_types(name: str, loc, result, val) -> None:
    """The IR result types must be exactly torch's (dtype and shape)."""
    if isinstance(val, torch.Tensor):
        if not isinstance(result, Value):
            raise TranslationBug(f"translation of {name} at {loc} returned {type(result).__name__}, expected one tensor")
        expected = TensorType(ir_dtype(val.dtype), shape_of(val.shape))
        if result.type != expected:
            raise TranslationBug(f"translation of {name} at {loc} gives {result.type}, torch gives {expected}")
    elif isinstance(val, (tuple, list)) and isinstance(result, (tuple, list)):
        if len(val) != len(result):
            raise TranslationBug(f"translation of {name} returned {len(result)} results, torch gives {len(val)}")
        for v, r in zip(val, result):
            if isinstance(v, torch.Tensor) and r is not None:
                _check_types(name, loc, r, v)


def _has_symbolic_sizes(node: torch.fx.Node) -> bool:
    """Whether the FX node reads or makes a tensor of symbolic shape (or a symbolic int)."""
    for n in (*node.all_input_nodes, node):
        val = n.meta.get("val")
        if isinstance(val, torch.SymInt) or isinstance(val, torch.Tensor) and any(
                isinstance(d, torch.SymInt) for d in val.shape):
            return True
    return False
