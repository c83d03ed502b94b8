"""FFT rules: ``torch.fft`` over the trailing ``ndims`` axes, with the IR's ``norm``.

torch's ``norm`` names the same scalings as the IR's (``backward``: the forward transform
unscaled and the inverse by 1/N; ``ortho``: both by 1/√N; ``forward``: the reverse), so each
op is one call (an empty batch gives an empty result: MKL refuses one). ``irfft``'s output lengths come from the node's result type (the IR's
``irfft`` carries them there; the half-spectrum alone cannot say whether N was odd).
Inductor has no FFT code generation: it calls ATen's kernels (pocketfft on the CPU, cuFFT
on CUDA), within the IR's bound (1 + ⌈log2 N⌉)·ε·‖o‖₂ (docs/conformance.md).

Example::

    >>> import torch
    >>> from parity.ir import c64, f32
    >>> from .context import InductorNodeContext
    >>> ctx = InductorNodeContext({"ndims": 1, "norm": "ortho"}, (f32[4],), (c64[3],))
    >>> RULES["rfft"](ctx, torch.ones(4)).tolist()
    [(2+0j), 0j, 0j]
"""

from __future__ import annotations

import torch

from .context import InductorNodeContext, carried


def _empty_or(transform):
    """``transform``, but an empty batch gives an empty result: MKL's FFT refuses a
    zero-sized batch ("Inconsistent configuration parameters")."""
    def rule(ctx: InductorNodeContext, x):
        if x.numel() == 0:
            out = ctx.out_types[0]
            return torch.zeros(tuple(out.shape), dtype=carried(out.dtype), device=x.device)
        return transform(ctx, x)

    return rule


def _dims(ctx: InductorNodeContext) -> tuple[int, ...]:
    return tuple(range(-ctx.attrs["ndims"], 0))


def _fft(ctx: InductorNodeContext, x):
    return torch.fft.fftn(x, dim=_dims(ctx), norm=ctx.attrs["norm"])


def _ifft(ctx: InductorNodeContext, x):
    return torch.fft.ifftn(x, dim=_dims(ctx), norm=ctx.attrs["norm"])


def _rfft(ctx: InductorNodeContext, x):
    return torch.fft.rfftn(x, dim=_dims(ctx), norm=ctx.attrs["norm"])


def _irfft(ctx: InductorNodeContext, x):
    lengths = tuple(ctx.out_types[0].shape[-ctx.attrs["ndims"]:])  # ints, or symbolic sizes (symbolic.py)
    return torch.fft.irfftn(x, s=lengths, dim=_dims(ctx), norm=ctx.attrs["norm"])


RULES = {name: _empty_or(rule) for name, rule in {"fft": _fft, "ifft": _ifft, "rfft": _rfft, "irfft": _irfft}.items()}
