"""Composites the XLA backend claims with a rule of its own instead of their decomposition.

Example::

    >>> sorted(RULES)
    ['log_softmax', 'sharding_constraint', 'softmax']
"""

from __future__ import annotations

from jax import lax

from .context import Rule
from .reduction import extreme
from .sharding import constraint_rule


def _shift_invariant(name: str) -> Rule:
    """softmax/log_softmax: the IR's decomposition, with the row maximum taken by a plain max.

    The maximum only shifts the row. A row holding a NaN is NaN everywhere whatever the
    shift (x - m is NaN there, so the row's sum is NaN, and every output divides by it or
    subtracts its log); a row without NaN has the same maximum either way. So XLA's
    NaN-dropping max gives bit-identical results here, and unlike the NaN-checking combiner
    it fuses with the exp and the sum: 8192×1024 softmax + layer norm, 30.3 → 24.0 ms
    (jax.jit: 23.5 ms).
    """

    def rule(ctx, x):
        return ctx.expand({"reduce_max": _plain_max})[0]

    return rule


def _plain_max(ctx, x):
    return lax.reduce(x, extreme(ctx.in_types[0].dtype, high=False), lax.max, ctx.attrs["axes"])


RULES: dict[str, Rule] = {
    "softmax": _shift_invariant("softmax"), "log_softmax": _shift_invariant("log_softmax"),
    "sharding_constraint": constraint_rule,  # a composite claimed natively: the partitioner reads it
}
