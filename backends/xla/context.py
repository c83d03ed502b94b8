"""What an XLA lowering rule sees: the node's attributes and its types, symbols bound.

A rule is ``rule(ctx, *operands) -> value | tuple[value, ...]``: operands and results are
JAX values traced by ``jax.jit``; ``ctx`` is an :class:`XlaNodeContext`, the IR's
:class:`~parity.ir.context.NodeContext` (the node's attributes and its operand and result
types with every symbolic dim bound to its size) with the executable's run-time zero, and
two callbacks into the driver: ``expand`` (the node's decomposition) and ``run_body`` (a
graph-valued attribute, a loop's body).

Example::

    >>> from parity.ir import f32
    >>> ctx = XlaNodeContext({"axis": 0}, (f32[2, 3],), (f32[3],))
    >>> str(ctx.out), np_dtype(ctx.out.dtype)
    ('f32[3]', dtype('float32'))
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import lax

from ...ir.context import NodeContext
from ...ir.dtypes import DType
from ...ir.types import TensorType


@dataclass(frozen=True)
class XlaNodeContext(NodeContext):
    """What an XLA rule sees besides its operands: the node (attributes and types, symbols
    bound) and the executable's run-time zero."""

    zero: Any = None  # the executable's run-time zero (see products.opaque), None when not compiling for a run
    # expand(overrides) -> the node's outputs traced through its decomposition, with rules
    # replaced by op name (a composite's rule that relaxes one of its parts); set by the driver
    expand: Callable[[dict[str, Any]], list[Any]] | None = None
    # run_body(graph, args) -> a nested graph's outputs (a loop's body) traced on ``args``
    # with the same rules, sizes and run-time zero as this node; set by the driver
    run_body: Callable[[Any, list[Any]], list[Any]] | None = None


Rule = Callable[..., Any]


def np_dtype(dtype: DType) -> np.dtype:
    return dtype.numpy


def is_known(size) -> bool:
    """Whether a size is an int here: False for a JAX dimension variable (symbolic export,
    :mod:`.traced_sizes`), whose value is known only when the module runs."""
    return isinstance(size, int)


def size_value(size, dtype) -> Any:
    """A size as a scalar array of ``dtype``: a constant, or the run-time value of a JAX
    dimension expression (symbolic export)."""
    if is_known(size):
        return np.array(size, dtype)
    return lax.convert_element_type(jnp.asarray(size), dtype)


def full(value, t: TensorType):
    """A constant array of type ``t``, every element ``value``."""
    return lax.full(t.shape, np.array(value, np_dtype(t.dtype)))
