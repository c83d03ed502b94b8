"""How the fuzzer draws a graph's inputs, each by the draw its maker chose.

A draw is ``draw(rng, dtype, shape) -> array``: ordinary values with special values
mixed in, in-range (or distinct) indices, shift amounts around the bit width, random
threefry keys, positive magnitudes.

Example::

    >>> import numpy as np
    >>> from parity.ir.dtypes import DType
    >>> bool(indices(4)(np.random.default_rng(0), DType.int32, (6,)).max() < 4)
    True
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...ir.dtypes import DType
from .. import values as V

Draw = Callable[[np.random.Generator, DType, tuple[int, ...]], np.ndarray]


def with_specials(rng, d: DType, shape) -> np.ndarray:
    """Ordinary values with about a quarter of the elements replaced by special values."""
    base = V.normal(rng, d, shape)
    if not base.size:
        return base
    s = V.specials(d)
    pick = rng.random(shape) < 0.25
    return np.where(pick, s[rng.integers(0, s.size, size=shape)], base).astype(base.dtype)


def indices(n: int) -> Draw:
    return lambda rng, d, shape: rng.integers(0, max(n, 1), size=shape).astype(d.numpy)


def distinct(n: int, axis: int) -> Draw:
    """Indices in [0, n), distinct along ``axis`` (valid 'replace' scatters)."""
    def draw(rng, d, shape):
        moved = shape[:axis] + shape[axis + 1:] + (shape[axis],)
        keys = rng.random(moved[:-1] + (n,))
        out = np.argsort(keys, axis=-1)[..., :shape[axis]]
        return np.moveaxis(out, -1, axis).astype(d.numpy)

    return draw


def shifts(rng, d, shape):
    return rng.integers(max(-2, int(d.iinfo.min)), d.bits + 2, size=shape).astype(d.numpy)


def key_bits(rng, d, shape):
    return rng.integers(0, 2**32, size=shape, dtype=np.uint64).astype(np.uint32)


def positive(rng, d, shape):
    return V.magnitudes(rng, d, shape, -6, 6, signed=False)
