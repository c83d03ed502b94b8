"""Fourier transforms (ir/ops/fft.py): the reference against direct DFT sums, torch's norm
modes, irfft's Hermitian rule, and the type rules."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from parity.ir import GraphBuilder, TypeRuleError, c64, c128, evaluate, f32, f64, parse


def dft(x: np.ndarray, sign: int) -> np.ndarray:
    """Σ x_k e^(sign·2πi jk/n) along the last axis, as a matrix product in complex128."""
    n = x.shape[-1]
    j, k = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    return x.astype(np.complex128) @ np.exp(sign * 2j * np.pi * j * k / n).T


def run(op, x, oracle=True, **attrs):
    b = GraphBuilder()
    xi = b.input({np.dtype(np.complex64): c64, np.dtype(np.complex128): c128,
                  np.dtype(np.float32): f32, np.dtype(np.float64): f64}[x.dtype][x.shape])
    return evaluate(b.build([b.op(op, xi, **attrs)]), [x], oracle=oracle)[0]


@pytest.mark.parametrize("n", [1, 5, 8])
def test_fft_and_ifft_are_the_dft_sums_with_torchs_scaling(n):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((2, n)) + 1j * rng.standard_normal((2, n))).astype(np.complex128)
    scale = {"backward": (1, 1 / n), "ortho": (n ** -0.5, n ** -0.5), "forward": (1 / n, 1)}
    for norm, (forward, inverse) in scale.items():
        np.testing.assert_allclose(run("fft", x, ndims=1, norm=norm), dft(x, -1) * forward, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(run("ifft", x, ndims=1, norm=norm), dft(x, 1) * inverse, rtol=1e-13, atol=1e-13)
        torch_ifft = torch.fft.ifft(torch.from_numpy(x), norm=norm).numpy()
        np.testing.assert_allclose(run("ifft", x, ndims=1, norm=norm), torch_ifft, rtol=1e-13, atol=1e-13)


def test_two_trailing_axes_transform_both():
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((3, 4, 6)) + 1j * rng.standard_normal((3, 4, 6))).astype(np.complex64)
    got = run("fft", x, oracle=False, ndims=2, norm="backward")
    assert got.dtype == np.complex64
    np.testing.assert_allclose(got, torch.fft.fft2(torch.from_numpy(x)).numpy(), rtol=1e-5, atol=1e-5)


def test_rfft_keeps_the_non_negative_half_and_irfft_inverts_it():
    x = np.arange(7, dtype=np.float64)
    half = run("rfft", x, ndims=1, norm="ortho")
    assert half.shape == (4,) and half.dtype == np.complex128
    np.testing.assert_allclose(half, dft(x, -1)[:4] / np.sqrt(7), atol=1e-13)
    np.testing.assert_allclose(run("irfft", half, ndims=1, length=7, norm="ortho"), x, atol=1e-13)


def test_irfft_ignores_the_imaginary_parts_a_real_signal_cannot_have():
    half = np.array([1 + 5j, 2 - 1j, 3 + 0j, 4 + 9j], np.complex128)  # length 6: bins 0 and 3 are real
    clean = half.copy()
    clean[0], clean[3] = clean[0].real, clean[3].real
    np.testing.assert_array_equal(run("irfft", half, ndims=1, length=6), run("irfft", clean, ndims=1, length=6))


@pytest.mark.parametrize("op, operand, attrs, message", [
    ("fft", f32[8], {"ndims": 1}, "dtype f32 is not accepted"),
    ("rfft", c64[8], {"ndims": 1}, "dtype c64 is not accepted"),
    ("fft", c64[2, 8], {"ndims": 3}, "ndims 3 must be between 1 and the operand's rank 2"),
    ("ifft", c64[2, 0], {"ndims": 1}, "transformed axis 1 of c64[2,0] must have a static size >= 1"),
    ("irfft", c64[8], {"ndims": 1, "length": 8}, "must be length // 2 + 1 = 5 for length 8"),
    ("fft", c64[8], {"ndims": 1, "norm": "none"}, "must be one of ['backward', 'ortho', 'forward']"),
])
def test_type_rules(op, operand, attrs, message):
    b = GraphBuilder()
    with pytest.raises(TypeRuleError, match=re.escape(message)):
        b.op(op, b.input(operand), **attrs)


def test_fft_nodes_print_and_parse_back():
    b = GraphBuilder()
    x = b.input(f64[3, 10])
    g = b.build([b.irfft(b.rfft(x, ndims=1, norm="forward"), ndims=1, length=10, norm="forward")])
    assert 'irfft(%1) {ndims=1, length=10, norm="forward"}' in str(g)
    assert parse(str(g)) == g
