"""Complex library kernels: torch calls on complex values carried as float pairs.

A complex value lives in the Triton backend as its float pair (``f32[S, 2]``, see
complex_pairs.py), laid out as torch lays out a complex tensor, so each function here
views the pair as complex (``torch.view_as_complex``, no copy), calls torch and hands the
result back as a pair.

* ``fft``, ``ifft``, ``rfft``, ``irfft``: ``torch.fft`` (pocketfft on the CPU, cuFFT on
  CUDA), within the IR's bound (1 + ⌈log₂ N⌉)·ε·‖o‖₂. An FFT's butterflies exchange
  elements across the block at every stage, which Triton can only do through memory, and
  sizes that are not powers of two need Bluestein or mixed radices: a library call has
  the accuracy of pocketfft / cuFFT on every size (docs/backends/triton.md).
* ``complex_exp``, ``complex_log``, ``complex_sqrt``: the IR's ``exp``, ``log``, ``sqrt`` of
  c128 operands (c64 ones are float64 formulas in a kernel, complex_pairs.py). In float64
  parts a kernel has no wider type to hide overflow and cancellation in: ``exp`` needs a
  scaled form past e^709, ``log`` a log1p form near |z| = 1 (½·log(a² + b²) in float64 is
  3.9e5 ULPs of |o| off at 1 + 3e-13 + 1e-10i), ``sqrt`` a scaled hypot. torch computes
  them in complex128 (on complex64 it would miss the contract: exp by 1.33 ULP of |exp z|,
  log near |z| = 1, measured on the inductor backend, ``IN_COMPLEX128``).

Example::

    >>> import torch
    >>> fft(torch.tensor([[1.0, 0.0], [2.0, 0.0]]), ndims=1, norm="backward")[0].tolist()  # 1 + 2 → (3, -1)
    [[3.0, 0.0], [-1.0, 0.0]]
"""

from __future__ import annotations

import torch


def _complex(p: torch.Tensor) -> torch.Tensor:
    return torch.view_as_complex(p.contiguous())


def _pair(z: torch.Tensor) -> tuple[torch.Tensor]:
    return (torch.view_as_real(z).contiguous(),)


def _dims(ndims: int) -> tuple[int, ...]:
    return tuple(range(-ndims, 0))


def _nonempty(x: torch.Tensor) -> bool:
    # MKL's FFT refuses an empty batch ("Inconsistent configuration parameters")
    return x.numel() > 0


def fft(p, *, ndims, norm):
    z = _complex(p)
    return _pair(torch.fft.fftn(z, dim=_dims(ndims), norm=norm) if _nonempty(z) else z.clone())


def ifft(p, *, ndims, norm):
    z = _complex(p)
    return _pair(torch.fft.ifftn(z, dim=_dims(ndims), norm=norm) if _nonempty(z) else z.clone())


def rfft(x, *, ndims, norm):
    if not _nonempty(x):
        shape = (*x.shape[:-1], x.shape[-1] // 2 + 1, 2)
        return (x.new_zeros(shape),)
    return _pair(torch.fft.rfftn(x, dim=_dims(ndims), norm=norm))


def irfft(p, *, ndims, length, norm):
    z = _complex(p)
    lengths = (*z.shape[len(z.shape) - ndims:-1], length)
    if not _nonempty(z):
        return (p.new_zeros((*z.shape[:-1], length)),)
    return (torch.fft.irfftn(z, s=lengths, dim=_dims(ndims), norm=norm).contiguous(),)


def _in_complex128(fn):
    def run(p):
        z = _complex(p)
        return _pair(fn(z.to(torch.complex128)).to(z.dtype))

    run.__name__ = f"complex_{fn.__name__}"
    return run


complex_exp = _in_complex128(torch.exp)
complex_log = _in_complex128(torch.log)
complex_sqrt = _in_complex128(torch.sqrt)

TABLE = {
    "fft": fft, "ifft": ifft, "rfft": rfft, "irfft": irfft,
    "complex_exp": complex_exp, "complex_log": complex_log, "complex_sqrt": complex_sqrt,
}
