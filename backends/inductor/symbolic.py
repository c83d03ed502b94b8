"""A graph with symbolic dims traced once with symbolic sizes, for Inductor's dynamic kernels.

Each IR symbol (``B``) becomes a size symbol of one torch ``ShapeEnv``, hinted by the size
of the call that asked for the kernel; the rules run on fake tensors whose dims are those
SymInts, so a reshape to ``B*4`` or an iota of length ``B`` is recorded as an expression of
the inputs' sizes, not as the first call's numbers. Inductor compiles the traced graph
once (:func:`compile_symbolic`, via the ``compile`` it is given) and the kernel reads the
sizes from its inputs at every call.

Whatever the trace or Inductor assumed about the sizes (``B >= 2``, ``B != 16``, ...) is
in the ShapeEnv's guards: :class:`DynamicKernel` keeps them as one expression and runs
only for sizes that satisfy it (the caller compiles again for others). A size of 0 or 1
is specialised, as torch does, and a rule that needs a size as a plain number fixes its
symbol: then the graph has no symbolic form here (:class:`NoSymbolicForm`, naming the op).

Example::

    >>> from parity.ir import GraphBuilder, Symbol, f32
    >>> b = GraphBuilder("flat"); x = b.input(f32[Symbol("B"), 4])
    >>> fx = to_symbolic_fx(b.build([b.reshape(x, shape=(Symbol("B") * 4,))]), {"B": 3})
    >>> [str(n.target) for n in fx.module.graph.nodes if n.op == "call_function"][-1]
    'aten.reshape.default'
    >>> c = GraphBuilder("pairs")
    >>> no_symbolic_form(c.build([c.input(f32[Symbol("N") * 2])]))
    'dimension N has no input dim of its own (input 0 is f32[N*2]): Inductor reads every size from one'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch

from ...ir.dims import DimExpr, Symbol, free_symbols, substitute
from ...ir.dtypes import DType
from ...ir.errors import ParityError
from ...ir.graph import Graph, Node
from ...ir.shapes import ShapeBindings
from .context import InductorNodeContext, carried
from .direct_call import Kernel
from .in_place import write_into_inputs
from .lowering import graph_constants, trace


class NoSymbolicForm(ParityError):
    """The graph cannot be traced with symbolic sizes on inductor (it compiles per shape instead)."""


@dataclass(frozen=True)
class TracedType:
    """A value's type inside a symbolic trace: each dim an int or a SymInt of the inputs' sizes."""

    dtype: DType
    shape: tuple

    def __str__(self) -> str:
        return f"{self.dtype.short}[{','.join(str(d) for d in self.shape)}]"


@dataclass(frozen=True)
class SymbolicFx:
    """The traced graph: call ``module(*graph inputs, *constants)``. ``examples`` are fake tensors
    of the symbolic shapes (inputs, then constants), ``symbols`` the SymInt of each IR symbol."""

    module: torch.fx.GraphModule
    constants: tuple[torch.Tensor, ...]
    examples: tuple[torch.Tensor, ...]
    symbols: dict[str, torch.SymInt]
    shape_env: object


def no_symbolic_form(graph: Graph) -> str | None:
    """Why ``graph`` cannot be traced with symbolic sizes before any trace, or None: every symbol
    must be a whole dim of some input, since Inductor's kernels read their sizes from the inputs."""
    own = {d.name for v in graph.inputs for d in v.type.shape if isinstance(d, Symbol)}
    for i, v in enumerate(graph.inputs):
        for d in v.type.shape:
            missing = sorted(free_symbols(d) - own) if isinstance(d, DimExpr) else []
            if missing:
                return (f"dimension {missing[0]} has no input dim of its own (input {i} is {v.type}): "
                        f"Inductor reads every size from one")
    return None


def to_symbolic_fx(graph: Graph, sizes: Mapping[str, int], device: str = "cpu") -> SymbolicFx:
    """Trace ``graph`` with a size symbol per IR symbol, hinted by ``sizes`` (each at least 2).

    Raises :class:`NoSymbolicForm` when a rule fixed a symbol to its hint (it used the size as
    a plain number), naming the op and its source line."""
    from torch._dynamo.source import ConstantSource
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv

    shape_env = ShapeEnv()
    mode = FakeTensorMode(shape_env=shape_env)
    symbols = {}
    for name, size in sizes.items():
        source = ConstantSource(f"parity_{name}")
        symbol = shape_env.create_symbol(size, source, dynamic_dim=DimDynamic.DYNAMIC)
        symbols[name] = shape_env.create_symintnode(symbol, hint=size, source=source)
    bindings = ShapeBindings(symbols, error=ParityError)  # attributes resolve to SymInt expressions

    def traced(t) -> TracedType:
        return TracedType(t.dtype, tuple(substitute(d, symbols) for d in t.shape))

    def node_context(node: Node) -> InductorNodeContext:
        return InductorNodeContext(bindings.resolve_attrs(node.attrs, strict=True),
                                   tuple(traced(v.type) for v in node.inputs),
                                   tuple(traced(v.type) for v in node.outputs), op_name=node.op)

    def fixed_a_size(node: Node) -> None:
        for name, size in symbols.items():
            if shape_env.replace(size.node.expr).is_number:
                where = f" at {node.loc}" if node.loc else ""
                raise NoSymbolicForm(f"{node.op}{where} uses dimension {name} as a plain number (the trace fixed "
                                     f"it to {sizes[name]})")

    constants = graph_constants(graph, device)
    with mode:
        examples = [torch.empty(traced(v.type).shape, dtype=carried(v.type.dtype), device=device)
                    for v in graph.inputs]
        examples += [mode.from_tensor(c, static_shapes=True) for c in constants]
    try:
        module = trace(graph, node_context, examples, device, after_node=fixed_a_size)
    except NoSymbolicForm:
        raise
    except Exception as exc:  # a rule the symbolic trace cannot follow (data-dependent sizes, ...)
        raise NoSymbolicForm(f"its symbolic trace failed: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}") \
            from exc
    return SymbolicFx(module, constants, tuple(examples), symbols, shape_env)


class DynamicKernel(Kernel):
    """One Inductor compile of a :class:`SymbolicFx`: runs for every set of sizes its guards admit."""

    def __init__(self, fx: SymbolicFx, run: Callable):
        super().__init__(run, fx.constants)
        self._names = list(fx.symbols)
        shape_env = fx.shape_env
        expression = shape_env.produce_guards_expression(list(fx.symbols.values()), ignore_static=False)
        self.guards = expression or "True"
        code = compile(self.guards, "<inductor size guards>", "eval")
        self._holds = lambda values: shape_env.evaluate_guards_expression(code, values)

    def fits(self, sizes: Mapping[str, int]) -> bool:
        """Whether the kernel was compiled for these sizes of the graph's symbols."""
        return bool(self._holds([sizes[name] for name in self._names]))


def compile_symbolic(graph: Graph, sizes: Mapping[str, int], device: str, compile: Callable,
                     writes: tuple = ()) -> DynamicKernel:
    """Trace ``graph`` symbolically and compile it with ``compile(module, example_inputs)``, with
    ``writes`` ((output, input) pairs) computed into their inputs (in_place.py)."""
    fx = to_symbolic_fx(graph, sizes, device)
    write_into_inputs(fx.module, dict(writes))
    return DynamicKernel(fx, compile(fx.module, list(fx.examples)))
