"""A backend seen at one precision tier: the fast tier's column of the conformance matrix.

:class:`AtPrecision` wraps a backend that declares the tier (``Backend.precisions``):
its claims, devices, deviations and summation are the backend's own, its name is
``"xla@fast"`` (the column), and it compiles through :func:`~parity.backends.base.compile_at`.
Its ``precision`` tells the measurement which bounds hold it (:class:`.declared.Declared`,
``bounds.FAST_BOUNDS``).

Example::

    >>> from parity.backends.registry import get_backend
    >>> from parity.conformance.runner import run
    >>> fast = at_precision([get_backend("xla"), get_backend("reference")], Precision.FAST)
    >>> [b.name for b in fast]  # the reference declares only exact: no fast column
    ['xla@fast']
    >>> run(fast, ops="^logistic$", dtypes=[DType.float32], quick=True).exit_code
    0
"""

from __future__ import annotations

from collections.abc import Sequence

from ..backends.base import Backend, compile_at
from ..backends.registry import get_backend
from ..backends.runtime import vendor_tier
from ..ir.dtypes import DType  # noqa: F401 - the example's
from ..ir.precision import Precision


class AtPrecision(Backend):
    """``inner`` compiled at ``precision`` (a tier it declares), named ``inner@tier``."""

    def __init__(self, inner: Backend, precision: Precision):
        if precision not in getattr(inner, "precisions", (Precision.EXACT,)):
            raise ValueError(f"backend {inner.name!r} does not declare precision {precision.value!r}")
        self.inner, self.precision = inner, precision
        self.name = f"{inner.name}@{precision.value}"
        self.devices = inner.devices
        self.deviations = inner.deviations
        self.summation = getattr(inner, "summation", ())
        self.precisions = (precision,)

    def claims(self):
        return self.inner.claims()

    def available_devices(self):
        return self.inner.available_devices()

    def compile(self, graph, device, precision: Precision | None = None):
        return compile_at(self.inner, graph, device, self.precision)


def column_backend(name: str) -> Backend:
    """The backend of a matrix column: ``"xla"`` is the registered backend, ``"xla@fast"`` its
    fast-tier view (how a worker process rebuilds the columns the controller names)."""
    inner, _, tier = name.partition("@")
    backend = get_backend(inner)
    return AtPrecision(backend, vendor_tier(backend, tier) or Precision(tier)) if tier else backend


def at_precision(backends: Sequence[Backend], precision: Precision | str) -> list[Backend]:
    """The columns of ``backends`` at ``precision``: EXACT is the backends themselves; another
    tier (parity's, or a vendor tier's name) wraps each backend that declares it and leaves out
    the rest (they run exact only)."""
    if precision is Precision.EXACT:
        return list(backends)
    if isinstance(precision, str):
        return [AtPrecision(b, vendor_tier(b, precision)) for b in backends if vendor_tier(b, precision)]
    return [AtPrecision(b, precision) for b in backends if precision in getattr(b, "precisions", (Precision.EXACT,))]
