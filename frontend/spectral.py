"""torch.stft / torch.istft kept whole: Dynamo's call becomes ``parity::stft`` / ``parity::istft``.

Both are CompositeImplicitAutograd in torch: AOTAutograd would trace them into framing,
a window multiply and ``_fft_r2c`` (istft: ``_fft_c2r``, overlap-add, the envelope's
division), and no decomposition table can stop that (the table is consulted below the
autograd key, after torch has already decomposed them). So :func:`keep_whole` rewrites
the Dynamo graph, before AOTAutograd sees it: each call it can express becomes a
``torch.library`` custom op, which AOTAutograd keeps opaque, and which the frontend
translates to the IR composite ``stft`` / ``istft`` (frontend/aten/custom_ops.py). The
custom ops run torch.stft / torch.istft eagerly, have fake kernels, and give their
gradients in plain torch ops (pad, flip, unfold and its backward, fft, ...), which
AOTAutograd traces into the backward graph as it does today.

A call is left as it is (decomposed as before) unless every setting is a constant the IR
composite expresses: a float32/float64 signal of rank 1 or 2 (istft: complex64/128),
static sizes, a window of the signal's dtype or none, ``return_complex=True`` (istft: a
real result), ``pad_mode`` reflect or constant, no ``align_to_window``.

Example::

    >>> import torch
    >>> from parity.frontend.spectral import keep_whole
    >>> gm = torch.fx.symbolic_trace(lambda x, w: torch.stft(x, 16, 4, window=w, return_complex=True))
    >>> for n in gm.graph.nodes:  # Dynamo's nodes carry example values; symbolic_trace's do not
    ...     n.meta["example_value"] = {"x": torch.ones(64), "w": torch.ones(16)}.get(n.name)
    >>> keep_whole(gm)
    1
    >>> [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
    ['parity.stft.default']
"""

from __future__ import annotations

import functools
import math

import torch

# torch.stft's and torch.istft's parameters after the signal, with their defaults.
_STFT_PARAMS = (("n_fft", None), ("hop_length", None), ("win_length", None), ("window", None), ("center", True),
                ("pad_mode", "reflect"), ("normalized", False), ("onesided", None), ("return_complex", None),
                ("align_to_window", None))
_ISTFT_PARAMS = (("n_fft", None), ("hop_length", None), ("win_length", None), ("window", None), ("center", True),
                 ("normalized", False), ("onesided", None), ("length", None), ("return_complex", False))
_REAL = (torch.float32, torch.float64)
_COMPLEX = (torch.complex64, torch.complex128)


def keep_whole(gm: torch.fx.GraphModule) -> int:
    """Replace every torch.stft / torch.istft call of Dynamo's graph ``gm`` that the IR
    composites express by ``parity::stft`` / ``parity::istft``; returns how many."""
    ops = _ops()
    replaced = 0
    for node in list(gm.graph.nodes):
        kind = _kind(node)
        if kind is None:
            continue
        args = _bind(node, _STFT_PARAMS if kind == "stft" else _ISTFT_PARAMS)
        settings = args and (_stft_settings if kind == "stft" else _istft_settings)(args)
        if not settings:
            continue
        with gm.graph.inserting_before(node):
            new = gm.graph.call_function(ops[kind], (args["input"], args["window"], *settings))
        new.meta.update(node.meta)
        node.replace_all_uses_with(new)
        gm.graph.erase_node(node)
        replaced += 1
    if replaced:
        gm.recompile()
    return replaced


def _kind(node) -> str | None:
    if node.op == "call_function" and node.target in (torch.stft, torch.functional.stft):
        return "stft"
    if node.op == "call_function" and node.target is torch.istft:
        return "istft"
    if node.op == "call_method" and node.target in ("stft", "istft"):
        return node.target
    return None


