"""The jaxpr → IR translation table: one explicit entry per lax primitive name.

Values are rules ``rule(ctx, *operands)`` (``ctx`` is a
:class:`~parity.frontend.jax.context.JaxContext`). The table is assembled here from one
module per op family, named after the ``ir/ops`` families they build (elementwise, shape,
reduction, contraction, indexing, sorting, window, complex_numbers, fft; ``special`` builds
lax.special's functions the IR lacks, ``bits`` reduce_precision and bit counts) plus ``control`` (scan, cond, and the
refusals) and ``random`` (threefry keys; ``keys`` adapts the shape rules to key arrays); nothing else registers entries. Calls whose body is inlined (``jit``,
``custom_jvp_call``, ``remat``...) are listed in compat.py, not here.

Example::

    >>> "dot_general" in TABLE and "select_and_scatter_add" in TABLE
    True
"""

from __future__ import annotations

from ...tables import merge_tables
from . import (
    bits,
    complex_numbers,
    contraction,
    control,
    elementwise,
    fft,
    indexing,
    random,
    reduction,
    shape,
    sorting,
    special,
    window,
)

FAMILIES = (elementwise, special, bits, complex_numbers, shape, reduction, contraction, indexing, sorting, window, fft,
            control, random)
# the primitives that take PRNG key arrays as their data themselves; the others go through on_key_data
KEY_NATIVE = frozenset(random.TABLE)


TABLE = merge_tables(FAMILIES, "JAX primitive")


def translated_primitives() -> list[str]:
    """Every JAX primitive with a rule (refusals included), and the inlined calls."""
    from ..compat import INLINED_BODY

    return sorted(set(TABLE) | set(INLINED_BODY))
