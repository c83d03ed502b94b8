"""IR graph → ATen FX graph: one rule per op, in one table, traced with ``make_fx``.

:data:`LOWERINGS` maps every op the backend lowers to its rule (``rule(ctx, *tensors)``,
see :mod:`.context`); the family modules hold the rules, grouped as ``ir/ops`` is.
:func:`to_fx` runs the rules on fake tensors under ``make_fx``, which records the ATen
ops they call: the result is the graph Inductor compiles. :func:`to_fx` traces at concrete
sizes; :mod:`.symbolic` traces a graph with symbolic dims once with symbolic sizes, through
the same :func:`trace`. Constants of more than one element become extra inputs, after the
graph's own (:attr:`FxGraph.constants`).

Example::

    >>> import torch
    >>> from parity.ir import GraphBuilder, f32
    >>> b = GraphBuilder("twice"); x = b.input(f32[3])
    >>> fx = to_fx(b.build([b.add(x, x)]), [(3,)])
    >>> [str(n.target) for n in fx.module.graph.nodes if n.op == "call_function"]
    ['aten.add.Tensor']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch._prims_common import is_contiguous_or_false
from torch.fx.experimental.proxy_tensor import make_fx

from ...ir.dtypes import DType
from ...ir.errors import ParityError, UnsupportedOpError
from ...ir.graph import Graph, Node
from ...ir.shapes import ShapeBindings
from .complex_numbers import RULES as COMPLEX_NUMBERS
from .composites import RULES as COMPOSITES
from .composites import declined as composite_declined
from .context import U32_MASK, InductorNodeContext, as_tensor, carried, is_inline_constant
from .contraction import RULES as CONTRACTION
from .control import loop_declined, rules_with
from .deviations import UNSUPPORTED
from .elementwise import RULES as ELEMENTWISE
from .fft import RULES as FFT
from .indexing import RULES as INDEXING
from .reduction import RULES as REDUCTION
from .shape import RULES as SHAPE

LOWERINGS = {**ELEMENTWISE, **COMPLEX_NUMBERS, **FFT, **SHAPE, **INDEXING, **REDUCTION, **CONTRACTION, **COMPOSITES}

# Claims with a predicate (OpClaim.when): a node it declines is expanded by its decomposition.
CLAIM_PREDICATES = {"loop": loop_declined(LOWERINGS, UNSUPPORTED, composite_declined)}


def declined(node: Node) -> bool:
    """Whether a claimed composite node is expanded all the same: its claim's predicate turns it
    down (:data:`CLAIM_PREDICATES`), or it is attention the fused kernel does not serve
    (composites.declined)."""
    predicate = CLAIM_PREDICATES.get(node.op)
    return (predicate(node) is not None) if predicate is not None else composite_declined(node)


class LoweringError(ParityError):
    """A rule produced a result of the wrong dtype or shape (a bug in the backend)."""


@dataclass(frozen=True)
class FxGraph:
    """The traced ATen graph: call ``module(*graph inputs, *constants)``; ``examples`` are
    zeros of the graph inputs' shapes and carrier dtypes (what Inductor compiles for)."""

    module: torch.fx.GraphModule
    constants: tuple[torch.Tensor, ...]
    examples: tuple[torch.Tensor, ...]


def to_fx(graph: Graph, shapes: Sequence[Sequence[int]], device: str = "cpu") -> FxGraph:
    """Trace ``graph`` (composites it does not claim already expanded) at ``shapes``."""
    bindings = ShapeBindings(error=ParityError)
    in_types = bindings.bind_inputs(graph, shapes)
    constant_tensors = graph_constants(graph, device)
    symbolic = not all(v.type.is_static for v in graph.values())

    def node_context(node: Node) -> InductorNodeContext:
        attrs = bindings.resolve_attrs(node.attrs, strict=True) if symbolic else node.attrs
        return InductorNodeContext(attrs, tuple(bindings.resolve(v.type) for v in node.inputs),
                                   tuple(bindings.resolve(v.type) for v in node.outputs), op_name=node.op)

    examples = [torch.zeros(tuple(t.shape), dtype=carried(t.dtype), device=device) for t in in_types]
    module = trace(graph, node_context, [*examples, *constant_tensors], device)
    return FxGraph(module, constant_tensors, tuple(examples))


def graph_constants(graph: Graph, device: str) -> tuple[torch.Tensor, ...]:
    """The graph's constants of more than one element, as tensors: extra inputs of the traced graph."""
    return tuple(as_tensor(n.attrs["value"], n.outputs[0].type.dtype).to(device)
                 for n in graph.nodes if n.op == "constant" and not is_inline_constant(n))


