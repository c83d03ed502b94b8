"""``sort`` (any number of operands carried along: ``jnp.sort``, ``jnp.argsort``; several keys:
``jnp.lexsort``) and ``top_k``, on the IR's stable ``sort`` and ``top_k``.

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

from ....ir.dtypes import DType
from ....ir.graph import Value
from ..context import JaxContext


def sort(ctx: JaxContext, *operands: Value):
    axis, num_keys = int(ctx.params["dimension"]), int(ctx.params["num_keys"])
    b = ctx.b
    if num_keys == 1:
        values, order = b.sort(operands[0], axis=axis)
        return [values, *(b.gather(x, order, axis=axis) for x in operands[1:])]
    return [b.gather(x, _lexicographic_order(ctx, operands[:num_keys], axis), axis=axis) for x in operands]


def _lexicographic_order(ctx: JaxContext, keys: tuple[Value, ...], axis: int) -> Value:
    """The permutation that sorts by ``keys[0]``, ties by ``keys[1]``, ... (``jnp.lexsort``,
    ``lax.sort(num_keys>1)``): stable sorts from the last key to the first, each of the key
    permuted by the order so far. Stability makes every earlier pass the tie-break of the next,
    and full ties keep their positions, as XLA's stable sort does."""
    b = ctx.b
    order = b.iota(dtype=DType.int64, shape=tuple(keys[0].type.shape), dimension=axis)
    for key in reversed(keys):
        _, step = b.sort(b.gather(key, order, axis=axis), axis=axis)
        order = b.gather(order, step, axis=axis)
    return order


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
