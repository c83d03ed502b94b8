"""The rules added for primitives ordinary programs reach (fft, tile, stack, unstack, erfc, cbrt,
reduce_precision, population_count, clz, nextafter, select_and_gather_add, approx_top_k, sort on several keys) through parity.jax.jit on every
backend against jax.jit (tests/jax/compare.py; complex results as their real and imaginary
parts), and erfc's and cbrt's accuracy against the true function (math.erfc, np.cbrt in
float64), which is better than jax.jit's own on CPU.

jnp.fft: each FftType over one to three axes, irfft of odd and even lengths, and the gradients
(jax.grad through rfft/irfft emits fft primitives of the other types, complex
dynamic_update_slice and complex-to-real converts)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import parity.jax
from parity.frontend.jax.errors import UntranslatedPrimitive

from .compare import assert_matches_jax_jit

BACKENDS = ("reference", "xla", "onnx", "inductor", "triton")
_rng = np.random.default_rng(5)
X = _rng.standard_normal((4, 6), dtype=np.float32)
S = _rng.standard_normal((3, 9), dtype=np.float32)
Z = (_rng.standard_normal((2, 6, 10)) + 1j * _rng.standard_normal((2, 6, 10))).astype(np.complex64)
R3 = _rng.standard_normal((2, 3, 4, 5), dtype=np.float32)


IMG = _rng.standard_normal((2, 7, 8, 3), dtype=np.float32)


def _maxpool(x):
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")


PROGRAMS = {
    "rfft_irfft_odd": (lambda x: (jnp.fft.rfft(x), jnp.fft.irfft(jnp.fft.rfft(x) * 1.5, n=9)), (S,)),
    "irfft_even_default_length": (lambda z: jnp.fft.irfft(z), (Z,)),
    "fft_ifft": (lambda z: (jnp.fft.fft(z), jnp.fft.ifft(z, axis=1)), (Z,)),
    "fft2_irfft2": (lambda z: (jnp.fft.fft2(z), jnp.fft.irfft2(z, s=(6, 7))), (Z,)),
    "rfftn_ifftn_three_axes": (lambda x: (jnp.fft.rfftn(x, axes=(1, 2, 3)), jnp.fft.ifftn(x.astype(jnp.complex64),
                                                                                       axes=(1, 2, 3))), (R3,)),
    "grad_abs_rfft": (jax.grad(lambda x: jnp.abs(jnp.fft.rfft(x)).sum()), (S,)),
    "grad_irfft": (jax.grad(lambda x: (jnp.fft.irfft(jnp.fft.rfft(x) * 2.0, n=9) ** 2).sum()), (S,)),
    "grad_fft2_real_input": (jax.grad(lambda x: jnp.abs(jnp.fft.fft2(x.astype(jnp.complex64))).sum()), (S,)),
    # norm="forward"/"ortho": the scale's complex reduce_prod of the lengths is folded (frontend/jax/folding.py)
    "fft_norms": (lambda z, x: (jnp.fft.fft(z, norm="forward"), jnp.fft.ifftn(z, norm="ortho"),
                                jnp.fft.rfft2(x, norm="ortho"), jnp.fft.irfft(z, n=9, norm="forward")), (Z, S)),
    "tile_stack_unstack": (lambda x: (jnp.tile(x, (2, 1, 3)), jnp.stack([x, -x, x * 2], axis=1),
                                      jnp.unstack(x, axis=1)), (X,)),
    "stack_grad": (jax.grad(lambda x: (jnp.stack([x, jnp.sin(x)], axis=-1) ** 2).sum()), (X,)),
    "tile_grad": (jax.grad(lambda x: (jnp.tile(x, (3, 2)) * jnp.arange(144.0).reshape(12, 12)).sum()), (X,)),
    "gelu_exact_and_norm_cdf": (lambda x: (jax.nn.gelu(x * 3, approximate=False), jax.scipy.stats.norm.cdf(x * 4),
                                           lax.erfc(x * 3)), (X,)),
    "bits": (lambda x, i: (lax.reduce_precision(x * 1e4, 5, 10), lax.reduce_precision(x, 8, 7),
                           jnp.bitwise_count(i), lax.clz(i), lax.population_count(i.astype(jnp.uint8))),
             (X, _rng.integers(-2**31, 2**31, (4, 6), dtype=np.int64).astype(np.int32))),
    # forward mode through max-pooling (select_and_gather_add): SAME padding, overlapping windows, jacfwd of a CNN-ish step
    "maxpool_jvp": (lambda x: jax.jvp(_maxpool, (x,), (x * x,)), (IMG,)),
    "maxpool_jacfwd": (jax.jacfwd(lambda x: jnp.tanh(_maxpool(x)).sum(axis=(1, 2))), (IMG[:1, :5, :5, :2],)),
    "lexsort_and_two_key_sort": (lambda x, i: (jnp.lexsort((x, i % 3), axis=1),
                                               lax.sort((i % 2, jnp.round(x), x), dimension=0, num_keys=2)),
                                 (X, _rng.integers(-9, 9, (4, 6)).astype(np.int32))),
    "approx_max_min_k": (lambda x: (lax.approx_max_k(x, 3), lax.approx_min_k(x, 2, reduction_dimension=0)), (X,)),
    "gelu_exact_grad": (jax.grad(lambda x: jax.nn.gelu(x * 3, approximate=False).sum()), (X,)),
    "cbrt_and_grad": (lambda x: (jnp.cbrt(x * 100), jax.grad(lambda v: jnp.cbrt(v).sum())(x)), (X,)),
}
# triton (interpreted: each program takes seconds) runs a transform, a gradient through one and two others
TRITON_SUBSET = {"bits", "maxpool_jvp", "fft2_irfft2", "grad_abs_rfft", "tile_stack_unstack", "gelu_exact_and_norm_cdf"}
CELLS = [(b, p) for b in BACKENDS for p in sorted(PROGRAMS) if b != "triton" or p in TRITON_SUBSET]


@pytest.fixture
def triton_interpreted(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


@pytest.mark.usefixtures("triton_interpreted")
@pytest.mark.parametrize("backend,program", CELLS)
def test_program_matches_jax_jit(backend, program):
    fun, args = PROGRAMS[program]
    assert_matches_jax_jit(_parts(fun), args, backend, program)


def _parts(fun):
    """``fun`` with each complex result as (real, imag)."""
    def parted(*args):
        return jax.tree_util.tree_map(lambda a: (a.real, a.imag) if jnp.iscomplexobj(a) else a, fun(*args))

    return parted


def test_float64_transforms_match_jax_jit_under_x64():
    """complex128 and float64 transforms (the IR's c128/f64 forms), with x64 on for this test only."""
    with jax.enable_x64(True):
        z, x = Z.astype(np.complex128), S.astype(np.float64)
        fun = _parts(lambda z, x: (jnp.fft.ifft2(z), jnp.fft.irfft(z, n=19), jnp.fft.rfft(x)))
        assert_matches_jax_jit(fun, (z, x), "xla", "float64 transforms")


def _ulps(got, exact, dtype):
    """|got - exact| in ULPs of ``dtype`` at the exact value, over the exact values that are normal
    numbers of ``dtype`` (the xla backend flushes subnormals: its declared deviation)."""
    got, exact = np.asarray(got, np.float64), np.asarray(exact, np.float64)
    keep = np.isfinite(exact) & (np.abs(exact) >= np.finfo(dtype).tiny)
    spacing = np.spacing(np.abs(exact[keep]).astype(dtype)).astype(np.float64)
    return float(np.max(np.abs(got[keep] - exact[keep]) / spacing))


_ERFC_X = np.concatenate([np.linspace(-6, 11, 20001), [np.inf, -np.inf, np.nan, 0.0, -0.0, 2.0]]).astype(np.float32)
_CBRT_X = (_rng.choice([-1.0, 1.0], 20000) * np.exp2(_rng.uniform(-126, 128, 20000))).astype(np.float32)


@pytest.mark.usefixtures("triton_interpreted")
@pytest.mark.parametrize("backend", BACKENDS)
def test_erfc_and_cbrt_are_within_half_an_ulp_of_the_true_function(backend):
    """The float64 steps cost < 0.01 ULP of float32 beyond the final rounding's 0.5 (rules/special.py)."""
    erfc = np.asarray(parity.jax.jit(lax.erfc, backend=backend)(_ERFC_X))
    exact = np.array([math.erfc(v) if not np.isnan(v) else np.nan for v in _ERFC_X.astype(np.float64)])
    assert _ulps(erfc, exact, np.float32) <= 0.51
    assert np.array_equal(erfc[-6:-3], [0.0, 2.0, np.nan], equal_nan=True) and erfc[-3] == erfc[-2] == 1.0
    cbrt = np.asarray(parity.jax.jit(jnp.cbrt, backend=backend)(_CBRT_X))
    assert _ulps(cbrt, np.cbrt(_CBRT_X.astype(np.float64)), np.float32) <= 0.51


# f16's flush threshold, smallest normal, largest finite and overflow point, with neighbours, and bit patterns
_F16_EDGES = np.float32([2**-14 * (1 - 2**-12), 2**-14, 2**-14 * (1 - 2**-11), 65504, 65520, 65519.996, 6e-8, 1e-9])
_PATTERNS = np.concatenate([_F16_EDGES, -_F16_EDGES, np.nextafter(_F16_EDGES, 0),
                            _rng.integers(0, 2**32, 4096, dtype=np.uint64).astype(np.uint32).view(np.float32)])
_PATTERNS = _PATTERNS[(np.abs(_PATTERNS) >= np.finfo(np.float32).tiny) | ~np.isfinite(_PATTERNS)]  # xla: DAZ


@pytest.mark.usefixtures("triton_interpreted")
@pytest.mark.parametrize("backend", BACKENDS)
def test_reduce_precision_equals_jax_jit_bit_for_bit(backend):
    for e, m in ((5, 10), (8, 7)):
        fun = jax.jit(lambda x, e=e, m=m: lax.reduce_precision(x, e, m))
        want, got = np.asarray(fun(_PATTERNS)), np.asarray(parity.jax.jit(fun, backend=backend)(_PATTERNS))
        same = (want.view(np.uint32) == got.view(np.uint32)) | (np.isnan(want) & np.isnan(got))
        assert same.all(), (e, m, _PATTERNS[~same][:4], want[~same][:4], got[~same][:4])


# nextafter's operand pairs: every pair of zeros, ±1, the extremes, ±inf and NaN, and random bit patterns
# towards each other, up and down (subnormal operands left out: XLA:CPU reads them as 0, its convention)
_STEP_EDGES = np.float32([0.0, -0.0, 1.0, -1.0, np.finfo(np.float32).tiny, -np.finfo(np.float32).max, np.inf,
                          -np.inf, np.nan, 3.0])
_STEP_X = np.concatenate([np.repeat(_STEP_EDGES, _STEP_EDGES.size), _PATTERNS, _PATTERNS])
_STEP_Y = np.concatenate([np.tile(_STEP_EDGES, _STEP_EDGES.size), _PATTERNS[::-1], -_PATTERNS])


@pytest.mark.usefixtures("triton_interpreted")
@pytest.mark.parametrize("backend", BACKENDS)
def test_nextafter_equals_jax_jit_bit_for_bit(backend):
    """Also through jax.random.truncated_normal, which steps its bounds inward with nextafter."""
    fun = jax.jit(lax.nextafter)
    want, got = np.asarray(fun(_STEP_X, _STEP_Y)), np.asarray(parity.jax.jit(lax.nextafter, backend=backend)(_STEP_X,
                                                                                                            _STEP_Y))
    same = (want.view(np.uint32) == got.view(np.uint32)) | (np.isnan(want) & np.isnan(got))
    assert same.all(), (_STEP_X[~same][:4], _STEP_Y[~same][:4], want[~same][:4], got[~same][:4])
    draw = lambda k: jax.random.truncated_normal(k, -1.0, 1.0, (64,))  # noqa: E731
    assert_matches_jax_jit(draw, (jax.random.key(3),), backend, "truncated_normal")


def test_erfc_rounds_once_where_series_and_fraction_meet():
    """Dense over [1.5, 3.5], where the series hands over to the continued fraction (either one cut
    shorter misrounds here: the fraction at 20 terms reaches 0.512 ULP)."""
    x = np.linspace(1.5, 3.5, 400001).astype(np.float32)
    got = parity.jax.jit(lax.erfc, backend="reference")(x)
    assert _ulps(got, [math.erfc(v) for v in x.astype(np.float64)], np.float32) <= 0.51


def test_erfc_in_bfloat16_and_float16_rounds_once():
    for dtype in (jnp.bfloat16, jnp.float16):
        x = jnp.asarray(np.linspace(-4, 4, 801), dtype)
        got = np.asarray(parity.jax.jit(lax.erfc, backend="reference")(x), np.float64)
        exact = np.array([math.erfc(v) for v in np.asarray(x, np.float64)])
        assert _ulps(got, exact, dtype) <= 0.51, dtype


def test_float64_erfc_is_refused_at_the_users_line():
    with jax.enable_x64(True):
        with pytest.raises(UntranslatedPrimitive) as info:
            parity.jax.jit(lambda x: lax.erfc(x) * 2)(np.ones(3))
    message = str(info.value)
    assert "test_added_rules.py" in message and "`erfc`" in message and "compute it in float32" in message


def _jax_primitive_names() -> set[str]:
    """Every primitive object JAX 0.10's lax, special, linalg, parallel, control flow and PRNG modules define."""
    import importlib

    from jax._src import core

    names = set()
    for module in ("jax._src.lax.lax", "jax._src.lax.special", "jax._src.lax.linalg", "jax._src.lax.parallel",
                   "jax._src.lax.control_flow.loops", "jax._src.lax.control_flow.solves", "jax._src.random.prng",
                   "jax._src.random.core", "jax._src.lax.special"):
        names |= {v.name for v in vars(importlib.import_module(module)).values() if isinstance(v, core.Primitive)}
    return names


def test_known_gaps_name_jax_primitives_without_a_rule():
    from parity.frontend.jax.gaps import GAPS
    from parity.frontend.jax.rules import TABLE

    assert not set(GAPS) & set(TABLE)
    assert set(GAPS) <= _jax_primitive_names(), set(GAPS) - _jax_primitive_names()


@pytest.mark.parametrize("program,primitive", [
    (lambda a: jnp.linalg.solve(a, a[:, :1]), "lu"),
    (lambda a: jnp.linalg.cholesky(a), "cholesky"),
    (lambda a: jnp.linalg.norm(a, 2), "svd"),
    (lambda a: lax.cumlogsumexp(a, axis=1), "cumlogsumexp"),
])
def test_a_known_gap_is_refused_at_the_users_line_with_its_fix(program, primitive):
    from parity.frontend.jax.gaps import GAPS

    a = (np.eye(4) * 3 + 0.5).astype(np.float32)
    with pytest.raises(UntranslatedPrimitive) as info:
        parity.jax.jit(program)(a)
    message = str(info.value)
    why, fix = GAPS[primitive]
    assert message.startswith(f"{__file__}:") and f"`{primitive}`" in message
    assert why in message and fix in message


def test_cumlogsumexp_fix_is_translated():
    x = _rng.standard_normal((3, 16), dtype=np.float32)
    assert_matches_jax_jit(lambda a: lax.associative_scan(jnp.logaddexp, a, axis=1), (x,), "xla", "the fix")
