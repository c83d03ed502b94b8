"""Shared case builders: the layout variants every elementwise op is run through.

A *draw* is ``draw(rng, shape) -> tuple of operand arrays`` that respects the op's
domain. :func:`layouts` turns one draw into the standard set of cases: a random
block, empty and size-1 dims, a scalar, non-contiguous views and a broadcast operand
(made in the graph by ``broadcast_in_dim``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ...ir.dtypes import DType
from ...ir.ops import ops_in_family
from ..case import Case, MaskFn
from ..values import non_contiguous, transposed

Draw = Callable[[np.random.Generator, tuple[int, ...]], Sequence[np.ndarray]]

EDGE = "edge"  # special values: NaN, ±inf, ±0, subnormals, extremes
LAYOUT = "layout"  # empty / size-1 / scalar / non-contiguous / broadcast
LONG = "long"  # a reduction over >= 10**6 terms
RANDOM = "random"


def ops_of(families: Sequence[str]) -> tuple[str, ...]:
    """The ops of these op-table families (``ir/ops``), in table order: a conformance family
    covers whole op-table families, so a new op lands in one without a list to edit."""
    return tuple(op for family in families for op in ops_in_family(family))


def case(op: str, dtype: DType, name: str, inputs, attrs: Mapping[str, Any] | None = None,
         tags: Sequence[str] = (RANDOM,), **kw) -> Case:
    """A Case whose ``inputs`` is either a draw function or a fixed tuple of arrays."""
    fn = inputs if callable(inputs) else _fixed(tuple(inputs))
    return Case(op, dtype, fn, dict(attrs or {}), name, tuple(tags), **kw)


def _fixed(arrays: tuple[np.ndarray, ...]):
    def inputs(rng):
        return arrays

    return inputs


def layouts(op: str, dtype: DType, draw: Draw, *, attrs: Mapping[str, Any] | None = None,
            mask: MaskFn | None = None, broadcast_operand: int = 0, prefix: str = "") -> list[Case]:
    """The standard cases of an elementwise op for one draw (see the module docstring)."""
    attrs = dict(attrs or {})

    def variant(name, shape, tags, transform=None, broadcast=None):
        def inputs(rng):
            arrays = list(draw(rng, shape))
            if broadcast is not None:
                i = broadcast_operand
                arrays[i] = np.ascontiguousarray(arrays[i][0])  # drop the leading dim: (6,) -> (4, 6) in the graph
            return [transform(a) for a in arrays] if transform else arrays

        bc = {broadcast_operand: broadcast} if broadcast is not None else {}
        return Case(op, dtype, inputs, attrs, prefix + name, tags, bc, mask)

    return [
        variant("random", (4, 7), (RANDOM,)),
        variant("empty", (0, 3), (LAYOUT,)),
        variant("scalar", (), (LAYOUT,)),
        variant("size1", (1, 1, 3), (LAYOUT,)),
        variant("transposed", (5, 6), (LAYOUT,), transform=transposed),
        variant("strided", (3, 5), (LAYOUT,), transform=non_contiguous),
        variant("broadcast", (4, 6), (LAYOUT,), broadcast=((4, 6), (1,))),
    ]


def mask_where(fn: Callable[..., np.ndarray]) -> MaskFn:
    """A one-output mask computed from the inputs: ``fn(*arrays) -> bool array``."""

    def mask(arrays):
        return [np.asarray(fn(*arrays))]

    return mask
