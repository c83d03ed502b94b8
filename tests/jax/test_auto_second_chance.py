"""backend="auto" on JAX programs gives a float output off jax.jit's the torch frontend's second
chance: no farther from a float64 run than NOISE_FACTOR times jax.jit's own distance from it
(NOISE_LEVEL_FACTOR where jax.jit has no correct digit). The float64 run is made only when needed."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from parity.frontend.jax.auto import float64_run, mismatch_past_float64


def _counting(outputs):
    calls = []

    def exact():
        calls.append(1)
        return outputs

    return exact, calls


def test_outputs_within_rtol_never_ask_for_the_float64_run():
    exact, calls = _counting([np.float64([1.0])])
    assert mismatch_past_float64([np.float32([1.00001])], [np.float32([1.0])], exact) is None
    assert calls == []


def test_an_ill_conditioned_output_passes_when_no_farther_from_float64_than_twice_jax_jits():
    want, exact = np.float32([1.0e-3]), [np.float64([1.1e-3])]  # jax.jit is 1e-4 off float64
    near = np.float32([1.15e-3])  # 0.5e-4 off: closer than jax.jit
    assert mismatch_past_float64([near], [want], lambda: exact) is None
    far = np.float32([1.35e-3])  # 2.5e-4 off: 2.5x jax.jit's distance
    why = mismatch_past_float64([far], [want], lambda: exact)
    assert why.startswith("output 0 is off jax.jit's by") and "2.5x jax.jit's distance from a float64 run (at most 2x)" in why


def test_rounding_noise_around_an_analytic_zero_gets_the_wider_factor():
    exact = [np.float64([0.0, 1e-12])]
    assert mismatch_past_float64([np.float32([-5e-8, 0.0])], [np.float32([3e-8, 1e-8])], lambda: exact) is None
    why = mismatch_past_float64([np.float32([-6e-7, 0.0])], [np.float32([3e-8, 1e-8])], lambda: exact)
    assert "(at most 16x)" in why


def test_integers_and_a_missing_float64_run_get_no_second_chance():
    assert "exact dtype" in mismatch_past_float64([np.int32([1])], [np.int32([2])], lambda: [np.float64([1])])
    assert mismatch_past_float64([np.float32([2.0])], [np.float32([1.0])], lambda: None).startswith("output 0")


def test_the_float64_run_widens_float_arguments_and_keeps_integers():
    def f(x, n):
        return x / 3.0, n * 2

    out = float64_run(f, (jnp.ones(2, jnp.float32), jnp.arange(2, dtype=jnp.int32)))
    assert out[0].dtype == np.float64 and out[0][0] == 1.0 / 3.0
    assert out[1].dtype == np.int32 and out[1].tolist() == [0, 2]
