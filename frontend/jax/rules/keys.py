"""Shape primitives on PRNG key arrays, which the IR holds as their data ``u32[*S, 2]``.

JAX's params describe the key array's shape ``S``; the data has one trailing axis more (the
two threefry words). :func:`on_key_data` gives the shape rules an equation whose params
describe the data: the trailing axis kept whole. Primitives absent here are refused on keys.

Example::

    >>> WIDEN["slice"]({"start_indices": (1,), "limit_indices": (2,), "strides": None})["limit_indices"]
    (2, 2)
"""

from __future__ import annotations

from dataclasses import replace

from ..compat import Eqn
from ..context import refuse


def _widen_slice(params: dict) -> dict:
    rank = len(params["start_indices"])
    strides = params["strides"] or (1,) * rank
    return params | {"start_indices": (*params["start_indices"], 0), "limit_indices": (*params["limit_indices"], 2),
                     "strides": (*strides, 1)}


def _widen_broadcast(params: dict) -> dict:
    shape = tuple(params["shape"])
    return params | {"shape": (*shape, 2), "broadcast_dimensions": (*params["broadcast_dimensions"], len(shape))}


def _widen_transpose(params: dict) -> dict:
    perm = tuple(params["permutation"])
    return params | {"permutation": (*perm, len(perm))}


def _widen_reshape(params: dict) -> dict:
    if params.get("dimensions") is not None:
        refuse("a reshape with a transposition of PRNG key arrays")
    return params | {"new_sizes": (*params["new_sizes"], 2)}


def _same(params: dict) -> dict:
    """Axes counted from the front (squeeze, expand_dims, concatenate) or none at all."""
    return params


WIDEN = {
    "slice": _widen_slice,
    "broadcast_in_dim": _widen_broadcast,
    "transpose": _widen_transpose,
    "reshape": _widen_reshape,
    "squeeze": _same,
    "expand_dims": _same,
    "concatenate": _same,
    "copy": _same,
    "copy_p": _same,
    "optimization_barrier": _same,
    "scan": _same,  # its body's equations are translated one by one
    "cond": _same,  # the branch index is no key; the chosen keys are selected whole
}


def on_key_data(eqn: Eqn) -> Eqn:
    """``eqn`` (an operand or result is a key array) with params for the keys' u32[..., 2] data."""
    widen = WIDEN.get(eqn.primitive)
    if widen is None:
        refuse(f"`{eqn.primitive}` on PRNG key arrays (parity holds a key as its two uint32 words and "
               f"translates {', '.join(sorted(WIDEN))} of keys): split the keys with jax.random.split instead")
    return replace(eqn, params=widen(eqn.params))
