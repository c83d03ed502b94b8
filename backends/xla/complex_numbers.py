"""Complex-number rules: lax has complex types, so each op is one lax function.

``complex_abs`` is ``lax.abs`` of a complex operand (XLA computes it without overflow, like
C's hypot), made inf where a part is infinite even beside a NaN; ``angle`` is ``atan2(imag, real)``, through the elementwise atan2 rule (its
subnormal handling included).

Example::

    >>> import numpy as np
    >>> from parity.ir import c64
    >>> from .context import XlaNodeContext
    >>> ctx = XlaNodeContext({}, (c64[1],), ())
    >>> np.asarray(RULES["complex_abs"](ctx, np.array([3 + 4j], np.complex64))).tolist()
    [5.0]
"""

from __future__ import annotations

import numpy as np
from jax import lax

from .context import Rule
from .elementwise import RULES as ELEMENTWISE
from .elementwise import elementwise_rule

_LAX = {"complex": lax.complex, "real": lax.real, "imag": lax.imag, "conj": lax.conj}


def _complex_abs(ctx, z):
    # lax.abs gives NaN for inf + NaN·i; |z| is inf when either part is (C's hypot, the IR's spec).
    re, im = lax.real(z), lax.imag(z)
    infinite = lax.bitwise_or(_is_inf(re), _is_inf(im))
    return lax.select(infinite, lax.full_like(re, np.inf), lax.abs(z))


def _is_inf(x):
    return lax.eq(lax.abs(x), lax.full_like(x, np.inf))


def _angle(ctx, z):
    return ELEMENTWISE["atan2"](ctx, lax.imag(z), lax.real(z))


RULES: dict[str, Rule] = {**{name: elementwise_rule(fn) for name, fn in _LAX.items()}, "angle": _angle,
                          "complex_abs": _complex_abs}
