"""Short-time Fourier transforms: ``stft`` and its inverse ``istft``, composites over the fft family.

They follow torch.stft / torch.istft (``return_complex=True`` / a real signal back), so
a spectrogram front-end captured from torch reaches a backend as one op it may claim
whole, and is decomposed into framing, a window multiply and ``rfft`` (``istft``:
``irfft``, a window multiply, overlap-add and the window envelope's division) otherwise.

``stft(x, window)``: ``x`` real ``[..., L]``; ``window`` of the same dtype ``[win_length]``,
``1 <= win_length <= n_fft``, zero-padded on both sides to ``n_fft`` (the left gets
``(n_fft - win_length) // 2``). With ``center`` the signal is first padded by ``n_fft // 2``
on both sides (``pad_mode`` ``"reflect"``, which needs ``L > n_fft // 2``, or ``"constant"``:
zeros). Frame ``t`` is ``x[t*hop : t*hop + n_fft] * window``; its ``rfft`` (``onesided``) or
``fft`` is column ``t`` of the result, complex ``[..., n_freq, n_frames]`` with
``n_freq = n_fft // 2 + 1`` (onesided) or ``n_fft`` and ``n_frames = 1 + (L' - n_fft) // hop``
(``L'`` the padded length, at least ``n_fft``). ``normalized`` scales by ``1/√n_fft``.

``istft(spec, window)``: ``spec`` complex ``[..., n_freq, n_frames]`` as stft makes it
(``onesided``: ``n_freq = n_fft // 2 + 1``, else ``n_fft`` and only its first
``n_fft // 2 + 1`` bins are read, as torch does for a real result). Each column's
``irfft`` of ``n_fft`` points (``1/n_fft``, or ``1/√n_fft`` when ``normalized``) times the
padded window is added at ``t*hop``; the sum is divided by the overlap-added squared
window (the envelope), then trimmed: with ``center`` the first and last ``n_fft // 2``
samples go; ``length`` (> 0) keeps that many from the start, zero-filling past the end.
Where the envelope is 0 torch raises at run time; the IR divides (inf or NaN there).

Example::

    >>> import numpy as np
    >>> from parity.ir import GraphBuilder, evaluate, f32
    >>> b = GraphBuilder()
    >>> x, w = b.input(f32[2, 32]), b.input(f32[8])
    >>> s = b.stft(x, w, n_fft=8, hop_length=2, center=True)
    >>> y = b.istft(s, w, n_fft=8, hop_length=2, center=True, length=32)
    >>> s.type, y.type
    (TensorType(c64[2,5,17]), TensorType(f32[2,32]))
    >>> sig = np.random.default_rng(0).standard_normal((2, 32)).astype(np.float32)
    >>> hann = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(8) / 8)).astype(np.float32)
    >>> _, back = evaluate(b.build([s, y]), [sig, hann])
    >>> bool(np.allclose(back, sig, atol=1e-5))
    True
"""

from __future__ import annotations

import numpy as np

from ..dtypes import DType
from ..errors import TypeRuleError
from ..opdef import Accuracy, AttrKind, AttrSpec, Kind, OpDef
from ..types import TensorType
from .rules import check_dtype

_REAL = (DType.float32, DType.float64)
_COMPLEX = (DType.complex64, DType.complex128)
PAD_MODES = ("reflect", "constant")

_COMMON = (
    AttrSpec("n_fft", AttrKind.INT, doc="points per frame (>= 1)"),
    AttrSpec("hop_length", AttrKind.INT, doc="samples between frame starts (>= 1)"),
    AttrSpec("center", AttrKind.BOOL, True, doc="frames centred on t*hop: the signal padded by n_fft//2"),
    AttrSpec("normalized", AttrKind.BOOL, False, doc="scale by 1/sqrt(n_fft) (torch's normalized=True)"),
    AttrSpec("onesided", AttrKind.BOOL, True, doc="the n_fft//2 + 1 non-negative frequencies only"),
)
_PAD_MODE = AttrSpec("pad_mode", AttrKind.STR, "reflect", choices=PAD_MODES, doc="how center pads the signal")
_LENGTH = AttrSpec("length", AttrKind.INT, 0, doc="samples of the result (0: what the frames cover)")


def _static(op: str, t: TensorType, operand: int) -> None:
    if not t.is_static:
        raise TypeRuleError(op, f"needs static sizes, got {t}", operand)


def _check_common(op: str, window: TensorType, dtype: DType, attrs) -> int:
    """Checks the window against ``dtype`` and n_fft, n_fft and hop; returns n_fft."""
    n_fft, hop = attrs["n_fft"], attrs["hop_length"]
    if n_fft < 1:
        raise TypeRuleError(op, f"must be >= 1, got {n_fft}", "n_fft")
    if hop < 1:
        raise TypeRuleError(op, f"must be >= 1, got {hop}", "hop_length")
    check_dtype(op, window, (dtype,), 1)
    _static(op, window, 1)
    if window.rank != 1 or not 1 <= window.shape[0] <= n_fft:
        raise TypeRuleError(op, f"window {window} must be rank 1 with 1 to n_fft = {n_fft} elements", 1)
    return n_fft


