"""Complex-number rules: torch has complex tensors, so each op is one torch function.

``complex_abs`` is ``torch.abs`` of a complex operand (hypot-like, no overflow), made inf
where a part is infinite even beside a NaN, as the IR says. ``conj`` is the physical
conjugate (``torch.conj`` only sets a lazy flag that the traced graph would not keep).

Example::

    >>> import torch
    >>> from parity.ir import c64
    >>> from .context import InductorNodeContext
    >>> ctx = InductorNodeContext({}, (c64[1],), ())
    >>> RULES["complex_abs"](ctx, torch.tensor([3 + 4j], dtype=torch.complex64)).tolist()
    [5.0]
"""

from __future__ import annotations

import math

import torch

from .context import InductorNodeContext


def _complex(ctx: InductorNodeContext, re, im):
    return torch.complex(re, im)


def _real(ctx: InductorNodeContext, z):
    return torch.view_as_real(z)[..., 0].clone()


def _imag(ctx: InductorNodeContext, z):
    return torch.view_as_real(z)[..., 1].clone()


def _conj(ctx: InductorNodeContext, z):
    return torch.conj_physical(z)


def _complex_abs(ctx: InductorNodeContext, z):
    parts = torch.view_as_real(z)
    infinite = torch.isinf(parts).any(dim=-1)
    return torch.where(infinite, torch.full_like(parts[..., 0], math.inf), torch.abs(z))


def _angle(ctx: InductorNodeContext, z):
    parts = torch.view_as_real(z)
    return torch.atan2(parts[..., 1], parts[..., 0])


RULES = {"complex": _complex, "real": _real, "imag": _imag, "conj": _conj,
         "complex_abs": _complex_abs, "angle": _angle}
