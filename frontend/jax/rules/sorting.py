"""``sort`` (any number of operands carried along: ``jnp.sort``, ``jnp.argsort``; several keys:
``jnp.lexsort``) and ``top_k``, on the IR's stable ``sort`` and ``top_k``; and the total-order
comparisons ``eq_to``, ``le_to``, ``lt_to`` (JAX 0.10; ``jnp.searchsorted`` and ``jnp.interp``
compare with them).

JAX and the IR order elements alike: stably, -0.0 equal to 0.0, NaN after +inf ascending and
counted largest by ``top_k``. The total-order comparisons follow IEEE totalOrder on floats:
-NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN, a NaN equal to a NaN of the same bits,
-0.0 not equal to +0.0; integers and bools compare as usual. The IR returns i64 indices; JAX's argsort carries an int32 iota
along, so the operands after the key are gathered by those indices.

Example::

    >>> import jax.numpy as jnp
    >>> from parity.frontend.jax import capture
    >>> sorted(capture(jnp.argsort, jnp.zeros(4)).op_counts())
    ['gather', 'iota', 'sort']
"""

from __future__ import annotations

import numpy as np

from ....ir.dtypes import DType
from ....ir.graph import Value
from ..context import JaxContext, refuse


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


_SIGNED_OF_WIDTH = {2: DType.int16, 4: DType.int32, 8: DType.int64}


def _key(ctx: JaxContext, x: Value) -> Value:
    """``x`` as a value whose ordinary order is the total order of x's dtype: a float's bits as the
    signed integer of its width, magnitude bits flipped where the sign bit is set (a negative
    float's bits grow with its magnitude; flipped, they fall, and -0.0 lands just below +0.0)."""
    b, dtype = ctx.b, x.type.dtype
    if dtype.is_complex:
        refuse(f"a total-order comparison of {dtype.short} (parity compares real numbers in total order)")
    if dtype.is_bool:
        return ctx.convert(x, DType.uint8)
    if not dtype.is_float:
        return x
    signed = _SIGNED_OF_WIDTH[np.dtype(dtype.numpy).itemsize]
    bits = b.bitcast_convert(x, dtype=signed)
    shape = x.type.shape
    flipped = b.bitwise_xor(bits, ctx.full(np.iinfo(signed.numpy).max, signed, shape))
    return b.select(b.lt(bits, ctx.full(0, signed, shape)), flipped, bits)


def _total_order(ir_op: str):
    def rule(ctx: JaxContext, x: Value, y: Value):
        shape = ctx.out.shape
        return ctx.b.op(ir_op, _key(ctx, ctx.broadcast(x, shape)), _key(ctx, ctx.broadcast(y, shape)))

    rule.__name__ = rule.__qualname__ = f"{ir_op}_total_order"
    rule.__doc__ = f"``{ir_op}_to``: {ir_op} in IEEE total order (module docstring)."
    return rule


TABLE = {"sort": sort, "top_k": top_k, **{f"{op}_to": _total_order(op) for op in ("eq", "le", "lt")}}
