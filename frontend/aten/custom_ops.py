"""Custom ops that widely used libraries register with ``torch.library``, translated to the IR.

AOTAutograd keeps a custom op whole (its Python body is opaque to tracing), so a model
that uses one cannot be captured unless parity knows what it computes. Keys are the
ops' qualified names (``transformers.grouped_mm_fallback.default``), as for aten.

- **transformers' MoE fallback.** transformers 5 runs mixture-of-experts layers through
  ``torch._grouped_mm`` only for bfloat16 weights; float32 experts go through its custom
  op ``transformers::grouped_mm_fallback`` (a loop of ``torch.mm`` over each expert's
  rows; rows past the last offset stay zero) and its backward op. Both are exactly
  ``_grouped_mm``'s layouts, so they reuse :mod:`.contraction`'s translation.
- **parity's own spectral ops.** ``parity::stft`` / ``parity::istft`` are torch.stft /
  torch.istft kept whole by frontend/spectral.py; they become the IR composites.

Example::

    >>> sorted(TABLE)  # doctest: +NORMALIZE_WHITESPACE
    ['parity.istft.default', 'parity.stft.default', 'transformers.grouped_mm_fallback.default',
     'transformers.grouped_mm_fallback_backward.default']
"""

from __future__ import annotations

from ..context import TranslationContext
from .contraction import _grouped_outer, _pick_group, grouped_mm


def grouped_mm_fallback(ctx: TranslationContext, input, weight, offs):
    """input [S, K] × weight [G, K, N] with rows split by ``offs``: ``_grouped_mm``'s MoE layout."""
    return grouped_mm(ctx, input, weight, offs)


def grouped_mm_fallback_backward(ctx: TranslationContext, input, weight, offs, grad_output):
    """(grad_input [S, K], grad_weight [G, K, N]); groups with no rows get zero gradients."""
    b = ctx.b
    # grad_input[s] = grad_output[s] @ weight[g(s)]ᵀ: every expert's product, each row's own picked
    every = b.dot_general(grad_output, weight, lhs_contracting_dims=(1,), rhs_contracting_dims=(2,),
                          lhs_batch_dims=(), rhs_batch_dims=())  # [S, G, K]
    grad_input = _pick_group(ctx, every, offs, group_axis=1, row_axis=0)
    # grad_weight[g] = input[rows of g]ᵀ @ grad_output[rows of g]
    grad_weight = _grouped_outer(ctx, b.transpose(input, permutation=(1, 0)), grad_output, offs)
    return grad_input, grad_weight


def _window(ctx: TranslationContext, window, win_length: int, dtype):
    """torch's window=None is a window of ones."""
    return ctx.full(1, dtype, (win_length,)) if window is None else window


def stft(ctx: TranslationContext, x, window, n_fft, hop_length, win_length, center, pad_mode, normalized, onesided):
    """``parity::stft`` (frontend/spectral.py keeps torch.stft whole as it): the IR composite."""
    return ctx.b.stft(x, _window(ctx, window, win_length, x.type.dtype), n_fft=n_fft, hop_length=hop_length,
                      center=center, pad_mode=pad_mode, normalized=normalized, onesided=onesided)


def istft(ctx: TranslationContext, spec, window, n_fft, hop_length, win_length, center, normalized, onesided,
          length):
    """``parity::istft``: the IR composite (length 0: torch's None)."""
    return ctx.b.istft(spec, _window(ctx, window, win_length, spec.type.dtype.real_dtype), n_fft=n_fft,
                       hop_length=hop_length, center=center, normalized=normalized, onesided=onesided, length=length)


TABLE = {
    "parity.stft.default": stft,
    "parity.istft.default": istft,
    "transformers.grouped_mm_fallback.default": grouped_mm_fallback,
    "transformers.grouped_mm_fallback_backward.default": grouped_mm_fallback_backward,
}
