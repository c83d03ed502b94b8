"""Control flow claimed natively: ``loop`` as one ``lax.scan``, a StableHLO ``while``.

The body is traced once, through the same driver as the enclosing graph (``ctx.run_body``:
the same rule overrides, sizes and run-time zero), so XLA compiles one step, not
``length`` copies of it (docs/jax.md, "Loops"). The consts and the run-time zero are
closed over: ``lax.scan`` hoists them into the ``while`` as loop-invariant operands, so
inside the body the zero is still a value XLA only sees at run time, and products the
body returns or adds are kept out of fused sums there too (:mod:`.products`).

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, f32
    >>> from parity.backends.xla.lowering import graph_function
    >>> body = GraphBuilder("step"); total, x = body.input(f32[2]), body.input(f32[2])
    >>> new = body.add(total, x)
    >>> b = GraphBuilder(); init, xs = b.input(f32[2]), b.input(f32[3, 2])
    >>> final, running = b.loop(init, xs, body=body.build([new, new]), length=3, num_carry=1)
    >>> fn = graph_function(b.build([final, running]))
    >>> [np.asarray(v).tolist() for v in fn(np.zeros(2, np.float32), np.ones((3, 2), np.float32))]
    [[3.0, 3.0], [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]]
"""

from __future__ import annotations

from jax import lax

from ...ir.ops.control import loop_parts
from .context import Rule


def _loop(ctx, *operands):
    """``lax.scan`` over the body: carries in order, one row of each ``xs`` per step, each
    ``ys`` stacked on a new leading axis; ``reverse`` reads and writes row ``i`` at ``i``."""
    attrs = ctx.attrs
    consts, carry, xs = loop_parts(operands, attrs)
    n_carry = len(carry)

    def step(carry, rows):
        outs = ctx.run_body(attrs["body"], [*consts, *carry, *rows])
        return tuple(outs[:n_carry]), tuple(outs[n_carry:])

    # xs fix the length themselves; with none (a fori_loop), length= does
    final, ys = lax.scan(step, tuple(carry), tuple(xs), length=attrs["length"], reverse=attrs["reverse"])
    return (*final, *ys)


RULES: dict[str, Rule] = {"loop": _loop}