def _padded_length(attrs, length: int) -> int:
    return length + 2 * (attrs["n_fft"] // 2) if attrs["center"] else length


def _stft_infer(types, attrs):
    x, window = types
    op = "stft"
    check_dtype(op, x, _REAL)
    _static(op, x, 0)
    if x.rank < 1:
        raise TypeRuleError(op, f"the signal must have rank >= 1, got {x}", 0)
    n_fft = _check_common(op, window, x.dtype, attrs)
    length = x.shape[-1]
    if attrs["center"] and attrs["pad_mode"] == "reflect" and length <= n_fft // 2:
        raise TypeRuleError(op, f"reflect padding by n_fft // 2 = {n_fft // 2} needs a signal longer than that, "
                                f"got {length} samples", "pad_mode")
    padded = _padded_length(attrs, length)
    if padded < n_fft:
        raise TypeRuleError(op, f"{'the padded signal' if attrs['center'] else 'the signal'} has {padded} samples, "
                                f"fewer than n_fft = {n_fft}", 0)
    frames = 1 + (padded - n_fft) // attrs["hop_length"]
    freqs = n_fft // 2 + 1 if attrs["onesided"] else n_fft
    return (TensorType(x.dtype.complex_dtype, (*x.shape[:-1], freqs, frames)),)


def _istft_infer(types, attrs):
    spec, window = types
    op = "istft"
    check_dtype(op, spec, _COMPLEX)
    _static(op, spec, 0)
    if spec.rank < 2:
        raise TypeRuleError(op, f"the spectrum must be [..., n_freq, n_frames], got {spec}", 0)
    n_fft = _check_common(op, window, spec.dtype.real_dtype, attrs)
    freqs = n_fft // 2 + 1 if attrs["onesided"] else n_fft
    if spec.shape[-2] != freqs or spec.shape[-1] < 1:
        raise TypeRuleError(op, f"the spectrum {spec} must have {freqs} frequencies (n_fft = {n_fft}, onesided="
                                f"{attrs['onesided']}) and at least one frame", 0)
    if attrs["length"] < 0:
        raise TypeRuleError(op, f"must be >= 0 (0: the default), got {attrs['length']}", "length")
    full, start, end = istft_span(attrs, spec.shape[-1])
    if end <= start:
        raise TypeRuleError(op, f"{spec.shape[-1]} frame(s) of n_fft = {n_fft} leave no samples once centred", 0)
    return (TensorType(spec.dtype.real_dtype, (*spec.shape[:-2], end - start)),)


def istft_span(attrs, frames: int) -> tuple[int, int, int]:
    """(overlap-added length, first sample kept, end of the result) as torch.istft computes them;
    the end may pass the overlap-added length (zeros fill it)."""
    n_fft = attrs["n_fft"]
    full = n_fft + attrs["hop_length"] * (frames - 1)
    start = n_fft // 2 if attrs["center"] else 0
    end = start + attrs["length"] if attrs["length"] else full - start
    return full, start, end


def frame_indices(length: int, n_fft: int, hop: int, frames: int) -> np.ndarray:
    """[frames * n_fft] int64: sample k of frame t is ``t*hop + k`` (flattened frame-major)."""
    return (np.arange(frames)[:, None] * hop + np.arange(n_fft)[None, :]).reshape(-1).astype(np.int64)


def _reflect_map(length: int, pad: int) -> np.ndarray:
    """Sample of the reflect-padded signal (pad on both sides) taken from each source index."""
    index = np.arange(-pad, length + pad)
    index = np.abs(index)
    return np.where(index >= length, 2 * (length - 1) - index, index).astype(np.int64)


def _pad_window(b, window, n_fft: int):
    """The window zero-padded to n_fft, centred as torch does."""
    win = window.type.shape[0]
    if win == n_fft:
        return window
    left = (n_fft - win) // 2
    zero = b.constant(0, window.type.dtype)
    return b.pad(window, zero, edge_padding_low=(left,), edge_padding_high=(n_fft - win - left,),
                 interior_padding=(0,))


def _along_last(b, x, index: np.ndarray, batch: tuple, shape: tuple):
    """x[..., index] reshaped to ``batch + shape``: one gather with a constant index."""
    rank = len(batch) + 1
    idx = b.broadcast_in_dim(b.constant(index), shape=(*batch, index.size), broadcast_dimensions=(rank - 1,))
    return b.reshape(b.gather(x, idx, axis=rank - 1), shape=(*batch, *shape))


def _swap_last(b, x):
    rank = x.type.rank
    return b.transpose(x, permutation=(*range(rank - 2), rank - 1, rank - 2))


def _stft_decompose(b, attrs, x, window):
    n_fft, hop = attrs["n_fft"], attrs["hop_length"]
    batch, length = tuple(x.type.shape[:-1]), x.type.shape[-1]
    source = np.arange(length, dtype=np.int64)
    if attrs["center"] and attrs["pad_mode"] == "reflect":
        source = _reflect_map(length, n_fft // 2)  # folded into the framing gather
    elif attrs["center"]:
        rank, pad = x.type.rank, n_fft // 2
        x = b.pad(x, b.constant(0, x.type.dtype), edge_padding_low=(0,) * (rank - 1) + (pad,),
                  edge_padding_high=(0,) * (rank - 1) + (pad,), interior_padding=(0,) * rank)
        source = np.arange(length + 2 * pad, dtype=np.int64)
    frames = 1 + (len(source) - n_fft) // hop
    frame = _along_last(b, x, source[frame_indices(len(source), n_fft, hop, frames)], batch, (frames, n_fft))
    w = b.broadcast_in_dim(_pad_window(b, window, n_fft), shape=frame.type.shape,
                           broadcast_dimensions=(frame.type.rank - 1,))
    windowed = b.mul(frame, w)
    norm = "ortho" if attrs["normalized"] else "backward"
    if attrs["onesided"]:
        spec = b.rfft(windowed, ndims=1, norm=norm)
    else:
        spec = b.fft(b.convert(windowed, dtype=x.type.dtype.complex_dtype), ndims=1, norm=norm)
    return _swap_last(b, spec)


def _istft_decompose(b, attrs, spec, window):
    n_fft, hop = attrs["n_fft"], attrs["hop_length"]
    batch, frames = tuple(spec.type.shape[:-2]), spec.type.shape[-1]
    rank = len(batch) + 1
    dtype = spec.type.dtype.real_dtype
    cols = _swap_last(b, spec)  # [..., frames, n_freq]
    half = n_fft // 2 + 1
    if cols.type.shape[-1] != half:  # a two-sided spectrum: torch reads its first half
        r = cols.type.rank
        cols = b.slice(cols, start_indices=(0,) * r, limit_indices=(*cols.type.shape[:-1], half), strides=(1,) * r)
    signal = b.irfft(cols, ndims=1, length=n_fft, norm="ortho" if attrs["normalized"] else "backward")
    wpad = _pad_window(b, window, n_fft)
    w = b.broadcast_in_dim(wpad, shape=signal.type.shape, broadcast_dimensions=(signal.type.rank - 1,))
    full, start, end = istft_span(attrs, frames)
    index = frame_indices(full, n_fft, hop, frames)
    # overlap-add: every frame's samples added at t*hop (one scatter-add into zeros)
    zeros = b.broadcast_in_dim(b.constant(0, dtype), shape=(*batch, full), broadcast_dimensions=())
    idx = b.broadcast_in_dim(b.constant(index), shape=(*batch, index.size), broadcast_dimensions=(rank - 1,))
    summed = b.scatter(zeros, idx, b.reshape(b.mul(signal, w), shape=(*batch, index.size)), axis=rank - 1,
                       reduce="add")
    # the envelope: the squared window overlap-added the same way
    squares = b.reshape(b.broadcast_in_dim(b.mul(wpad, wpad), shape=(frames, n_fft), broadcast_dimensions=(1,)),
                        shape=(index.size,))
    envelope = b.scatter(b.broadcast_in_dim(b.constant(0, dtype), shape=(full,), broadcast_dimensions=()),
                         b.constant(index), squares, axis=0, reduce="add")
    stop = min(end, full)
    kept = b.slice(summed, start_indices=(0,) * (rank - 1) + (start,), limit_indices=(*batch, stop),
                   strides=(1,) * rank)
    env = b.slice(envelope, start_indices=(start,), limit_indices=(stop,), strides=(1,))
    y = b.div(kept, b.broadcast_in_dim(env, shape=kept.type.shape, broadcast_dimensions=(rank - 1,)))
    if end > full:
        y = b.pad(y, b.constant(0, dtype), edge_padding_low=(0,) * rank,
                  edge_padding_high=(0,) * (rank - 1) + (end - full,), interior_padding=(0,) * rank)
    return y


OPS = (
    OpDef(
        name="stft",
        kind=Kind.COMPOSITE,
        operands=("x", "window"),
        attrs=(*_COMMON, _PAD_MODE),
        infer=_stft_infer,
        dtypes=_REAL,
        accuracy=Accuracy.COMPOSITE,
        decompose=_stft_decompose,
        doc="torch.stft (return_complex=True): windowed frames every hop_length samples, each rfft'd (or "
            "fft'd) into a column of [..., n_freq, n_frames]",
    ),
    OpDef(
        name="istft",
        kind=Kind.COMPOSITE,
        operands=("spec", "window"),
        attrs=(*_COMMON, _LENGTH),
        infer=_istft_infer,
        dtypes=_COMPLEX,
        accuracy=Accuracy.COMPOSITE,
        decompose=_istft_decompose,
        doc="torch.istft: each column irfft'd, windowed and overlap-added, divided by the squared window's "
            "overlap-added envelope, trimmed to length",
    ),
)
