"""Reductions and scans: reduce_sum/max/min/prod/and/or, argmax/argmin, cumsum/cumprod/cummax/cummin."""

from __future__ import annotations

from ....ir.graph import Value
from ..context import JaxContext, refuse
from .elementwise import refuse_unaccepted_dtype

REDUCE = {"reduce_sum": "reduce_sum", "reduce_max": "reduce_max", "reduce_min": "reduce_min",
          "reduce_prod": "reduce_prod", "reduce_and": "reduce_and", "reduce_or": "reduce_or"}
CUMULATIVE = ("cumsum", "cumprod", "cummax", "cummin")


def _reduce(ir_op: str):
    def rule(ctx: JaxContext, x: Value):
        refuse_unaccepted_dtype(ir_op, x)  # a complex product (jnp.fft's norm="ortho" scale) is refused here
        return ctx.b.op(ir_op, x, axes=tuple(int(a) for a in ctx.params["axes"]))

    rule.__name__ = f"translate_{ir_op}"
    return rule


def _arg(ir_op: str):
    def rule(ctx: JaxContext, x: Value):
        axes = ctx.params["axes"]
        if len(axes) != 1:
            refuse(f"{ir_op} over {len(axes)} axes")
        return ctx.b.op(ir_op, x, axis=int(axes[0]), index_dtype=ctx.out.dtype)

    rule.__name__ = f"translate_{ir_op}"
    return rule


def _cumulative(ir_op: str):
    def rule(ctx: JaxContext, x: Value):
        return ctx.b.op(ir_op, x, axis=int(ctx.params["axis"]), reverse=bool(ctx.params["reverse"]))

    rule.__name__ = f"translate_{ir_op}"
    return rule


TABLE = {name: _reduce(op) for name, op in REDUCE.items()}
TABLE |= {"argmax": _arg("argmax"), "argmin": _arg("argmin")}
TABLE |= {name: _cumulative(name) for name in CUMULATIVE}
