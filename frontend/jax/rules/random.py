"""PRNG primitives of JAX's default implementation, threefry2x32, bit for bit.

A key array ``key<fry>[*S]`` is its key data in the IR, ``u32[*S, 2]`` (compat.tensor_type),
so ``random_wrap`` and ``random_unwrap`` are the value itself. The other primitives are JAX's
threefry2x32 implementation with ``jax_threefry_partitionable`` (the default since JAX 0.5),
built on the IR's Threefry-2x32 (ir/ops/random.py: uint32 add, xor, shifts and or only):

- ``random_bits(key){shape}`` (32-bit): the IR's ``random_bits``, the xor of the two words for
  the counters (0, i);
- ``random_split(key){shape}``: key i is both words for the counter (0, i);
- ``random_fold_in(key, d)``: both words for the counter (0, d), i.e. ``split(key)[d]``;
- ``random_seed(s)``: the words (0, s) of a 32-bit seed, bit-cast to uint32.

A batch of keys (``vmap`` over keys) is unrolled, one draw per key.

Example::

    >>> import jax, jax.numpy as jnp
    >>> from parity.frontend.jax import capture
    >>> "random_bits" in capture(lambda k: jax.random.bits(k, (3,)), jax.random.key(0)).op_counts()
    True
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ....ir.dtypes import DType
from ....ir.graph import Value
from ....ir.ops.random import threefry2x32
from ..compat import THREEFRY
from ..context import JaxContext, refuse

_U32 = DType.uint32


def _check_impl(ctx: JaxContext) -> None:
    impl = ctx.params.get("impl", THREEFRY)
    if impl != THREEFRY:
        refuse(f"keys of the PRNG implementation {impl!r}; parity translates {THREEFRY} (JAX's default) only: "
               "make keys with jax.random.key(seed)")


def _per_key(ctx: JaxContext, keys: Value, draw: Callable[[Value, int], Value]) -> Value:
    """``draw(key, i)`` for each key of ``keys`` (``u32[*S, 2]``), stacked to ``[*S, *draw's shape]``."""
    batch = tuple(keys.type.shape[:-1])
    if not batch:
        return draw(keys, 0)
    b = ctx.b
    flat = b.reshape(keys, shape=(math.prod(batch), 2))
    rows = []
    for i in range(math.prod(batch)):
        key = b.reshape(b.slice(flat, start_indices=(i, 0), limit_indices=(i + 1, 2), strides=(1, 1)), shape=(2,))
        drawn = draw(key, i)
        rows.append(b.reshape(drawn, shape=(1, *drawn.type.shape)))
    stacked = rows[0] if len(rows) == 1 else b.concatenate(*rows, dimension=0)
    return b.reshape(stacked, shape=(*batch, *stacked.type.shape[1:]))


def _both_words(ctx: JaxContext, key: Value, x0: Value, x1: Value) -> Value:
    """Threefry-2x32 of the counter words (x0, x1) (u32[n] each) as new keys, ``u32[n, 2]``."""
    b = ctx.b
    y0, y1 = threefry2x32(b, key, x0, x1)
    n = x0.type.shape[0]
    return b.concatenate(b.reshape(y0, shape=(n, 1)), b.reshape(y1, shape=(n, 1)), dimension=1)


def random_wrap(ctx: JaxContext, data: Value):
    _check_impl(ctx)
    return data


def random_unwrap(ctx: JaxContext, keys: Value):
    return keys


def random_seed(ctx: JaxContext, seeds: Value):
    """threefry_seed: key words (high 32 bits, low 32 bits) of the seed; a 32-bit seed's high word is 0."""
    _check_impl(ctx)
    dtype = seeds.type.dtype
    if dtype not in (DType.int32, DType.uint32):
        refuse(f"a {dtype.short} seed (parity translates int32 and uint32 seeds; a 64-bit seed comes from "
               "jax_enable_x64): make the seed an int32 or uint32")
    b = ctx.b
    low = b.bitcast_convert(seeds, dtype=_U32) if dtype is DType.int32 else seeds
    shape = tuple(seeds.type.shape)
    words = (ctx.full(0, _U32, (*shape, 1)), b.reshape(low, shape=(*shape, 1)))
    return b.concatenate(*words, dimension=len(shape))


def random_split(ctx: JaxContext, keys: Value):
    shape = tuple(int(d) for d in ctx.params["shape"])
    n = math.prod(shape)

    def split(key: Value, _: int) -> Value:
        counters = ctx.b.iota(dtype=_U32, shape=(n,), dimension=0)
        return ctx.b.reshape(_both_words(ctx, key, ctx.full(0, _U32, (n,)), counters), shape=(*shape, 2))

    return _per_key(ctx, keys, split)


def random_fold_in(ctx: JaxContext, keys: Value, data: Value):
    b = ctx.b
    data = ctx.broadcast(ctx.convert(data, _U32), tuple(keys.type.shape[:-1]))
    flat_data = b.reshape(data, shape=(math.prod(data.type.shape),))

    def fold_in(key: Value, i: int) -> Value:
        d = b.slice(flat_data, start_indices=(i,), limit_indices=(i + 1,), strides=(1,))
        return b.reshape(_both_words(ctx, key, ctx.full(0, _U32, (1,)), d), shape=(2,))

    return _per_key(ctx, keys, fold_in)


def random_bits(ctx: JaxContext, keys: Value):
    width = int(ctx.params["bit_width"])
    if width != 32:
        refuse(f"{width}-bit random bits (parity translates 32-bit draws: float32 uniforms, normals, dropout, "
               "int32 randint); draw 32-bit values and convert them")
    shape = tuple(int(d) for d in ctx.params["shape"])
    return _per_key(ctx, keys, lambda key, _: ctx.b.random_bits(key, shape=shape))


# Primitives that take key arrays as their u32[..., 2] data themselves (the shape rules see them
# through rules/keys.py instead).
TABLE = {
    "random_wrap": random_wrap,
    "random_unwrap": random_unwrap,
    "random_seed": random_seed,
    "random_split": random_split,
    "random_fold_in": random_fold_in,
    "random_bits": random_bits,
}
