"""IR → ``jax.lax``: the driver that assembles the rule table and traces graphs with it.

A graph becomes a Python function of ``jax.lax`` calls (:func:`graph_function`) that
``jax.jit`` traces and XLA compiles. :data:`LOWERINGS` maps every op the backend lowers
to its rule ``rule(ctx, *operands)`` (:mod:`.context`); the family modules hold the rules,
grouped the way ``ir/ops`` is: :mod:`.elementwise`, :mod:`.conversion`, :mod:`.shape`,
:mod:`.indexing`, :mod:`.reduction`, :mod:`.contraction`, and :mod:`.composites` and
:mod:`.control` (``loop``, rolled) for the composites claimed natively. Ops in :data:`.widening.WIDER_FOR_ACCURACY` are computed in
a wider dtype and rounded once. Composites without a rule are expanded by their decomposition while
tracing.

Rules are written for the IR's semantics, not lax's defaults: float max/min reductions
propagate NaN (XLA CPU's vectorized reduce drops it), dynamic slices never wrap negative
starts, sums start from -0.0 (the identity of IEEE addition), conversions that XLA
rounds twice go through round-to-odd, and contractions ask for full precision.

Example::

    >>> import numpy as np, jax
    >>> from parity.ir import GraphBuilder, f32
    >>> b = GraphBuilder(); x = b.input(f32[3])
    >>> fn = graph_function(b.build([b.exp(x)]))
    >>> [round(float(v), 4) for v in fn(np.zeros(3, np.float32))[0]]
    [1.0, 1.0, 1.0]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...ir.errors import UnsupportedOpError
from ...ir.expand import decomposition
from ...ir.graph import Graph, Node
from ...ir.opdef import Kind
from ...ir.shapes import ShapeBindings
from .complex_numbers import RULES as COMPLEX_NUMBERS
from .composites import PLAIN_MAX_RULES, with_plain_maxes
from .composites import RULES as COMPOSITES
from .context import Rule, XlaNodeContext
from .contraction import RULES as CONTRACTION
from .control import RULES as CONTROL
from .conversion import RULES as CONVERSION
from .elementwise import RULES as ELEMENTWISE
from .fft import RULES as FFT
from .indexing import RULES as INDEXING
from .products import opaque, products_summed
from .reduction import RULES as REDUCTION
from .shape import RULES as SHAPE
from .traced_sizes import TracedSizes
from .widening import WIDER_FOR_ACCURACY, widened

_RULES: dict[str, Rule] = {**ELEMENTWISE, **COMPLEX_NUMBERS, **FFT, **CONVERSION, **SHAPE, **INDEXING, **REDUCTION, **CONTRACTION, **COMPOSITES,
                          **CONTROL}
LOWERINGS: dict[str, Rule] = {name: widened(name, rule) if name in WIDER_FOR_ACCURACY else rule
                              for name, rule in _RULES.items()}

# -- graphs → functions ------------------------------------------------------------------------------


def lower_node(node_op: str, attrs: Mapping[str, Any], in_types, out_types, args, bindings: ShapeBindings,
               loc=None, overrides: Mapping[str, Rule] | None = None, zero: Any = None, *, keep_products: bool = True):
    """Emit one op on traced operands; composites without a rule expand in place.
    ``overrides`` replaces rules by op name (a composite's rule may relax one of its parts);
    ``zero`` and ``keep_products`` as in :func:`run_graph`, passed on to expansions and bodies."""
    from ...ir.ops import OP_TABLE

    for t, a in zip(in_types, args):
        bindings.bind_unchecked(t, a.shape)

    def expand(more: Mapping[str, Rule] | None = None) -> list[Any]:
        rules = {**(overrides or {}), **(more or {})}
        if isinstance(bindings, TracedSizes):
            # Symbolic export: expand with the IR's own dims and trace the expansion in these
            # bindings, so that its sizes stay JAX dimension variables (not the ints of a run).
            return run_graph(decomposition(node_op, attrs, in_types, loc=loc), args, rules, zero, bindings,
                             keep_products=keep_products)
        return run_graph(decomposition(node_op, resolved_attrs, resolved_in, loc=loc), args, rules, zero,
                         keep_products=keep_products)

    def run_body(body: Graph, body_args: Sequence[Any]) -> list[Any]:
        # A copy of the sizes: symbolic export's body keeps the IR's dims (TracedSizes does not
        # rebuild graphs), a static one was rebuilt with ints by resolve_attrs below.
        inner = TracedSizes(bindings.sizes) if isinstance(bindings, TracedSizes) else ShapeBindings(bindings.sizes)
        return run_graph(body, body_args, overrides, zero, inner, body=True, keep_products=keep_products)

    resolved_in = tuple(bindings.resolve(t) for t in in_types)
    out_types = tuple(bindings.resolve(t) for t in out_types)
    resolved_attrs = bindings.resolve_attrs(attrs, strict=True)
    rule = (overrides or {}).get(node_op) or LOWERINGS.get(node_op)
    if rule is not None:
        result = rule(XlaNodeContext(resolved_attrs, resolved_in, out_types, zero, expand, run_body), *args)
        return list(result) if isinstance(result, tuple) else [result]
    opdef = OP_TABLE.get(node_op)
    if opdef is None or opdef.kind is Kind.PRIMITIVE:
        where = f" at {loc}" if loc else ""
        raise UnsupportedOpError(
            f"the xla backend has no lowering for {node_op!r}{where}: it is a primitive added to the op "
            f"table after the backend; add a rule to its family module in backends/xla/ or run with "
            f"backend='reference'")
    return expand()


def run_graph(graph: Graph, args: Sequence[Any], overrides: Mapping[str, Rule] | None = None,
              zero: Any = None, bindings: ShapeBindings | None = None, *, body: bool = False,
              keep_products: bool = True) -> list[Any]:
    """Trace ``graph`` on JAX values ``args``; return its outputs as JAX values.

    ``zero``: an int32 scalar the executable receives at run time, always 0, that rules may
    use to hide a value from XLA's simplifier (a convolution's padding zeros); with
    ``keep_products`` it also keeps XLA from fusing products into sums: see
    :func:`.products.opaque`. ``bindings``: the sizes
    of the graph's symbols (default: read from ``args``' shapes; symbolic export passes
    :class:`.traced_sizes.TracedSizes`). ``body``: ``graph`` is a loop's body, whose
    outputs the next step (or the enclosing graph) reads, so products it returns are kept
    out of fused sums as well."""
    env: dict = dict(zip(graph.inputs, args))
    bindings = ShapeBindings() if bindings is None else bindings
    for value, array in zip(graph.inputs, args):
        bindings.bind_unchecked(value.type, array.shape)
    summed = products_summed(graph, returned=body) if zero is not None and keep_products else set()
    for node in graph.nodes:
        outs = lower_node(node.op, node.attrs, [v.type for v in node.inputs], [v.type for v in node.outputs],
                          [env[v] for v in node.inputs], bindings, node.loc, overrides, zero,
                          keep_products=keep_products)
        if node in summed:
            outs = [opaque(o, zero) for o in outs]
        env.update(zip(node.outputs, outs))
    return [env[v] for v in graph.outputs]


def graph_function(graph: Graph, *, run_time_zero: bool = False, keep_products: bool = True) -> Callable[..., list[Any]]:
    """The graph as a Python function of ``lax`` calls, ready for ``jax.jit``.

    ``run_time_zero``: the function takes one more argument, an int32 scalar that must be 0
    at run time (:data:`RUN_TIME_ZERO`), which the rules that hide a value from XLA use; with
    ``keep_products`` it also keeps products out of fused sums (:func:`.products.opaque`).

    A float ``reduce_max`` that provably only shifts a softmax row (an expanded softmax or
    scaled_dot_product_attention: :func:`.composites.shift_only_maxes`) is lowered with XLA's
    NaN-dropping max, which fuses, instead of the NaN-checking combiner; the outputs are the
    same bit for bit.
    """
    name = graph.name
    graph = with_plain_maxes(graph)  # softmax rows' maxima that only shift the row: XLA's own max
    if run_time_zero:
        def fn(*args):
            return run_graph(graph, args[:-1], PLAIN_MAX_RULES, zero=args[-1], keep_products=keep_products)
    else:
        def fn(*args):
            return run_graph(graph, args, PLAIN_MAX_RULES)

    fn.__name__ = name or "graph"
    return fn


def unlowered_nodes(graph: Graph) -> list[Node]:
    """Primitive nodes with no rule (the backend refuses such graphs up front), in loop
    bodies too."""
    from ...ir.ops import OP_TABLE

    found = []
    for n in graph.nodes:
        if n.op not in LOWERINGS and OP_TABLE[n.op].kind is Kind.PRIMITIVE:
            found.append(n)
        for value in n.attrs.values():
            if isinstance(value, Graph):
                found += unlowered_nodes(value)
    return found
