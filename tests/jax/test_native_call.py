"""parity.jax.jit on xla hands the user's pytrees to XLA's executable through JAX's own
dispatch (jitted.JaxJitted.__call__'s first branch): the numbers, the pytrees and every
signature change must be what the checked path gives, and the checked path must still run
where that dispatch refuses the call (a new shape, a new static value, a tracer)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import parity.jax
from parity.frontend.jax import jitted


def affine(params, x, *, scale):
    return {"y": jnp.tanh(x @ params["w"] + params["b"]) * scale, "norm": jnp.sum(params["w"] ** 2)}


def _inputs(batch=3):
    rng = np.random.default_rng(0)
    params = {"w": jnp.asarray(rng.standard_normal((4, 5)), jnp.float32),
              "b": jnp.asarray(rng.standard_normal(5), jnp.float32)}
    return params, jnp.asarray(rng.standard_normal((batch, 4)), jnp.float32)


@pytest.fixture
def checked_calls(monkeypatch):
    """Counts the calls that take the checked (Python) path."""
    calls = []
    original = jitted.JaxJitted._call_checked

    def counting(self, args, kwargs):
        calls.append(1)
        return original(self, args, kwargs)

    monkeypatch.setattr(jitted.JaxJitted, "_call_checked", counting)
    return calls


def test_the_second_call_goes_to_xla_directly_with_the_checked_paths_numbers(checked_calls, monkeypatch):
    compiled = parity.jax.jit(affine, backend="xla", static_argnames="scale")
    params, x = _inputs()
    first = compiled(params, x, scale=2.0)
    assert next(iter(compiled.cache.values())).native is not None
    second = compiled(params, x, scale=2.0)
    assert len(checked_calls) == 1  # the second call never entered the checked path
    assert jax.tree_util.tree_structure(second) == jax.tree_util.tree_structure(first)
    assert all(isinstance(leaf, jax.Array) for leaf in jax.tree_util.tree_leaves(second))
    # The checked path without the native call (restructured unavailable): equal bit for bit.
    monkeypatch.setattr(jitted, "restructured", lambda *a: None)
    plain = parity.jax.jit(affine, backend="xla", static_argnames="scale")
    want = plain(params, x, scale=2.0)
    assert next(iter(plain.cache.values())).native is None
    for got, expect in zip(jax.tree_util.tree_leaves(second), jax.tree_util.tree_leaves(want)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(expect))
    reference = jax.jit(affine, static_argnames="scale")(params, x, scale=2.0)
    np.testing.assert_allclose(np.asarray(second["y"]), np.asarray(reference["y"]), rtol=1e-6, atol=1e-6)


def test_a_new_shape_or_static_value_falls_back_and_compiles_its_own_program(checked_calls):
    compiled = parity.jax.jit(affine, backend="xla", static_argnames="scale")
    params, x = _inputs(3)
    compiled(params, x, scale=2.0)
    wider = _inputs(7)[1]
    got = compiled(params, wider, scale=2.0)  # the last program refuses this shape
    assert got["y"].shape == (7, 5) and len(compiled.cache) == 2
    tripled = compiled(params, wider, scale=3.0)  # the same shape, another static value
    assert len(compiled.cache) == 3
    np.testing.assert_allclose(np.asarray(tripled["y"]), np.asarray(got["y"]) * 1.5, rtol=1e-6)
    back = compiled(params, x, scale=2.0)  # an earlier signature: its cached program, no compile
    assert len(compiled.cache) == 3 and back["y"].shape == (3, 5)
    assert len(checked_calls) == 4


def test_arguments_reach_the_executable_in_the_order_the_graph_takes_them():
    # Positional and keyword arrays with values that give a different answer in any other order.
    def mix(a, b, *, c, d):
        return a - 2 * b + 3 * c - 4 * d

    compiled = parity.jax.jit(mix, backend="xla")
    args = [jnp.full(2, v, jnp.float32) for v in (1.0, 10.0, 100.0, 1000.0)]
    for _ in range(2):  # the checked call, then the native one
        got = compiled(args[0], args[1], c=args[2], d=args[3])
        assert got.tolist() == [1 - 20 + 300 - 4000] * 2
    # Keyword order at the call does not matter to a pytree of dicts (sorted keys), as in jax.jit.
    assert compiled(args[0], args[1], d=args[3], c=args[2]).tolist() == [1 - 20 + 300 - 4000] * 2


def test_numpy_arguments_and_a_tracer_after_the_first_call():
    compiled = parity.jax.jit(lambda x: jnp.sin(x) * 2.0, backend="xla")
    compiled(jnp.ones(3, jnp.float32))
    got = compiled(np.full(3, 0.5, np.float32))  # NumPy in, as jax.jit takes it
    np.testing.assert_allclose(np.asarray(got), 2 * np.sin(np.full(3, 0.5, np.float32)), rtol=1e-6)
    with pytest.raises(TypeError, match="parity.jax.jit\\(jax.grad\\(f\\)\\)"):
        jax.grad(lambda x: compiled(x).sum())(jnp.ones(3, jnp.float32))


def test_prng_keys_in_and_out_are_handed_over_as_their_data_and_rebuilt(checked_calls):
    def draw(key, x):
        return jax.random.split(key), x + jax.random.uniform(key, x.shape)

    compiled = parity.jax.jit(draw, backend="xla")
    x = jnp.ones(3, jnp.float32)
    compiled(jax.random.key(3), x)
    assert next(iter(compiled.cache.values())).native is not None
    for seed in (3, 4):  # native calls: the same key again, then another one
        keys, values = compiled(jax.random.key(seed), x)
        want_keys, want_values = jax.jit(draw)(jax.random.key(seed), x)
        assert jax.dtypes.issubdtype(keys.dtype, jax.dtypes.prng_key)
        np.testing.assert_array_equal(jax.random.key_data(keys), jax.random.key_data(want_keys))
        np.testing.assert_array_equal(np.asarray(values), np.asarray(want_values))  # threefry bits: exact
    assert len(checked_calls) == 1
    wider = jnp.ones(5, jnp.float32)  # another signature: the checked path compiles it
    keys, values = compiled(jax.random.key(3), wider)
    np.testing.assert_array_equal(np.asarray(values), np.asarray(jax.jit(draw)(jax.random.key(3), wider)[1]))
    assert len(checked_calls) == 2 and len(compiled.cache) == 2


def test_prng_key_calls_run_no_parity_python_after_the_first(checked_calls):
    """With keys in and out, the native call is JAX's C++ dispatch (its registry unwraps the keys
    to their data and rebuilds them), as jax.jit's is: past JaxJitted.__call__, no Python of
    parity's runs (the Python flatten and rebuild it replaced cost the NNX LSTM ~20 µs a call)."""
    import sys

    def draw(key, state):
        key, sub = jax.random.split(key)
        return {"key": key, "x": state["x"] + jax.random.uniform(sub, state["x"].shape)}

    compiled = parity.jax.jit(draw, backend="xla")
    state = {"x": jnp.ones(3, jnp.float32)}
    compiled(jax.random.key(0), state)
    compiled(jax.random.key(1), state)  # the C++ dispatch's first call for this signature
    ran = []

    def record(frame, event, arg):
        if event == "call" and frame.f_globals.get("__name__", "").startswith("parity."):
            ran.append(f"{frame.f_globals['__name__']}:{frame.f_code.co_name}")

    key = jax.random.key(2)
    sys.setprofile(record)
    try:
        got = compiled(key, state)
    finally:
        sys.setprofile(None)
    assert [r.rsplit(":", 1)[1] for r in ran] == ["__call__"], ran
    want = jax.jit(draw)(key, state)
    np.testing.assert_array_equal(jax.random.key_data(got["key"]), jax.random.key_data(want["key"]))
    np.testing.assert_array_equal(np.asarray(got["x"]), np.asarray(want["x"]))
    assert len(checked_calls) == 1
    wider = {"x": jnp.ones(5, jnp.float32)}  # another signature: the C++ dispatch refuses, the checked path compiles
    np.testing.assert_array_equal(np.asarray(compiled(key, wider)["x"]), np.asarray(jax.jit(draw)(key, wider)["x"]))
    assert len(checked_calls) == 2 and len(compiled.cache) == 2
