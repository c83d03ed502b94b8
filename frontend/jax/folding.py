"""Equations on constants that the rules refuse for their dtype, evaluated when translating.

jnp.fft's ``norm="forward"`` and ``"ortho"`` scale the transform by ``1/prod(lengths)`` or its
square root, the product taken of a complex constant (``reduce_prod`` of ``c64[k]``), which
the IR has no op for. Where every operand of such an equation is a constant, NumPy computes
it in the result's dtype and the graph holds the constant (XLA folds the same equation when
compiling; the lengths' product is exact). Only the primitives listed here are folded: a
refusal of anything else, or of these on a value computed at run time, stands.

Example::

    >>> import numpy as np
    >>> FOLDS["reduce_prod"]([np.array([4 + 0j, 10 + 0j], np.complex64)], {"axes": (0,)})
    np.complex64(40+0j)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

FOLDS: dict[str, Callable[[Sequence[np.ndarray], dict], np.ndarray]] = {
    "reduce_prod": lambda xs, params: np.prod(xs[0], axis=tuple(int(a) for a in params["axes"]), dtype=xs[0].dtype),
}


def folded(primitive: str, values: Sequence[np.ndarray | None], params: dict) -> np.ndarray | None:
    """``primitive`` of the constant ``values`` (None where one is not a constant, or the
    primitive is not listed)."""
    fold = FOLDS.get(primitive)
    if fold is None or any(v is None for v in values):
        return None
    return np.asarray(fold(list(values), params))
