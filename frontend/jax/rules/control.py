"""Control flow: ``scan`` (also ``fori_loop`` with a static trip count) unrolled, ``cond`` as a
select over its branches, and the refusals: a data-dependent ``while``, host callbacks.

Unrolling, not loops in the IR: every backend runs straight-line IR today. What it costs
(compile time grows faster than the trip count on xla) is measured in
bench/results/jax_loops.md, and a scan that unrolls past :data:`UNROLLED_NODES_WARNING`
nodes warns at the user's line (docs/jax.md, "Loops"). (``jit``, ``custom_jvp_call``,
``custom_vjp_call`` and ``remat`` are inlined by the walk itself: translate.py.)
"""

from __future__ import annotations

from ....ir.graph import Value
from ...source import warn_at
from ..compat import branches_of, scan_params
from ..context import JaxContext
from ..errors import DataDependentLoop, EffectNotSupported, LongUnrolledLoop

# One scan unrolled into more IR nodes than this warns. Past it the xla backend compiles for
# tens of seconds to minutes, growing faster than the trip count (an LSTM's gradient with loops
# of 1,216 and 1,824 nodes: 59 s of CPU, 41x jax.jit's), while the 12-layer nnx.scan stack's
# gradient (loops of 1,190 and 1,120 nodes, 9.3 s) stays quiet: bench/results/jax_loops.md.
UNROLLED_NODES_WARNING = 1500


def scan(ctx: JaxContext, *operands: Value):
    s = scan_params(ctx.eqn)
    b = ctx.b
    consts = list(operands[:s.num_consts])
    carry = list(operands[s.num_consts:s.num_consts + s.num_carry])
    xs = operands[s.num_consts + s.num_carry:]
    ys_by_step: dict[int, list[Value]] = {}
    steps = range(s.length - 1, -1, -1) if s.reverse else range(s.length)
    nodes_before = len(b.nodes)
    for i in steps:
        x_i = [_row(b, x, i) for x in xs]
        outs = ctx.inline(s.body, consts + carry + x_i)
        carry, ys_by_step[i] = outs[:s.num_carry], outs[s.num_carry:]
    n_ys = len(ctx.eqn.result_types) - s.num_carry
    if s.length == 0:  # no step: the stacked outputs are empty (a zero-step scan crashed here, found by
        # conformance/jax_frontend's zero_steps case)
        return [*carry, *(ctx.full(0, t.dtype, t.shape) for t in ctx.eqn.result_types[s.num_carry:])]
    ys = []
    for k in range(n_ys):
        rows = [ys_by_step[i][k] for i in range(s.length)]
        stacked = [b.reshape(r, shape=(1, *r.type.shape)) for r in rows]
        ys.append(stacked[0] if len(stacked) == 1 else b.concatenate(*stacked, dimension=0))
    unrolled = len(b.nodes) - nodes_before
    if unrolled > UNROLLED_NODES_WARNING:
        warn_at(ctx.eqn.loc, LongUnrolledLoop.message(ctx.eqn.loc, s.length, unrolled), LongUnrolledLoop)
    return [*carry, *ys]


def _row(b, x: Value, i: int) -> Value:
    shape = tuple(x.type.shape)
    row = b.slice(x, start_indices=(i,) + (0,) * (len(shape) - 1), limit_indices=(i + 1, *shape[1:]),
                  strides=(1,) * len(shape))
    return b.reshape(row, shape=shape[1:])


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
    raise DataDependentLoop(ctx.eqn.loc)


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
