"""What a frontend-conformance case is: one JAX primitive called on seeded inputs, or a call
that the frontend must refuse, or a registry entry this JAX never emits.

Example::

    >>> import numpy as np
    >>> from jax import lax
    >>> from parity.ir.dtypes import DType
    >>> c = FrontendCase("exp", DType.float32, lax.exp, lambda rng: (np.zeros(2, np.float32),), "zeros")
    >>> c.id, c.op
    ('jax:exp[f32]:zeros', 'jax:exp')
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...ir.dtypes import DType
from ..bounds import Bound
from ..case import InputFn, MaskFn

ROW_PREFIX = "jax:"
FRONTEND_FAMILY = "frontend jax"  # the rows' family in the reports


def row_of(primitive: str) -> str:
    """The conformance row of a JAX primitive: ``jax:NAME``."""
    return f"{ROW_PREFIX}{primitive}"


def is_frontend_row(op: str) -> bool:
    return op.startswith(ROW_PREFIX)


class _Row:
    """The row and id of a case of ``primitive`` in ``dtype``, named ``name``."""

    @property
    def op(self) -> str:
        return row_of(self.primitive)

    @property
    def id(self) -> str:
        return f"{self.op}[{self.dtype.short}]:{self.name}"


@dataclass(frozen=True)
class FrontendCase(_Row):
    """``fun(*inputs(rng))`` reaches ``primitive`` (a check, not an assumption: the traced
    jaxpr must hold it). The captured graph is measured under the bound of its output node's
    IR op, or ``bound`` where the rule composes several rounding ops (its note says how it
    was derived). ``mask`` leaves out implementation-defined elements, as in the op database;
    a JAX convention that differs from the spec is no mask of a case but an entry of
    :data:`.deviations.CONVENTIONS`, checked for staleness."""

    primitive: str
    dtype: DType
    fun: Callable
    inputs: InputFn
    name: str
    tags: tuple[str, ...] = ()
    bound: Bound | None = None
    mask: MaskFn | None = None
    x64: bool = False  # JAX needs x64 though no input is 64-bit (a convert to a 64-bit dtype)
    # the rule narrows on purpose (reduce_precision's round trip through f16): JAX's result is held
    # to the graph evaluated node by node in each node's dtype, as the float64 oracle skips the narrowing
    narrowing: bool = False

    def arrays(self) -> list[np.ndarray]:
        return [np.asarray(a) for a in self.inputs(np.random.default_rng(zlib.crc32(self.id.encode())))]


@dataclass(frozen=True)
class Refusal(_Row):
    """A primitive whose rule refuses it: capturing ``fun(*args)`` must raise ``error`` (a class
    name from ``parity.frontend.jax.errors``) with a message naming ``primitive`` and this file."""

    primitive: str
    fun: Callable
    args: tuple
    error: str
    name: str = "refused"
    dtype: DType = DType.float32


@dataclass(frozen=True)
class NotEmitted:
    """A registry name this JAX never emits: ``same_rule_as`` (the name this JAX uses, whose
    rule must be the same function, so its cases test it), or None with ``why`` (a name kept
    for other JAX versions, reported as not run)."""

    primitive: str
    same_rule_as: str | None
    why: str
