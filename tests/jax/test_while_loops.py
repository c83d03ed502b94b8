"""A ``lax.while_loop`` that counts to a bound known when tracing is one IR loop of that many
steps on every backend; one whose trip count depends on the data is refused at its line."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import parity.jax
from parity.frontend.jax import capture
from parity.frontend.jax.errors import DataDependentLoop


def doubling_ten_times(x):
    return lax.while_loop(lambda s: s[0] < 10, lambda s: (s[0] + 1, s[1] * 2.0), (0, x))


def counting_from_a_constant(x):  # fori_loop with bounds that are arrays: a while with the bound carried
    return lax.fori_loop(jnp.int32(1), jnp.int32(6), lambda i, v: v * 2.0 + i.astype(jnp.float32), x)


def never_entered(x):
    return lax.while_loop(lambda s: s[0] < 3, lambda s: (s[0] + 1, s[1] + 1.0), (7, x))


def bound_in_a_closed_over_constant(x):
    limit = jnp.array(4, jnp.int32)  # a const of the condition's jaxpr
    return lax.while_loop(lambda s: s[0] < limit, lambda s: (s[0] + 1, jnp.sin(s[1])), (0, x))


COUNTED = {
    "literal bound": (doubling_ten_times, 10),
    "carried bound": (counting_from_a_constant, 5),
    "start past the bound": (never_entered, 0),
    "closed-over bound": (bound_in_a_closed_over_constant, 4),
}


@pytest.mark.parametrize("backend", ["xla", "onnx", "reference"])
@pytest.mark.parametrize("name", COUNTED)
def test_a_counting_while_loop_is_one_loop_of_its_trip_count_and_gives_jax_jits_numbers(name, backend):
    fun, trips = COUNTED[name]
    x = jnp.array([0.5, -1.25, 3.0], jnp.float32)
    graph = capture(fun, x)
    (loop,) = [n for n in graph.nodes if n.op == "loop"]
    assert loop.attrs["length"] == trips
    got = jax.tree_util.tree_leaves(parity.jax.jit(fun, backend=backend)(x))
    want = jax.tree_util.tree_leaves(jax.jit(fun)(x))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-7, atol=0)
        assert np.asarray(g).dtype == np.asarray(w).dtype


def steps_of_two(x):
    return lax.while_loop(lambda s: s[0] < 10, lambda s: (s[0] + 2, s[1] * 2.0), (0, x))[1]


def bound_from_an_argument(x, n):
    return lax.fori_loop(0, n, lambda i, v: v * 2.0, x)


def also_tests_the_data(x):
    return lax.while_loop(lambda s: (s[0] < 10) & (s[1].sum() < 100.0), lambda s: (s[0] + 1, s[1] * 2.0), (0, x))[1]


def counter_changed_elsewhere(x):
    def body(s):
        i = s[0] + 1
        return jnp.where(s[1].sum() > 5.0, i + 1, i), s[1] * 2.0
    return lax.while_loop(lambda s: s[0] < 10, body, (0, x))[1]


def bound_moved_by_the_body(x):  # i counts up and n down: 5 steps, not n's start minus i's
    return lax.while_loop(lambda s: s[0] < s[1], lambda s: (s[0] + 1, s[1] - 1, s[2] * 2.0), (0, 10, x))[2]


@pytest.mark.parametrize("fun, args", [
    (steps_of_two, (jnp.ones(2),)),
    (bound_moved_by_the_body, (jnp.ones(2),)),
    (bound_from_an_argument, (jnp.ones(2), 5)),
    (also_tests_the_data, (jnp.ones(2),)),
    (counter_changed_elsewhere, (jnp.ones(2),)),
], ids=["step of 2", "bound moved by the body", "bound from an argument", "condition on the data", "counter changed by the data"])
def test_a_while_loop_that_does_not_count_is_refused_at_its_line(fun, args):
    with pytest.raises(DataDependentLoop) as info:
        parity.jax.jit(fun, backend="xla")(*args)
    message = str(info.value)
    assert f"in {fun.__name__}: " in message.splitlines()[0]
    assert "a `lax.while_loop` whose trip count depends on the data cannot be compiled" in message
    assert "lax.fori_loop or lax.scan with a trip count known when tracing" in message
