"""Fourier transforms: ``fft ifft rfft irfft`` from ONNX ``DFT`` along one axis at a time.

Everything runs in float64 on the carrier layout ``[batch, n, 2]`` (a complex64 operand is
cast up exactly, the result rounded once). onnxruntime's DFT is accurate only for powers of
two: its other sizes (Bluestein with a chirp it computes itself) were measured 3 to 100
times past the IR's bound (1 + ⌈log2 n⌉)·ε·‖o‖₂ even in float64 (n = 100: 3.1, 4099: 27,
60000: 102; docs/backends/onnx.md). So a size n that is not a power of two goes through
Bluestein's algorithm here, with the chirp ``w_m = exp(-πi m²/n)`` (m² reduced mod 2n,
exactly) and its transform computed by NumPy at lowering time; ORT only runs power-of-two
DFTs of size M >= 2n - 1 (``X_k = w_k Σ_j x_j w_j conj(w_{k-j})``, a circular convolution).

The inverse transforms are ``conj(DFT(conj(x)))``, unscaled; then the IR's ``norm`` scales
each part (``backward``: divide by N, ``ortho``: times 1/√N, ``forward``: the other way):
a real factor on each part, never a complex product (which would turn inf·0 into NaN).
``rfft`` transforms the real signal as a complex one with zero imaginary parts and keeps
the first n//2 + 1 bins; ``irfft`` rebuilds the whole Hermitian spectrum along its last axis
(``X[n-k] = conj(X[k])``) and keeps the real part of the inverse, so the imaginary parts of
bin 0 and n/2 are ignored as the IR says.

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, f32
    >>> from .backend import OnnxBackend
    >>> b = GraphBuilder(); x = b.input(f32[6])
    >>> run = OnnxBackend().compile(b.build([b.rfft(x, ndims=1, norm="backward")]), "cpu")
    >>> np.round(run(np.arange(6, dtype=np.float32))[0].astype(np.complex128), 4).tolist()
    [(15+0j), (-3+5.1962j), (-3+1.7321j), (-3+0j)]
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ...ir.dtypes import DType
from .complex_numbers import Parts, split, stack
from .context import OnnxNodeContext

_F64 = DType.float64
_INVERSE = ("ifft", "irfft")


def _is_power_of_two(n: int) -> bool:
    return n & (n - 1) == 0


@lru_cache(maxsize=64)
def _bluestein(n: int) -> tuple[np.ndarray, np.ndarray, int]:
    """(chirp w of n points, DFT_M(conj chirp, wrapped) / M, M) as float64 pairs [.., 2]."""
    m = np.arange(n, dtype=np.int64)
    w = np.exp(-1j * np.pi * ((m * m) % (2 * n)) / n)  # exact reduction: m² < 2**33
    size = 1 << (2 * n - 2).bit_length()  # the power of two >= 2n - 1
    b = np.zeros(size, np.complex128)
    b[:n] = np.conj(w)
    b[size - n + 1:] = np.conj(w[1:])[::-1]
    kernel = np.fft.fft(b) / size  # the 1/M of the inverse folded in (exact: M is a power of two)
    return _pairs(w), _pairs(kernel), size


def _pairs(z: np.ndarray) -> np.ndarray:
    return np.stack([z.real, z.imag], -1).astype(np.float64)


class _Lowering:
    """float64 carrier arithmetic for one node."""

    def __init__(self, ctx: OnnxNodeContext):
        self.ctx = ctx
        self.em = ctx.em

    def op(self, op_type, *xs, **attrs):
        return self.ctx.op(op_type, *xs, **attrs)

    def conj(self, x: str) -> str:
        return self.op("Mul", x, self.em.const(np.array([1.0, -1.0])))

    def cmul_const(self, x: str, pairs: np.ndarray) -> str:
        """``x`` ([B, n, 2]) times the complex constant ``pairs`` ([n, 2]), part by part."""
        a, b = split(self.em, x)
        c, d = (self.em.const(np.ascontiguousarray(pairs[:, i])) for i in (0, 1))
        return stack(self.em, Parts(self.op("Sub", self.op("Mul", a, c), self.op("Mul", b, d)),
                                    self.op("Add", self.op("Mul", a, d), self.op("Mul", b, c))))

    def dft_rows(self, x: str, n: int) -> str:
        """The forward DFT along axis 1 of ``x`` ([B, n, 2], float64)."""
        if n == 1:
            return x
        axis = self.em.const(np.array(1, np.int64))
        if _is_power_of_two(n):
            return self.op("DFT", x, "", axis)
        w, kernel, size = _bluestein(n)
        a = self.cmul_const(x, w)
        a = self.op("Pad", a, self.em.ints([0, 0, 0, 0, size - n, 0]))
        c = self.cmul_const(self.op("DFT", a, "", axis), kernel)
        c = self.conj(self.op("DFT", self.conj(c), "", axis))  # the inverse (1/M is in the kernel)
        c = self.op("Slice", c, self.em.ints([0]), self.em.ints([n]), self.em.ints([1]))
        return self.cmul_const(c, w)

    def along(self, x: str, rank: int, axis: int, n: int, inverse: bool) -> str:
        """The DFT of carrier ``x`` (IR rank ``rank``, so ``rank + 1`` axes) along IR ``axis``."""
        perm = list(range(rank + 1))
        perm[axis], perm[rank - 1] = rank - 1, axis  # the axis next to the pair
        moved = x if axis == rank - 1 else self.op("Transpose", x, perm=perm)
        rows = self.op("Reshape", moved, self.em.ints([-1, n, 2]))
        if inverse:
            rows = self.conj(rows)
        y = self.dft_rows(rows, n)
        if inverse:
            y = self.conj(y)
        y = self.op("Reshape", y, self.op("Shape", moved))
        return y if axis == rank - 1 else self.op("Transpose", y, perm=perm)

    def scaled(self, x: str, op: str, n: int) -> str:
        norm = self.ctx.attrs["norm"]
        if norm == "ortho":
            return self.op("Mul", x, self.ctx.scalar(1 / math.sqrt(n), _F64))
        if (norm == "backward") == (op in _INVERSE):
            return self.op("Div", x, self.ctx.scalar(float(n), _F64))
        return x

    def up(self, x: str, dtype: DType) -> str:
        return x if dtype is _F64 else self.ctx.cast(x, _F64)

    def down(self, x: str, dtype: DType) -> str:
        return x if dtype is _F64 else self.ctx.cast(x, dtype)


def _fft_rule(op: str):
    def rule(ctx: OnnxNodeContext, x):
        low = _Lowering(ctx)
        ndims = ctx.attrs["ndims"]
        t_in, t_out = ctx.in_types[0], ctx.out
        rank = t_in.rank
        axes = list(range(rank - ndims, rank))
        part = t_out.dtype.real_dtype if t_out.dtype.is_complex else t_out.dtype
        if op == "rfft":  # a real signal: zero imaginary parts, the last axis first, then halved
            re = low.up(x, t_in.dtype)
            carrier = stack(ctx.em, Parts(re, ctx.full(0.0, t_in.with_dtype(_F64))))  # 0, not 0·x: x may be inf
            n = int(t_in.shape[-1])
            carrier = low.along(carrier, rank, rank - 1, n, inverse=False)
            carrier = low.op("Slice", carrier, ctx.em.ints([0]), ctx.em.ints([n // 2 + 1]), ctx.em.ints([rank - 1]))
            axes = axes[:-1]
        else:
            carrier = stack(ctx.em, Parts(*(low.up(p, t_in.dtype.real_dtype) for p in x)))
        if op == "irfft":
            axes = axes[:-1]
        sizes = {a: int(t_in.shape[a]) for a in axes}
        for a in axes:
            carrier = low.along(carrier, rank, a, sizes[a], inverse=op in _INVERSE)
        if op == "irfft":
            length = int(t_out.shape[-1])
            carrier = low.along(_hermitian(low, carrier, rank, length), rank, rank - 1, length, inverse=True)
            total = math.prod(sizes.values()) * length
            re = split(ctx.em, carrier).re
            return low.down(low.scaled(re, op, total), part)
        total = math.prod(int(d) for d in (t_in.shape[rank - ndims:]))
        out = split(ctx.em, low.scaled(carrier, op, total))
        return Parts(*(low.down(p, part) for p in out))

    rule.__name__ = op
    return rule


def _hermitian(low: _Lowering, x: str, rank: int, length: int) -> str:
    """The whole spectrum of ``length`` bins from its first length//2 + 1 (last IR axis)."""
    half = length // 2 + 1
    if length == half:  # length 1: nothing to mirror
        return x
    mirror = np.array([length - k for k in range(half, length)], np.int64)  # in [1, half - 1]
    tail = low.conj(low.op("Gather", x, low.em.const(mirror), axis=rank - 1))
    return low.op("Concat", x, tail, axis=rank - 1)


RULES = {op: _fft_rule(op) for op in ("fft", "ifft", "rfft", "irfft")}
