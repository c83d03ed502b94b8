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

from .compare import float64_run, mismatches

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


@pytest.mark.parametrize("backend", ["reference", pytest.param("onnx", marks=pytest.mark.matrix)])
def test_erf_inv_and_normal_draws_match_jax_jit(backend):
    """erf_inv is XLA's float32 polynomial: within the rule against jax.jit over (-1, 1), ±inf at ±1,
    NaN outside; normals from the same key within the same rule."""
    x = np.concatenate([np.linspace(-1, 1, 4001, dtype=np.float32),
                        np.float32([np.nextafter(1, 0), np.nextafter(-1, 0), 1e-30, -0.0, 1.5, np.nan])])
    got = parity.jax.jit(lax.erf_inv, backend=backend)(x)
    problems = mismatches(got, jax.jit(lax.erf_inv)(x), float64_run(lax.erf_inv, x))
    assert not problems, "\n".join(problems)
    key = jax.random.key(3)
    problems = mismatches(parity.jax.jit(_normals, backend=backend)(key), jax.jit(_normals)(key),
                          float64_run(lambda k: jax.random.normal(k, (6, 5), jnp.float32), key))
    assert not problems, "\n".join(problems)


def test_float64_erf_inv_is_refused_with_the_fix():
    with jax.enable_x64(True), pytest.raises(UntranslatedPrimitive, match=r"erf_inv of f64 \(parity translates "
                                                                         r"XLA's float32 polynomial\)"):
        parity.jax.jit(lax.erf_inv, backend="reference")(np.zeros(3))
