"""``sort`` (on one key or several: ``jnp.lexsort``; any number of operands carried along:
``jnp.sort``, ``jnp.argsort``), ``top_k`` and ``approx_top_k`` (exact on CPU), on the IR's stable
``sort`` and ``top_k``; and the total-order comparisons ``eq_to``, ``le_to``, ``lt_to`` (JAX 0.10;
``jnp.searchsorted`` and ``jnp.interp`` compare with them).

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
    """The first ``num_keys`` operands are the keys, most significant first (``jnp.lexsort`` passes
    several): stable sorts from the least significant key up give the lexicographic order (a later
    sort keeps the earlier one among its ties), and every operand is gathered by it."""
    axis, keys = int(ctx.params["dimension"]), int(ctx.params["num_keys"])
    b = ctx.b
    if keys == 1:
        values, order = b.sort(operands[0], axis=axis)
        return [values, *(b.gather(x, order, axis=axis) for x in operands[1:])]
    order = None
    for key in reversed(operands[:keys]):
        _, step = b.sort(key if order is None else b.gather(key, order, axis=axis), axis=axis)
        order = step if order is None else b.gather(order, step, axis=axis)
    return [b.gather(x, order, axis=axis) for x in operands]


def top_k(ctx: JaxContext, x: Value):
    return _top_k(ctx, x, int(ctx.params["k"]), int(ctx.params.get("axis", x.type.rank - 1)))


def approx_top_k(ctx: JaxContext, x: Value):
    """``lax.approx_max_k`` / ``approx_min_k``, exactly: top_k for the maxima, the first k of the
    ascending stable sort for the minima (a recall of 1 meets any ``recall_target``). On distinct
    numbers this is XLA:CPU's result too; among equal values (-0 and 0) and NaNs the approximate
    op defines no choice, and XLA:CPU's differs (measured: it orders -0 below 0, and its minima
    put NaN before +inf and ties in reverse index order)."""
    p = ctx.params
    if not p["aggregate_to_topk"]:
        refuse("approx_top_k with aggregate_to_topk=False (its result size is XLA's partition count): "
               "keep the default aggregate_to_topk=True")
    k, axis = int(p["k"]), int(p["reduction_dimension"]) % x.type.rank
    if p["is_max_k"]:
        return _top_k(ctx, x, k, axis)
    values, order = ctx.b.sort(x, axis=axis)
    rank = x.type.rank
    limits = tuple(k if d == axis else n for d, n in enumerate(x.type.shape))
    first = [ctx.b.slice(v, start_indices=(0,) * rank, limit_indices=limits, strides=(1,) * rank)
             for v in (values, order)]
    return [first[0], ctx.convert(first[1], ctx.eqn.result_types[1].dtype)]


def _top_k(ctx: JaxContext, x: Value, k: int, axis: int):
    last = x.type.rank - 1
    b = ctx.b
    perm = tuple(range(x.type.rank))
    if axis != last:  # the IR's top_k searches the last axis: swap the searched axis there and back
        perm = tuple(last if d == axis else axis if d == last else d for d in range(x.type.rank))
        x = b.transpose(x, permutation=perm)
    values, indices = b.top_k(x, k=k)
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


TABLE = {"sort": sort, "top_k": top_k, "approx_top_k": approx_top_k, **{f"{op}_to": _total_order(op) for op in ("eq", "le", "lt")}}
