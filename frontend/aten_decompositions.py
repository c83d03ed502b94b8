"""The ATen decompositions AOTAutograd applies before translation: torch's core set with
parity's overrides, and the mkldnn switch under which training graphs are traced.

Example::

    >>> import torch
    >>> from parity.frontend.aten_decompositions import decomposition_table
    >>> torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default in decomposition_table()
    False
"""

from __future__ import annotations

import contextlib
import functools

import torch

from .foreach_decompositions import foreach_decompositions


def decomposition_table() -> dict:
    """The ATen decompositions AOTAutograd applies: torch's core ATen set, except attention,
    and the ``_foreach_*`` list ops as per-tensor loops (frontend/foreach_decompositions.py).

    The fused CPU flash-attention forward stays whole: its core decomposition returns a
    logsumexp of the wrong shape, which the fused backward then reads (silently wrong
    gradients). frontend/aten/attention.py translates the forward/backward pair instead.
    """
    from torch._decomp import core_aten_decompositions

    table = dict(core_aten_decompositions())
    table.update(foreach_decompositions())
    table.pop(torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default, None)
    pow_scalar = torch.ops.aten.pow.Tensor_Scalar
    table[pow_scalar] = functools.partial(_pow_small_exponent, fallback=table.get(pow_scalar))
    select_backward = torch.ops.aten.select_backward.default
    table[select_backward] = functools.partial(_select_backward_as_pad, fallback=table.get(select_backward))
    for scatter in (torch.ops.aten.slice_scatter.default, torch.ops.aten.select_scatter.default):
        table[scatter] = functools.partial(_complex_scatter_by_parts, scatter, fallback=table.get(scatter))
    return table


def _complex_scatter_by_parts(op, x, src, *args, fallback=None):
    """``op`` (slice_scatter, select_scatter) of complex tensors as the same op on their real
    and imaginary parts: the IR's scatter takes no complex operands, and the FFT's gradients
    write into complex zeros this way (``rfft``'s backward pads its half-spectrum)."""
    if x.is_complex():
        src = src.to(x.dtype)
        real = op(torch.ops.aten.real.default(x), torch.ops.aten.real.default(src), *args)
        imag = op(torch.ops.aten.imag.default(x), torch.ops.aten.imag.default(src), *args)
        return torch.ops.aten.complex.default(real, imag)
    return fallback(x, src, *args) if fallback is not None else NotImplemented


def _pow_small_exponent(x, exponent, *, fallback=None):
    """``x ** 1`` and ``x ** 2`` of a float tensor as ``x`` and ``x * x``, as eager torch computes them.

    Both are exact rewrites (x² correctly rounded is x·x; x¹ is x, NaN and -0 included), so
    every backend gives the same bits as without the rewrite. The point is the backward of a
    square (``pow_backward``: ``grad * (2 * x.pow(1))``): ONNX Runtime runs Pow(x, 1)
    through the generic powf (its cost: docs/frontend.md). Other exponents keep torch's own path.
    """
    if isinstance(x, torch.Tensor) and x.is_floating_point() and type(exponent) in (int, float):
        if exponent == 1:
            return torch.ops.aten.clone.default(x)
        if exponent == 2:
            return torch.ops.aten.mul.Tensor(x, x)
    return fallback(x, exponent) if fallback is not None else NotImplemented


def _select_backward_as_pad(grad, input_sizes, dim, index, *, fallback=None):
    """The gradient of ``x.select(dim, index)``: ``grad`` zero-padded back to ``input_sizes``.

    torch's core decomposition builds the same tensor as ``where(arange == index, grad, 0)``
    over the whole input (an iota, a compare and a select, each a pass over it); a pad is
    one pass and gives the same bits (+0 where the mask was off, ``grad`` itself where on).
    The encoder's ``qkv[0], qkv[1], qkv[2]`` have three of them in the backward, on
    f32[3,8,4,128,64]. A symbolic size works too (``x[:, -1]`` under ``dynamic=True``: the
    pad before it is ``seq - 1``); a symbolic index keeps torch's decomposition.
    """
    sizes = list(input_sizes)
    if fallback is not None and not (type(dim) is int and type(index) is int):
        return fallback(grad, input_sizes, dim, index)
    rank = len(sizes)
    dim %= rank
    if index < 0:  # x[:, -1]: counted from the end (torch guarded size >= -index)
        index = sizes[dim] + index
    if not all(type(size) is int for size in sizes):
        # The IR's pad takes static widths, and zeros built here in torch would make it guard
        # on the sizes (a contiguity check specializes a dim of size 2): the op stays whole,
        # for frontend/aten/indexing.py's select_backward (zeros of symbolic widths around it).
        return NotImplemented
    row = torch.ops.aten.unsqueeze.default(grad, dim)
    pad = []
    for d in reversed(range(rank)):  # constant_pad_nd: (low, high) pairs from the last dim
        pad += [index, sizes[d] - 1 - index] if d == dim else [0, 0]
    return torch.ops.aten.constant_pad_nd.default(row, pad, 0.0)


@contextlib.contextmanager
def mkldnn_off():
    """Trace with mkldnn off: with it on, torch's aten.lstm decomposition emits the fused
    aten.mkldnn_rnn_layer for a layer whose input needs no grad; with it off, plain
    matmuls and pointwise ops, which translate. (Set directly: torch.backends.mkldnn.flags()
    also resets TF32 and warns about it.)"""
    enabled = torch._C._get_mkldnn_enabled()
    torch._C._set_mkldnn_enabled(False)
    try:
        yield
    finally:
        torch._C._set_mkldnn_enabled(enabled)
