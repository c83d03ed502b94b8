"""Shape lax primitives: broadcast, reshape, transpose, squeeze, slices, concatenate, split, tile,
stack, unstack, pad, rev, iota, and ``dim_as_value`` (a symbolic size used as a number: a mean's divisor)."""

from __future__ import annotations

from ....ir.graph import Value
from ..context import JaxContext, refuse


def broadcast_in_dim(ctx: JaxContext, x: Value, *dynamic_shape: Value):
    if dynamic_shape:
        refuse("a broadcast to a shape computed at run time")
    return ctx.b.broadcast_in_dim(x, shape=tuple(ctx.params["shape"]),
                                  broadcast_dimensions=tuple(int(d) for d in ctx.params["broadcast_dimensions"]))


def reshape(ctx: JaxContext, x: Value, *dynamic_shape: Value):
    if dynamic_shape:
        refuse("a reshape to a shape computed at run time")
    if ctx.params.get("dimensions") is not None:
        x = ctx.b.transpose(x, permutation=tuple(ctx.params["dimensions"]))
    return ctx.b.reshape(x, shape=tuple(ctx.out.shape))


def squeeze(ctx: JaxContext, x: Value):
    return ctx.b.reshape(x, shape=tuple(ctx.out.shape))


def expand_dims(ctx: JaxContext, x: Value):
    return ctx.b.reshape(x, shape=tuple(ctx.out.shape))


def transpose(ctx: JaxContext, x: Value):
    return ctx.b.transpose(x, permutation=tuple(int(p) for p in ctx.params["permutation"]))


def slice_(ctx: JaxContext, x: Value):
    strides = ctx.params["strides"] or (1,) * x.type.rank
    return ctx.b.slice(x, start_indices=tuple(ctx.params["start_indices"]),
                       limit_indices=tuple(ctx.params["limit_indices"]), strides=tuple(strides))


def _starts(ctx: JaxContext, starts: tuple[Value, ...]) -> list[Value]:
    """Start indices of one dtype (the IR has no implicit promotion): the widest given."""
    dtype = max((s.type.dtype for s in starts), key=lambda d: d.bits, default=None)
    return [ctx.convert(s, dtype) for s in starts]


def dynamic_slice(ctx: JaxContext, x: Value, *starts: Value):
    if len(starts) != x.type.rank:
        refuse("a dynamic_slice with run-time slice sizes")
    return ctx.b.dynamic_slice(x, *_starts(ctx, starts), slice_sizes=tuple(ctx.params["slice_sizes"]))


def dynamic_update_slice(ctx: JaxContext, x: Value, update: Value, *starts: Value):
    """A complex operand is updated as its real and imaginary parts (exact): no backend runs
    the IR's dynamic_update_slice on complex numbers, and JAX's fft gradients emit it."""
    starts = _starts(ctx, starts)
    if x.type.dtype.is_complex:
        b = ctx.b
        parts = [b.dynamic_update_slice(b.op(part, x), b.op(part, update), *starts) for part in ("real", "imag")]
        return b.op("complex", *parts)
    return ctx.b.dynamic_update_slice(x, update, *starts)


def concatenate(ctx: JaxContext, *xs: Value):
    return ctx.b.concatenate(*xs, dimension=int(ctx.params["dimension"]))


def split(ctx: JaxContext, x: Value):
    axis, start, pieces = int(ctx.params["axis"]), 0, []
    for size in ctx.params["sizes"]:
        starts = tuple(start if d == axis else 0 for d in range(x.type.rank))
        limits = tuple(start + int(size) if d == axis else n for d, n in enumerate(x.type.shape))
        pieces.append(ctx.b.slice(x, start_indices=starts, limit_indices=limits, strides=(1,) * x.type.rank))
        start += int(size)
    return pieces


def tile(ctx: JaxContext, x: Value):
    """``jnp.tile``: x broadcast to [reps0, d0, reps1, d1, ...] and each pair merged (copy k of
    a dim's block sits at k·d, as in the tiled result)."""
    reps = tuple(int(r) for r in ctx.params["reps"])
    rank = x.type.rank
    spread = ctx.b.broadcast_in_dim(x, shape=tuple(n for r, d in zip(reps, x.type.shape) for n in (r, d)),
                                    broadcast_dimensions=tuple(range(1, 2 * rank, 2)))
    return ctx.b.reshape(spread, shape=tuple(ctx.out.shape))


def stack(ctx: JaxContext, *xs: Value):
    """``jnp.stack``: each operand with a size-1 dim at ``axis``, concatenated along it."""
    axis = int(ctx.params["axis"])
    shape = tuple(xs[0].type.shape)
    grown = [ctx.b.reshape(x, shape=(*shape[:axis], 1, *shape[axis:])) for x in xs]
    return ctx.b.concatenate(*grown, dimension=axis)


def unstack(ctx: JaxContext, x: Value):
    """``jnp.unstack``: one slice of ``axis`` per index, the dim dropped."""
    axis, shape = int(ctx.params["axis"]), tuple(x.type.shape)
    rank, pieces = len(shape), []
    for k in range(shape[axis]):
        piece = ctx.b.slice(x, start_indices=tuple(k if d == axis else 0 for d in range(rank)),
                            limit_indices=tuple(k + 1 if d == axis else n for d, n in enumerate(shape)),
                            strides=(1,) * rank)
        pieces.append(ctx.b.reshape(piece, shape=shape[:axis] + shape[axis + 1:]))
    return pieces


def pad(ctx: JaxContext, x: Value, value: Value):
    config = ctx.params["padding_config"]
    return ctx.b.pad(x, value, edge_padding_low=tuple(int(lo) for lo, _, _ in config),
                     edge_padding_high=tuple(int(hi) for _, hi, _ in config),
                     interior_padding=tuple(int(inner) for _, _, inner in config))


def rev(ctx: JaxContext, x: Value):
    return ctx.b.reverse(x, dimensions=tuple(ctx.params["dimensions"]))


def iota(ctx: JaxContext):
    return ctx.b.iota(dtype=ctx.out.dtype, shape=tuple(ctx.out.shape), dimension=int(ctx.params["dimension"]))


def dim_as_value(ctx: JaxContext):
    """A size (``jax.export.symbolic_shape``'s ``b``) as a rank-0 value, computed from the
    inputs' shapes (GraphBuilder.size_value)."""
    return ctx.convert(ctx.b.size_value(ctx.params["dim"]), ctx.out.dtype)


TABLE = {
    "broadcast_in_dim": broadcast_in_dim,
    "reshape": reshape,
    "squeeze": squeeze,
    "expand_dims": expand_dims,
    "transpose": transpose,
    "slice": slice_,
    "dynamic_slice": dynamic_slice,
    "dynamic_update_slice": dynamic_update_slice,
    "concatenate": concatenate,
    "split": split,
    "tile": tile,
    "stack": stack,
    "unstack": unstack,
    "pad": pad,
    "rev": rev,
    "iota": iota,
    "dim_as_value": dim_as_value,
}
