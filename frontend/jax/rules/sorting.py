"""``sort`` (one key, any number of operands carried along: ``jnp.sort``, ``jnp.argsort``) and
``top_k``, on the IR's stable ``sort`` and ``top_k``.

JAX and the IR order elements alike: stably, -0.0 equal to 0.0, NaN after +inf ascending and
counted largest by ``top_k``. The IR returns i64 indices; JAX's argsort carries an int32 iota
along, so the operands after the key are gathered by those indices.

Example::

    >>> import jax.numpy as jnp
    >>> from parity.frontend.jax import capture
    >>> sorted(capture(jnp.argsort, jnp.zeros(4)).op_counts())
    ['gather', 'iota', 'sort']
"""

from __future__ import annotations

from ....ir.graph import Value
from ..context import JaxContext, refuse


def sort(ctx: JaxContext, key: Value, *carried: Value):
    if int(ctx.params["num_keys"]) != 1:
        refuse(f"a sort on {ctx.params['num_keys']} keys (parity sorts on one key): sort on a combined key")
    axis = int(ctx.params["dimension"])
    values, order = ctx.b.sort(key, axis=axis)
    return [values, *(ctx.b.gather(x, order, axis=axis) for x in carried)]


def top_k(ctx: JaxContext, x: Value):
    axis, last = int(ctx.params.get("axis", x.type.rank - 1)), x.type.rank - 1
    b = ctx.b
    perm = tuple(range(x.type.rank))
    if axis != last:  # the IR's top_k searches the last axis: swap the searched axis there and back
        perm = tuple(last if d == axis else axis if d == last else d for d in range(x.type.rank))
        x = b.transpose(x, permutation=perm)
    values, indices = b.top_k(x, k=int(ctx.params["k"]))
    indices = ctx.convert(indices, ctx.eqn.result_types[1].dtype)
    if axis != last:
        values, indices = (b.transpose(v, permutation=perm) for v in (values, indices))
    return [values, indices]


TABLE = {"sort": sort, "top_k": top_k}
