"""Composites the XLA backend claims with a rule of its own instead of their decomposition.

Example::

    >>> sorted(RULES)
    ['log_softmax', 'sharding_constraint', 'softmax']
"""

from __future__ import annotations

from jax import lax

from ...ir.graph import Graph, Node, Value
from .context import Rule
from .reduction import extreme
from .sharding import constraint_rule


def _shift_invariant(name: str) -> Rule:
    """softmax/log_softmax: the IR's decomposition, with the row maximum taken by a plain max.

    The maximum only shifts the row. A row holding a NaN is NaN everywhere whatever the
    shift (x - m is NaN there, so the row's sum is NaN, and every output divides by it or
    subtracts its log); a row without NaN has the same maximum either way. So XLA's
    NaN-dropping max gives bit-identical results here, and unlike the NaN-checking combiner
    it fuses with the exp and the sum, which brings softmax + layer norm to jax.jit's time
    (docs/backends/xla.md).
    """

    def rule(ctx, x):
        return ctx.expand({"reduce_max": _plain_max})[0]

    return rule


def _plain_max(ctx, x):
    return lax.reduce(x, extreme(ctx.in_types[0].dtype, high=False), lax.max, ctx.attrs["axes"])


RULES: dict[str, Rule] = {
    "softmax": _shift_invariant("softmax"), "log_softmax": _shift_invariant("log_softmax"),
    "sharding_constraint": constraint_rule,  # a composite claimed natively: the partitioner reads it
}


# -- the same proof for the softmax pattern the frontend has already expanded -----------------------

PLAIN_MAX = "xla.plain_reduce_max"  # a private op name: a reduce_max node proven shift-only (below)


def _broadcast_back(node: Node, x: Value, axes: tuple[int, ...]) -> bool:
    """``node`` broadcasts a reduction of ``x`` over ``axes`` back onto x's shape, row to row."""
    kept = tuple(d for d in range(x.rank) if d not in axes)
    return (node.op == "broadcast_in_dim" and tuple(node.attrs["broadcast_dimensions"]) == kept
            and tuple(node.outputs[0].shape) == tuple(x.shape))


def _shift_only(node: Node, users: dict, graph_outputs: set) -> bool:
    """Whether the float ``reduce_max`` ``node`` only shifts a softmax row, so that a NaN-dropping
    max gives the same graph outputs bit for bit.

    The pattern (softmax's and scaled_dot_product_attention's decompositions)::

        m  = reduce_max(x, A)                     [optionally m' = select(eq(m, C), K, m)]
        e  = exp(sub(x, broadcast(m')))           x the same value, broadcast row to row
        s  = reduce_sum(e, A)                     e's users: this sum and the division only
        p  = div(e, broadcast(s))                 s may have any other users

    A row without NaN has the same maximum either way (up to the sign of a zero maximum,
    and x - (+0) and x - (-0) differ only in the sign of a zero, which exp maps to 1 both
    ways), so m', e, s and p are equal. A row with a NaN x_j: the NaN-checking max is NaN,
    so every e, s and p of the row is NaN; with any other m', e_j = exp(NaN - m') is NaN, so
    s (which sums e_j) is NaN and every p = e / s is NaN. The same, whatever the plain max
    returned. Nothing else may read m, m', x - m' or e: each would see the difference.
    """
    if node.op != "reduce_max" or not node.outputs[0].type.dtype.is_float:
        return False
    x, axes = node.inputs[0], tuple(node.attrs["axes"])
    m = node.outputs[0]
    if m in graph_outputs:
        return False
    readers = users.get(m, [])
    shifted = m
    if len(readers) == 2 and {r.op for r in readers} == {"eq", "select"}:  # the guard of a fully masked row
        eq = next(r for r in readers if r.op == "eq")
        guard = next(r for r in readers if r.op == "select")
        pred = eq.outputs[0]
        if (eq.inputs[0] is not m or guard.inputs[0] is not pred or guard.inputs[2] is not m
                or guard.inputs[1] is m or users.get(pred, []) != [guard] or pred in graph_outputs):
            return False
        shifted = guard.outputs[0]
        if shifted in graph_outputs:
            return False
        readers = users.get(shifted, [])
    if len(readers) != 1 or not _broadcast_back(readers[0], x, axes):
        return False
    wide = readers[0].outputs[0]
    subs = users.get(wide, [])
    if wide in graph_outputs or len(subs) != 1 or subs[0].op != "sub" or subs[0].inputs != (x, wide):
        return False
    d = subs[0].outputs[0]
    exps = users.get(d, [])
    if d in graph_outputs or len(exps) != 1 or exps[0].op != "exp":
        return False
    e = exps[0].outputs[0]
    readers = users.get(e, [])
    if e in graph_outputs or len(readers) != 2:
        return False
    total = next((r for r in readers if r.op == "reduce_sum"), None)
    div = next((r for r in readers if r.op == "div"), None)
    if total is None or div is None or tuple(total.attrs["axes"]) != axes or div.inputs[0] is not e:
        return False
    back = div.inputs[1].producer
    return (back is not None and back.inputs[0] is total.outputs[0] and _broadcast_back(back, x, axes)
            and div.inputs[1] is not e)


def shift_only_maxes(graph: Graph) -> list[Node]:
    """The float ``reduce_max`` nodes of ``graph`` a NaN-dropping max may compute (:func:`_shift_only`)."""
    users = graph.users()
    outputs = set(graph.outputs)
    return [node for node in graph.nodes if _shift_only(node, users, outputs)]


def with_plain_maxes(graph: Graph) -> Graph:
    """``graph`` with each :func:`shift_only_maxes` node renamed to :data:`PLAIN_MAX` (same values,
    so every other node still reads them), for the driver to lower with :data:`PLAIN_MAX_RULES`."""
    chosen = set(shift_only_maxes(graph))
    if not chosen:
        return graph
    nodes = []
    for node in graph.nodes:
        if node in chosen:
            renamed = object.__new__(Node)
            renamed.op, renamed.inputs, renamed.attrs, renamed.outputs, renamed.loc = (
                PLAIN_MAX, node.inputs, node.attrs, node.outputs, node.loc)
            node = renamed
        nodes.append(node)
    return Graph(graph.name, graph.inputs, nodes, graph.outputs, sharding=graph.sharding,
                 assumptions=graph.assumptions)


PLAIN_MAX_RULES: dict[str, Rule] = {PLAIN_MAX: _plain_max}