def trace(graph: Graph, node_context: Callable[[Node], InductorNodeContext], examples: Sequence[torch.Tensor],
          device: str, after_node: Callable[[Node], None] = lambda node: None) -> torch.fx.GraphModule:
    """The ATen graph of ``graph``'s rules, traced by ``make_fx`` on ``examples`` (the graph's inputs,
    then :func:`graph_constants`; fake tensors of one FakeTensorMode are traced in that mode).
    ``node_context(node)`` gives each rule its context; ``after_node(node)`` runs after each rule.

    Every output a rule left in another layout (a static cache's ``index_copy`` along dim 2
    comes out strided (320, 8, 16, 1)) is laid out contiguously inside the graph, where Inductor
    writes it from the kernel that computes it, instead of the executable copying it after the
    call. At symbolic sizes only an output provably contiguous without a guard on its sizes is
    left as it is (``is_contiguous_or_false``); any other gets the copy (it had it anyway)."""
    constants = [n for n in graph.nodes if n.op == "constant" and not is_inline_constant(n)]

    def run(*tensors):
        env = dict(zip(graph.inputs, tensors))
        env.update((n.outputs[0], t) for n, t in zip(constants, tensors[len(graph.inputs):]))
        for node in graph.nodes:
            if node.outputs[0] in env:
                continue  # a constant passed as an input
            env.update(zip(node.outputs, lower_node(node_context(node), node, [env[v] for v in node.inputs])))
            after_node(node)
        return tuple(_laid_out(env[v]) for v in graph.outputs)

    with torch.device(device):  # tensors the rules create (full, arange) are made there
        module = make_fx(run, tracing_mode="fake")(*examples)
    views_as_reshapes(module)
    return module


def _laid_out(t: torch.Tensor) -> torch.Tensor:
    if is_contiguous_or_false(t):
        return t
    return t.clone(memory_format=torch.contiguous_format)


def views_as_reshapes(module: torch.fx.GraphModule) -> int:
    """Turn the traced graph's shape views (``aten.view.default``, what a reshape of a
    value traced as contiguous records) into reshapes; returns how many. The IR has no
    aliasing, so a reshape (a view where the layout allows, else a copy) means the same, and
    Inductor may lay a value out otherwise than the trace did: Phi-3's attention output,
    [2, 4, 8, 8] with strides (256, 8, 32, 1) after Inductor's bmm, could not be viewed as
    [8, 8, 8], and the graph failed to compile. Bit casts (``aten.view.dtype``) stay."""
    changed = 0
    for node in module.graph.nodes:
        if node.op == "call_function" and node.target is torch.ops.aten.view.default:
            node.target = torch.ops.aten.reshape.default
            changed += 1
    if changed:
        module.recompile()
    return changed


# Ops whose u32 result lies in [0, 2**32) whenever their u32 operands do, which every u32 carrier
# does (inputs and constants are converted into range, every other op's result is masked): their
# results need no mask. Threefry (random_bits, uniform, normal, dropout) is mostly these; masking
# each of them doubled its traced graph, and Inductor's compile of the quick run's random batch
# (27 s) with it.
U32_RANGE_KEPT = frozenset({
    "reshape", "broadcast_in_dim", "transpose", "slice", "concatenate", "reverse", "pad", "select",
    "constant", "iota", "bitwise_and", "bitwise_or", "bitwise_xor", "shift_right_logical", "max", "min",
})


def lower_node(ctx: InductorNodeContext, node: Node, operands: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """Run ``node``'s rule on ``operands``; return its results (u32 ones wrapped into range)."""
    rule = LOWERINGS.get(node.op)
    where = f" (at {node.loc})" if node.loc else ""
    if rule is None:
        raise UnsupportedOpError(f"the inductor backend has no rule for {node.op!r}{where} "
                                 f"(backends/inductor/lowering.py); use backend='reference' or 'xla'")
    results = rule(ctx, *operands)
    results = list(results) if isinstance(results, tuple) else [results]
    out = []
    for result, t in zip(results, ctx.out_types):
        if t.dtype is DType.uint32 and node.op not in U32_RANGE_KEPT:
            result = result & U32_MASK  # the carrier wraps as u32 arithmetic does
        if result.dtype != carried(t.dtype) or tuple(result.shape) != tuple(t.shape):
            raise LoweringError(f"the inductor rule for {node.op!r}{where} gave {result.dtype}"
                                f"{list(result.shape)}, expected {t} (carried as {carried(t.dtype)})")
        out.append(result)
    return out


# The control rules run a loop's body through lower_node itself (control.py takes it, not imports it).
LOWERINGS.update(rules_with(lower_node))
