"""Complex tensors through the frontend (frontend/aten/complex_numbers.py): the aten ops of
complex parts, polar form and the real views translate, run on the backends that lower
complex numbers, and are refused with the reason by those that do not."""

from __future__ import annotations

import pytest
import torch

import parity
from parity.frontend.errors import UnsupportedAtenOp

from .conftest import run_via_ir


def parts_and_views(x, y):
    z = torch.complex(x, y)
    w = z * z + z / (z + 1) - torch.polar(x.abs(), y)
    return torch.view_as_real(w), w.abs(), w.angle(), (w.conj() * 2).imag, torch.exp(z).real, torch.sqrt(w).conj()


def view_round_trip(x):
    return torch.view_as_complex(x).log().mul(1j)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_reference_interpreter_matches_eager(dtype):
    x, y = torch.randn(5, dtype=dtype), torch.randn(5, dtype=dtype)
    for got, expected in zip(run_via_ir(parts_and_views, x, y), parts_and_views(x, y)):
        assert got.dtype == expected.dtype
        torch.testing.assert_close(got, expected)
    pairs = torch.randn(3, 2, dtype=dtype)
    torch.testing.assert_close(run_via_ir(view_round_trip, pairs)[0], view_round_trip(pairs))


@pytest.mark.parametrize("backend", ["reference", "xla", "onnx", "triton"])
def test_compiled_complex_code_matches_eager(backend):
    x, y = torch.randn(6), torch.randn(6)
    for got, expected in zip(parity.compile(parts_and_views, backend=backend)(x, y), parts_and_views(x, y)):
        torch.testing.assert_close(got, expected)


def test_a_complex_input_and_output_cross_the_boundary():
    z = torch.randn(4, dtype=torch.complex64)
    for backend in ("xla", "onnx", "triton", "inductor"):
        got = parity.compile(lambda z: (z.conj() * z).real + z.imag, backend=backend)(z)
        torch.testing.assert_close(got, (z.conj() * z).real + z.imag)


@pytest.mark.parametrize("backend, why", [
    ("numpy", "the numpy template has no complex kernels"),  # the plugin template (every built-in runs complex)
])
def test_a_backend_without_complex_numbers_refuses_them_with_the_reason(backend, why):
    x, y = torch.randn(3), torch.randn(3)
    with pytest.raises(UnsupportedAtenOp) as info:
        parity.compile(lambda x, y: torch.complex(x, y).abs(), backend=backend)(x, y)
    message = str(info.value)
    assert f"backend {backend!r} does not claim the IR op 'complex': {why}" in message
    assert message.endswith("use a backend that runs it: reference, xla, triton, onnx, inductor")


def test_inductor_runs_complex_elementwise_code_and_ffts_as_eager_does():
    x, y = torch.randn(3), torch.randn(3)
    got = parity.compile(lambda x, y: torch.complex(x, y).abs(), backend="inductor")(x, y)
    torch.testing.assert_close(got, torch.complex(x, y).abs())
    x = torch.randn(4, 8)

    def spectrum(x):
        return torch.fft.irfft(torch.fft.rfft(x, norm="ortho") * 2, n=8, norm="ortho") + torch.fft.fft2(x + 0j).real

    torch.testing.assert_close(parity.compile(spectrum, backend="inductor")(x), spectrum(x), rtol=1e-5, atol=1e-5)
