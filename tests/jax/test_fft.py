"""jnp.fft through parity.jax.jit on every backend, against jax.jit (tests/jax/compare.py):
each FftType over one to three axes, irfft of odd and even lengths, and the gradients
(jax.grad through rfft/irfft emits fft primitives of the other types, complex
dynamic_update_slice and complex-to-real converts). Complex results are compared as their
real and imaginary parts."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from .compare import assert_matches_jax_jit

BACKENDS = ("reference", "xla", "onnx", "inductor", "triton")
_rng = np.random.default_rng(11)
X = _rng.standard_normal((3, 9), dtype=np.float32)
Z = (_rng.standard_normal((2, 6, 10)) + 1j * _rng.standard_normal((2, 6, 10))).astype(np.complex64)
R3 = _rng.standard_normal((2, 3, 4, 5), dtype=np.float32)


def _parts(fun):
    """``fun`` with each complex result as (real, imag)."""
    def parted(*args):
        return jax.tree_util.tree_map(lambda a: (a.real, a.imag) if jnp.iscomplexobj(a) else a, fun(*args))

    parted.__name__ = getattr(fun, "__name__", "parted")
    return parted


PROGRAMS = {
    "rfft_irfft_odd": (lambda x: (jnp.fft.rfft(x), jnp.fft.irfft(jnp.fft.rfft(x) * 1.5, n=9)), (X,)),
    "irfft_even_default_length": (lambda z: jnp.fft.irfft(z), (Z,)),
    "fft_ifft": (lambda z: (jnp.fft.fft(z), jnp.fft.ifft(z, axis=1)), (Z,)),
    "fft2_irfft2": (lambda z: (jnp.fft.fft2(z), jnp.fft.irfft2(z, s=(6, 7))), (Z,)),
    "rfftn_ifftn_three_axes": (lambda x: (jnp.fft.rfftn(x, axes=(1, 2, 3)), jnp.fft.ifftn(x.astype(jnp.complex64),
                                                                                       axes=(1, 2, 3))), (R3,)),
    "grad_abs_rfft": (jax.grad(lambda x: jnp.abs(jnp.fft.rfft(x)).sum()), (X,)),
    "grad_irfft": (jax.grad(lambda x: (jnp.fft.irfft(jnp.fft.rfft(x) * 2.0, n=9) ** 2).sum()), (X,)),
    "grad_fft2_real_input": (jax.grad(lambda x: jnp.abs(jnp.fft.fft2(x.astype(jnp.complex64))).sum()), (X,)),
}
# triton runs a forward and a gradient (interpreted: each program takes seconds)
TRITON_SUBSET = {"fft2_irfft2", "grad_abs_rfft"}
CELLS = [(b, p) for b in BACKENDS for p in sorted(PROGRAMS) if b != "triton" or p in TRITON_SUBSET]


@pytest.fixture
def triton_interpreted(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


@pytest.mark.usefixtures("triton_interpreted")
@pytest.mark.parametrize("backend,program", CELLS)
def test_fft_matches_jax_jit(backend, program):
    fun, args = PROGRAMS[program]
    assert_matches_jax_jit(_parts(fun), args, backend, program)


def test_float64_transforms_match_jax_jit_under_x64():
    """complex128 and float64 transforms (the IR's c128/f64 forms), with x64 on for this test only."""
    with jax.enable_x64(True):
        z, x = Z.astype(np.complex128), X.astype(np.float64)
        fun = _parts(lambda z, x: (jnp.fft.ifft2(z), jnp.fft.irfft(z, n=19), jnp.fft.rfft(x)))
        assert_matches_jax_jit(fun, (z, x), "xla", "float64 transforms")