def _bind(node, params) -> dict | None:
    """The call's arguments by name (defaults filled), or None when they do not bind."""
    names = ["input"] + [name for name, _ in params]
    if len(node.args) > len(names) or set(node.kwargs) - set(names):
        return None
    bound = dict(params)
    bound.update(zip(names, node.args))
    if set(node.kwargs) & set(names[:len(node.args)]):
        return None
    bound.update(node.kwargs)
    return bound if "input" in bound and bound.get("n_fft") is not None else None


def _example(value):
    """The fake tensor Dynamo recorded for a graph value (None for a constant or an unknown)."""
    if isinstance(value, torch.fx.Node):
        example = value.meta.get("example_value")
        return example if isinstance(example, torch.Tensor) else None
    return None


def _static(t: torch.Tensor) -> bool:
    return all(type(s) is int for s in t.shape)


def _ints(*values) -> bool:
    return all(type(v) is int for v in values)


def _window_fits(args, dtype, n_fft: int, win_length: int) -> bool:
    window = args["window"]
    if window is None:
        return True
    w = _example(window)
    return w is not None and w.dtype == dtype and w.dim() == 1 and _static(w) and w.shape[0] == win_length


def _common(args, signal: torch.Tensor, dtypes) -> tuple[int, int, int] | None:
    """(n_fft, hop, win_length) when the signal, the sizes and the window are expressible."""
    n_fft = args["n_fft"]
    hop = n_fft // 4 if args["hop_length"] is None else args["hop_length"]
    win = n_fft if args["win_length"] is None else args["win_length"]
    if not (_ints(n_fft, hop, win) and n_fft >= 1 and hop >= 1 and 1 <= win <= n_fft):
        return None
    if signal.dtype not in dtypes or not _static(signal):
        return None
    if not all(type(args[k]) is bool for k in ("center", "normalized")):
        return None
    return (n_fft, hop, win) if _window_fits(args, _real_of(signal.dtype), n_fft, win) else None


def _real_of(dtype: torch.dtype) -> torch.dtype:
    return {torch.complex64: torch.float32, torch.complex128: torch.float64}.get(dtype, dtype)


