"""What the Triton backend lowers, read from its rule tables: the backend's claims.

Each op is lowered by one part of the backend, and each part keeps one table:

=================  ==============================================================
``"elementwise"``  ``elementwise.RULES`` and ``elementwise.CONVERSIONS``
``"index"``        ``index_rules.INDEX_RULES`` (shape and indexing ops)
``"reduction"``    ``kernels.REDUCTIONS`` (computed in place by the row kernel)
``"dot"``          ``dot_general``, the dot kernel (``kernels.Dot``)
``"constant"``     ``constant``, the writer (a splatted scalar or a constant buffer)
``"extern"``       ``extern.TABLE`` (library calls on torch tensors)
``"complex"``      ``complex_pairs.RULES`` of the complex-number family (``real``, ...):
                   rewritten to float ops on pairs before scheduling
=================  ==============================================================

:func:`lowered_ops` reads the tables when it is called, and the backend claims exactly
the ops it returns (backend.py): an op whose rule leaves its table leaves the claims.

Example::

    >>> parts = lowered_ops()
    >>> parts["exp"], parts["transpose"], parts["argmax"], parts["sort"]
    ('elementwise', 'index', 'reduction', 'extern')
"""

from __future__ import annotations

from ...ir.ops import ops_in_family
from . import complex_pairs, elementwise, extern, index_rules, kernels


def lowered_ops() -> dict[str, str]:
    """op -> the part of the backend that lowers it, read from the rule tables now."""
    return {
        # the complex-number family; other ops' pair rules (add on c64, ...) add complex dtypes to
        # an op claimed by its real lowering (complex_ops)
        **dict.fromkeys((op for op in complex_pairs.RULES if op in ops_in_family("complex")), "complex"),
        **dict.fromkeys(elementwise.RULES, "elementwise"),
        **dict.fromkeys(elementwise.CONVERSIONS, "elementwise"),
        **dict.fromkeys(index_rules.INDEX_RULES, "index"),
        **dict.fromkeys(kernels.REDUCTIONS, "reduction"),
        "dot_general": "dot",
        "constant": "constant",
        **dict.fromkeys(extern.TABLE, "extern"),
    }


# Ops emitted at any index inside any kernel (no kernel of their own).
INLINE_OPS = frozenset(op for op, part in lowered_ops().items() if part in ("elementwise", "index", "constant"))
# Reductions: each anchors the row kernel of its signature (operand shape, reduced axes).
REDUCE_OPS = frozenset(kernels.REDUCTIONS)
def complex_ops() -> frozenset[str]:
    """Ops with a complex form, read from the tables now: a float-pair rule or an extern call on
    the pair (complex_pairs.py). Only these claim complex dtypes."""
    return frozenset(complex_pairs.RULES) | frozenset(complex_pairs.EXTERN_NAMES)


COMPLEX_OPS = complex_ops()
# Ops run by a library kernel (torch on the same device); see extern.py.
EXTERN_OPS = frozenset(extern.TABLE)
