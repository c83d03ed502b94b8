"""Control flow: ``scan`` (also ``fori_loop`` with a static trip count) as the IR's ``loop``,
``cond`` as a select over its branches, and the refusals: a data-dependent ``while``, host
callbacks.

A scan's step becomes the loop's body graph, translated once, so a backend that claims
``loop`` (xla, onnx) compiles one step, and any other backend gets it unrolled by the loop's
decomposition; a long unrolling warns there, naming the backend (frontend/jax/run.py).
bench/results/jax_loops.md measured why: unrolled, a 64-step LSTM's gradient compiles for
minutes on xla. (``jit``, ``custom_jvp_call``, ``custom_vjp_call`` and ``remat`` are inlined
by the walk itself: translate.py.)
"""

from __future__ import annotations

from ....ir.graph import Value
from ....ir.ops.control import row_type
from ..compat import branches_of, scan_params
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