def _stft_settings(args) -> tuple | None:
    x = _example(args["input"])
    if (x is None or x.dim() not in (1, 2) or x.numel() == 0 or args["return_complex"] is not True
            or args["align_to_window"] is not None):
        return None
    common = _common(args, x, _REAL)
    onesided = True if args["onesided"] is None else args["onesided"]
    if common is None or type(onesided) is not bool or args["pad_mode"] not in ("reflect", "constant"):
        return None
    n_fft, hop, win = common
    length = x.shape[-1] + (2 * (n_fft // 2) if args["center"] else 0)
    if length < n_fft or args["center"] and args["pad_mode"] == "reflect" and x.shape[-1] <= n_fft // 2:
        return None  # torch's own error says what is wrong
    return n_fft, hop, win, args["center"], args["pad_mode"], args["normalized"], onesided


def _istft_settings(args) -> tuple | None:
    spec = _example(args["input"])
    if spec is None or spec.dim() not in (2, 3) or args["return_complex"] is not False:
        return None
    common = _common(args, spec, _COMPLEX)
    if common is None:
        return None
    n_fft, hop, win = common
    onesided = spec.shape[-2] != n_fft if args["onesided"] is None else args["onesided"]
    length = 0 if args["length"] is None else args["length"]
    freqs = n_fft // 2 + 1 if onesided else n_fft
    if type(onesided) is not bool or type(length) is not int or length < 0 or spec.shape[-2] != freqs:
        return None
    if length == 0 and args["center"] and n_fft == 1:
        return None  # torch slices [0:-0] there: it returns nothing and fails
    _, start, end = _istft_span(n_fft, hop, spec.shape[-1], args["center"], length)
    if end <= start or spec.numel() == 0:
        return None  # nothing to compute: the IR's type rule refuses an empty result
    return n_fft, hop, win, args["center"], args["normalized"], onesided, length


# -- the custom ops ------------------------------------------------------------------------------


@functools.cache
def _ops() -> dict:
    """Define ``parity::stft`` and ``parity::istft`` once (on first use: importing parity
    does not import torch)."""
    from torch.library import custom_op

    stft = custom_op("parity::stft", mutates_args=())(_stft_eager)
    stft.register_fake(_stft_fake)
    stft.register_autograd(_stft_backward, setup_context=_save_inputs)
    istft = custom_op("parity::istft", mutates_args=())(_istft_eager)
    istft.register_fake(_istft_fake)
    istft.register_autograd(_istft_backward, setup_context=_save_inputs_and_output)
    return {"stft": torch.ops.parity.stft.default, "istft": torch.ops.parity.istft.default}


def _stft_eager(x: torch.Tensor, window: torch.Tensor | None, n_fft: int, hop_length: int, win_length: int,
                center: bool, pad_mode: str, normalized: bool, onesided: bool) -> torch.Tensor:
    return torch.stft(x, n_fft, hop_length, win_length, window, center, pad_mode, normalized, onesided,
                      return_complex=True)


def _stft_fake(x, window, n_fft, hop_length, win_length, center, pad_mode, normalized, onesided):
    length = x.shape[-1] + (2 * (n_fft // 2) if center else 0)
    freqs = n_fft // 2 + 1 if onesided else n_fft
    frames = 1 + (length - n_fft) // hop_length
    # torch.stft's result is [..., freqs, frames] laid out frame by frame: its strides, too
    return x.new_empty((*x.shape[:-1], frames, freqs), dtype=x.dtype.to_complex()).transpose(-1, -2)


def _istft_eager(spec: torch.Tensor, window: torch.Tensor | None, n_fft: int, hop_length: int, win_length: int,
                 center: bool, normalized: bool, onesided: bool, length: int) -> torch.Tensor:
    return torch.istft(spec, n_fft, hop_length, win_length, window, center, normalized, onesided, length or None)


def _istft_span(n_fft: int, hop: int, frames: int, center: bool, length: int) -> tuple[int, int, int]:
    full = n_fft + hop * (frames - 1)
    start = n_fft // 2 if center else 0
    return full, start, start + length if length else full - start


def _istft_fake(spec, window, n_fft, hop_length, win_length, center, normalized, onesided, length):
    _, start, end = _istft_span(n_fft, hop_length, spec.shape[-1], center, length)
    return spec.new_empty((*spec.shape[:-2], end - start), dtype=spec.real.dtype)


def _save_inputs(ctx, inputs, output):
    ctx.inputs = inputs[2:]
    ctx.save_for_backward(inputs[0], inputs[1])


def _save_inputs_and_output(ctx, inputs, output):
    ctx.inputs = inputs[2:]
    ctx.save_for_backward(inputs[0], inputs[1], output)


def _padded_window(window, win_length: int, n_fft: int, dtype, device):
    if window is None:
        window = torch.ones(win_length, dtype=dtype, device=device)
    left = (n_fft - win_length) // 2
    return torch.nn.functional.pad(window, (left, n_fft - win_length - left))


def _window_grad(grad_padded, window, win_length: int, n_fft: int):
    if window is None:
        return None
    left = (n_fft - win_length) // 2
    return grad_padded[left:left + win_length]


def _stft_backward(ctx, grad):
    """Gradients of a real signal's stft: the adjoint of each step (the transform's is an
    unscaled inverse of the zero-padded half-spectrum, its real part; the framing's an
    overlap-add; the padding's a fold of the reflected ends back onto the signal)."""
    x, window = ctx.saved_tensors
    n_fft, hop, win, center, pad_mode, normalized, onesided = ctx.inputs
    pad = n_fft // 2 if center else 0
    padded = torch.nn.functional.pad(x.unsqueeze(0), (pad, pad), mode=pad_mode).squeeze(0) if pad else x
    frames = padded.unfold(-1, n_fft, hop)  # [..., frames, n_fft]
    g = grad.transpose(-1, -2)  # [..., frames, freqs]
    if normalized:
        g = g * (1.0 / math.sqrt(n_fft))
    if onesided:
        g = torch.nn.functional.pad(g, (0, n_fft - g.shape[-1]))
    g_windowed = torch.fft.ifft(g, dim=-1, norm="forward").real
    wpad = _padded_window(window, win, n_fft, x.dtype, x.device)
    g_frames = g_windowed * wpad
    g_wpad = (g_windowed * frames).reshape(-1, n_fft).sum(0)
    g_padded = torch.ops.aten.unfold_backward(g_frames, list(padded.shape), padded.dim() - 1, n_fft, hop)
    g_x = _unpad(g_padded, pad, pad_mode, x.shape[-1])
    return g_x, _window_grad(g_wpad, window, win, n_fft), None, None, None, None, None, None, None


def _unpad(g, pad: int, mode: str, length: int):
    """The gradient of padding a signal of ``length`` by ``pad`` on both sides (``mode``)."""
    if not pad:
        return g
    mid = g[..., pad:pad + length]
    if mode == "constant":
        return mid
    left, right = g[..., :pad].flip(-1), g[..., pad + length:].flip(-1)  # x[pad..1] and x[L-2..L-1-pad]
    return (mid + torch.nn.functional.pad(left, (1, length - 1 - pad))
            + torch.nn.functional.pad(right, (length - 1 - pad, 1)))


def _istft_backward(ctx, grad):
    """Gradients of istft: y = OLA(irfft(spec)·w) / OLA(w²), trimmed. The overlap-add's
    adjoint is framing (unfold), irfft's is rfft with the mirrored bins doubled (torch's
    own formula), and the envelope's quotient rule gives the window a second term."""
    spec, window, y = ctx.saved_tensors
    n_fft, hop, win, center, normalized, onesided, length = ctx.inputs
    frames = spec.shape[-1]
    full, start, end = _istft_span(n_fft, hop, frames, center, length)
    stop = min(end, full)
    real = spec.real.dtype
    wpad = _padded_window(window, win, n_fft, real, spec.device)
    index = torch.arange(frames, device=spec.device)[:, None] * hop + torch.arange(n_fft, device=spec.device)
    envelope = torch.zeros(full, dtype=real, device=spec.device).index_add(0, index.reshape(-1),
                                                                          (wpad * wpad).repeat(frames))
    env = envelope[start:stop]
    g = grad[..., :stop - start]
    g_num = torch.nn.functional.pad(g / env, (start, full - stop))  # d/d(overlap-added numerator)
    g_env = torch.nn.functional.pad(-(g * y[..., :stop - start]) / env, (start, full - stop))
    g_windowed = g_num.unfold(-1, n_fft, hop)  # [..., frames, n_fft]
    half = n_fft // 2 + 1
    cols = spec.transpose(-1, -2)[..., :half]
    z = torch.fft.irfft(cols, n=n_fft, dim=-1, norm="ortho" if normalized else "backward")
    g_z = g_windowed * wpad
    g_cols = torch.fft.rfft(g_z, dim=-1, norm="ortho" if normalized else "forward")
    doubled = n_fft - half  # the bins irfft mirrors
    if doubled > 0:
        scale = torch.ones(half, dtype=real, device=spec.device)
        scale[1:1 + doubled] = 2.0
        g_cols = g_cols * scale
    if not onesided:
        g_cols = torch.nn.functional.pad(g_cols, (0, n_fft - half))
    g_spec = g_cols.transpose(-1, -2)
    g_wpad = (g_windowed * z).reshape(-1, n_fft).sum(0) + 2 * wpad * g_env.unfold(-1, n_fft, hop).reshape(
        -1, n_fft).sum(0)
    return g_spec, _window_grad(g_wpad, window, win, n_fft), None, None, None, None, None, None, None
