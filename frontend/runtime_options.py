"""What the user asks of one named backend, checked before anything is captured, for both
frontends (parity.compile, parity.jax.jit): ``backend_options`` against the options the
backend declares (backends/runtime.py, docs/plugins.md), ``precision`` against parity's tiers
and the backend's own. Imports no torch and no JAX.

Example::

    >>> from parity.backends.registry import get_backend
    >>> checked_backend_options("reference", get_backend("reference"), None)
    {}
    >>> checked_precision("fast", "reference", get_backend("reference"))
    <Precision.FAST: 'fast'>
"""

from __future__ import annotations

from collections.abc import Mapping

from ..backends.runtime import VendorTier, resolve_options, vendor_tier
from ..ir.errors import ParityError
from ..ir.precision import Precision
from ..ir.usage import UsageError


def checked_backend_options(name: str, backend, given: Mapping | None) -> dict:
    """``given`` (parity.compile's ``backend_options``) resolved against what the backend named
    ``name`` declares; ``backend="auto"`` takes none (it picks among backends with other options)."""
    if given is not None and not isinstance(given, Mapping):
        raise UsageError(f"backend_options should be a dict of the backend's options, got {type(given).__name__} "
                         f"{given!r}")
    if backend is None:  # auto
        if given:
            raise UsageError(f"backend_options {dict(given)!r} are one backend's options, and backend='auto' picks "
                             f"among several; name the backend: backend='NAME', backend_options={{...}}")
        return {}
    return resolve_options(backend, given)


def checked_precision(precision, name: str, backend) -> Precision | VendorTier:
    """``precision=`` as the tier to compile at: parity's ("exact", "fast"), or a vendor tier the
    named backend declares (``backend`` None: auto, which never picks a vendor tier)."""
    if isinstance(precision, VendorTier):
        return precision
    tier = vendor_tier(backend, precision) if backend is not None and isinstance(precision, str) else None
    if tier is not None:
        return tier
    try:
        return Precision.parse(precision)
    except ParityError as err:
        declared = [p.value for p in getattr(backend, "precisions", ()) if isinstance(p, VendorTier)]
        if declared:
            extra = f"; or one the {name} backend declares: {', '.join(map(repr, declared))}"
        elif backend is None:
            extra = "; a vendor tier is one backend's, and backend='auto' never picks one: name that backend"
        else:
            extra = f"; the {name} backend declares no tier of its own"
        raise UsageError(f"{err}{extra}") from None
