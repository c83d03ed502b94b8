"""JAX's random numbers through parity.jax.jit: threefry2x32 keys (made inside from a seed, or
passed in and returned as key arrays), split, fold_in, bits, randint, a dropout mask, normals
(through erf_inv), all against jax.jit. Bits, keys and masks must be equal, not close."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import parity.jax
from parity.frontend.jax.errors import UntranslatedPrimitive

from .compare import mismatches

BACKENDS = ("reference", "xla", "onnx", "inductor", "triton")


def _draws(seed, key, x):
    """Every key primitive: random_seed (a traced seed), random_split, random_fold_in, random_bits,
    batched keys under vmap, and the integer and boolean draws built on them."""
    made = jax.random.key(seed)
    k1, k2 = jax.random.split(key)
    k3 = jax.random.fold_in(k1, seed)
    grid = jax.random.split(k3, (2, 3))
    return {
        "made": jax.random.key_data(made),
        "split": grid,  # a key array output
        "bits": jax.random.bits(made, (5,)),
        "batched": jax.vmap(lambda k: jax.random.bits(k, (3,)))(grid[1]),
        "randint": jax.random.randint(k2, (7,), -5, 9),
        "mask": jax.random.bernoulli(k3, 0.3, x.shape),
        "dropout": jnp.where(jax.random.bernoulli(k2, 0.8, x.shape), x / 0.8, 0.0),
    }


@pytest.fixture
def triton_interpreted(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


@pytest.mark.usefixtures("triton_interpreted")
@pytest.mark.parametrize("backend", [pytest.param(b, marks=() if b == "reference" else pytest.mark.matrix)
                                     for b in BACKENDS])  # inductor compiles the threefry rounds for ~10 min
@pytest.mark.parametrize("seed", [0, -7, 2**31 - 1])
def test_keys_bits_and_masks_equal_jax_jit_bit_for_bit(backend, seed):
    args = (jnp.int32(seed), jax.random.key(42), jnp.arange(1.0, 25.0).reshape(4, 6))
    got = parity.jax.jit(_draws, backend=backend)(*args)
    want = jax.jit(_draws)(*args)
    assert jax.dtypes.issubdtype(got["split"].dtype, jax.dtypes.prng_key), got["split"].dtype
    for name in want:
        g, w = got[name], want[name]
        if name == "split":
            g, w = jax.random.key_data(g), jax.random.key_data(w)
        assert g.dtype == w.dtype and np.array_equal(np.asarray(g), np.asarray(w)), \
            f"{name} on {backend} (seed {seed}): {np.asarray(g).ravel()[:6]} vs jax.jit's {np.asarray(w).ravel()[:6]}"


def _normals(key):
    return jax.random.normal(key, (6, 5))


ULPS = 4  # measured: at most 2 float32 ulps from jax.jit on reference and xla (XLA's CPU log1p differs)


def _assert_within_ulps(got, want, what):
    got, want = np.asarray(got), np.asarray(want)
    assert np.array_equal(np.isnan(got), np.isnan(want)), f"{what}: NaN elsewhere than jax.jit's"
    finite = np.isfinite(want)
    assert np.array_equal(got[~finite], want[~finite], equal_nan=True), f"{what}: infinities differ from jax.jit's"
    ulps = np.abs(got[finite].astype(np.float64) - want[finite]) / np.spacing(np.abs(want[finite]))
    assert ulps.max() <= ULPS, f"{what}: {ulps.max():.0f} ulps from jax.jit at {want[finite][ulps.argmax()]}"


@pytest.mark.parametrize("backend", ["reference", pytest.param("onnx", marks=pytest.mark.matrix)])
def test_erf_inv_and_normal_draws_match_jax_jit(backend):
    """erf_inv is XLA's float32 polynomial: within ULPS of jax.jit over [-1, 1], ±inf at ±1, NaN
    outside; normals from the same key within the same bound."""
    x = np.concatenate([np.linspace(-1, 1, 4001, dtype=np.float32),
                        np.float32([np.nextafter(1, 0), np.nextafter(-1, 0), 1e-30, -0.0, 1.5, np.nan])])
    _assert_within_ulps(parity.jax.jit(lax.erf_inv, backend=backend)(x), jax.jit(lax.erf_inv)(x), "erf_inv")
    key = jax.random.key(3)
    _assert_within_ulps(parity.jax.jit(_normals, backend=backend)(key), jax.jit(_normals)(key), "normal")


def test_float64_erf_inv_is_refused_with_the_fix():
    with jax.enable_x64(True), pytest.raises(UntranslatedPrimitive, match=r"erf_inv of f64 \(parity translates "
                                                                         r"XLA's float32 polynomial\)"):
        parity.jax.jit(lax.erf_inv, backend="reference")(np.zeros(3))


def test_a_key_or_an_integer_one_off_is_a_mismatch():
    """Integers and key data are compared exactly: a relative tolerance would pass a key whose word is
    one off (one part in 4e9)."""
    keys = jax.random.split(jax.random.key(0))
    shifted = jax.random.wrap_key_data(jax.random.key_data(keys).at[1, 1].add(1))
    problems = mismatches([keys, jnp.int32(2**30)], [shifted, jnp.int32(2**30 + 1)], [shifted, 2**30 + 1])
    assert problems == ["leaf 0: uint32 differs from jax.jit's at 1 places",
                        "leaf 1: int32 differs from jax.jit's at 1 places"], problems
