"""Creation and shape rules: ops that make or move data without computing, one lax call each.

Example::

    >>> import numpy as np
    >>> from parity.ir import f32
    >>> from .context import XlaNodeContext
    >>> ctx = XlaNodeContext({"permutation": (1, 0)}, (f32[2, 3],), (f32[3, 2],))
    >>> RULES["transpose"](ctx, np.zeros((2, 3), np.float32)).shape
    (3, 2)
"""

from __future__ import annotations

import numpy as np
from jax import lax

from .context import Rule, np_dtype


def _constant(ctx):
    return lax.convert_element_type(np.asarray(ctx.attrs["value"]), ctx.attrs["value"].dtype)


def _iota(ctx):
    return lax.broadcasted_iota(np_dtype(ctx.out.dtype), ctx.out.shape, ctx.attrs["dimension"])


def _reshape(ctx, x):
    return lax.reshape(x, ctx.out.shape)


def _broadcast_in_dim(ctx, x):
    return lax.broadcast_in_dim(x, ctx.out.shape, ctx.attrs["broadcast_dimensions"])


def _transpose(ctx, x):
    return lax.transpose(x, ctx.attrs["permutation"])


def _slice(ctx, x):
    a = ctx.attrs
    return lax.slice(x, a["start_indices"], a["limit_indices"], a["strides"])


def _concatenate(ctx, *xs):
    return lax.concatenate(xs, ctx.attrs["dimension"])


def _pad(ctx, x, value):
    a = ctx.attrs
    return lax.pad(x, value, list(zip(a["edge_padding_low"], a["edge_padding_high"], a["interior_padding"])))


def _reverse(ctx, x):
    return lax.rev(x, ctx.attrs["dimensions"])


RULES: dict[str, Rule] = {
    "constant": _constant, "iota": _iota,
    "reshape": _reshape, "broadcast_in_dim": _broadcast_in_dim, "transpose": _transpose,
    "slice": _slice, "concatenate": _concatenate, "pad": _pad, "reverse": _reverse,
}
