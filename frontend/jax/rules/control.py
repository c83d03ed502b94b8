"""Control flow: ``scan`` (also ``fori_loop`` with a static trip count) and a ``while`` that
counts to a bound known when tracing as the IR's ``loop``, ``cond`` as a select over its
branches, and the refusals: a data-dependent ``while``, host callbacks.

A scan's step becomes the loop's body graph, translated once, so a backend that claims
``loop`` (xla, onnx) compiles one step, and any other backend gets it unrolled by the loop's
decomposition; a long unrolling warns there, naming the backend (frontend/jax/run.py).
bench/results/jax_loops.md measured why: unrolled, a 64-step LSTM's gradient compiles for
minutes on xla. (``jit``, ``custom_jvp_call``, ``custom_vjp_call`` and ``remat`` are inlined
by the walk itself: translate.py.)
"""

from __future__ import annotations

from collections.abc import Sequence

from ....ir.graph import Value
from ....ir.ops.control import row_type
from ..compat import WhileParams, branches_of, scan_params, while_params
from ..context import JaxContext
from ..errors import DataDependentLoop, EffectNotSupported


def scan(ctx: JaxContext, *operands: Value):
    s = scan_params(ctx.eqn)
    types = [v.type for v in operands]
    step_types = [*types[:s.num_consts + s.num_carry], *(row_type(t) for t in types[s.num_consts + s.num_carry:])]
    body = ctx.subgraph(s.body, step_types, "scan_step")
    results = ctx.b.loop(*operands, body=body, length=s.length, num_consts=s.num_consts, num_carry=s.num_carry,
                         reverse=s.reverse)
    return list(results) if isinstance(results, tuple) else [results]


def cond(ctx: JaxContext, index: Value, *operands: Value):
    """Every branch computed, the result picked by ``index`` (lax.switch has clamped it already)."""
    b = ctx.b
    outs = [ctx.inline(branch, list(operands)) for branch in branches_of(ctx.eqn)]
    chosen = outs[0]
    for k, branch_outs in enumerate(outs[1:], start=1):
        picked = []
        for current, candidate in zip(chosen, branch_outs):
            shape = tuple(current.type.shape)
            is_k = b.eq(index, b.constant(k, index.type.dtype))
            picked.append(b.select(ctx.broadcast(is_k, shape), candidate, current))
        chosen = picked
    return chosen


def while_loop(ctx: JaxContext, *operands: Value):
    """A while loop that counts (:func:`counted_trips`) as a ``loop`` of that many steps without
    ``xs``; any other is refused: its trip count depends on the data."""
    w = while_params(ctx.eqn)
    body_end = w.cond_nconsts + w.body_nconsts
    cond_consts, body_consts, init = operands[:w.cond_nconsts], operands[w.cond_nconsts:body_end], operands[body_end:]
    trips = counted_trips(w, cond_consts, init)
    if trips is None:
        raise DataDependentLoop(ctx.eqn.loc)
    body = ctx.subgraph(w.body, [v.type for v in (*body_consts, *init)], "while_step")
    results = ctx.b.loop(*body_consts, *init, body=body, length=trips, num_consts=w.body_nconsts,
                         num_carry=len(init))
    return list(results) if isinstance(results, tuple) else [results]


def counted_trips(w: WhileParams, cond_consts: Sequence[Value], init: Sequence[Value]) -> int | None:
    """The trip count of a while loop that counts, else None. It counts when its condition is
    ``i < n`` alone (past casts of a value to its own type), for a carry ``i`` that the body increments by 1 and nothing else, and both
    ``i``'s start and ``n`` are known when tracing: a literal or a constant, a condition const that
    is one, or a carry the body passes on unchanged from a constant start (``fori_loop`` with
    bounds that are constants but not Python ints writes it so)."""
    cond, body = w.cond, w.body
    if not cond.eqns or len(cond.outvars) != 1:
        return None
    *casts, test = cond.eqns
    if test.primitive != "lt" or cond.outvars[0].var is not test.results[0]:
        return None
    if not all(_same_type_cast(e) for e in casts):  # JAX casts a weakly typed int to its own type
        return None
    counter, bound = (_before_casts(casts, o) for o in test.operands)
    k = _position(cond.invars[w.cond_nconsts:], counter)
    if k is None or not _adds_one(body, w.body_nconsts, k):
        return None
    start = _known_int(init[k])
    if bound.literal is not None:
        limit = int(bound.literal)
    else:
        j = _position(cond.invars, bound)
        if j is None:
            return None
        if j < w.cond_nconsts:
            limit = _known_int(cond_consts[j])
        else:
            j -= w.cond_nconsts
            passed_on = body.outvars[j].var is body.invars[w.body_nconsts + j]
            limit = _known_int(init[j]) if passed_on else None
    if start is None or limit is None:
        return None
    return max(0, limit - start)


def _same_type_cast(eqn) -> bool:
    return eqn.primitive == "convert_element_type" and eqn.result_types[0] == eqn.operands[0].type


def _before_casts(casts, operand):
    """``operand`` with the same-type casts that made it undone (what they cast)."""
    for eqn in reversed(casts):
        if operand.literal is None and any(r is operand.var for r in eqn.results):
            operand = eqn.operands[0]
    return operand


def _position(variables: Sequence, operand) -> int | None:
    if operand.literal is not None:
        return None
    return next((i for i, v in enumerate(variables) if v is operand.var), None)


def _adds_one(body, nconsts: int, k: int) -> bool:
    """Whether the body's carry ``k`` comes out as its input plus the literal 1."""
    out = body.outvars[k]
    if out.literal is not None:
        return False
    producer = next((e for e in body.eqns if any(r is out.var for r in e.results)), None)
    if producer is None or producer.primitive != "add":
        return False
    counter = body.invars[nconsts + k]
    a, b = producer.operands
    for this, other in ((a, b), (b, a)):
        if this.var is counter and this.literal is None and other.literal is not None and int(other.literal) == 1:
            return True
    return False


def _known_int(value: Value) -> int | None:
    """The integer a scalar value holds when the graph is built (a constant), else None."""
    node = value.producer
    if node is None or node.op != "constant" or not value.type.dtype.is_integer or value.type.rank != 0:
        return None
    return int(node.attrs["value"])


def callback(ctx: JaxContext, *operands: Value):
    raise EffectNotSupported(ctx.eqn.primitive, ctx.eqn.loc)


TABLE = {
    "scan": scan,
    "cond": cond,
    "while": while_loop,
    "debug_callback": callback,
    "io_callback": callback,
    "pure_callback": callback,
    "debug_print": callback,
}
