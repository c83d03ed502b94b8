"""parity.jax.jit keeps jax.jit's conventions: pytrees in and out, static arguments, one
trace per signature, jax.Arrays back; its capture never loads torch; auto picks a backend."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import parity.jax
from parity.frontend.jax import auto


def scaled_sum(tree, factor, *, mode):
    total = sum(jnp.sum(leaf) for leaf in jax.tree_util.tree_leaves(tree))
    return {"total": total * factor, "first": tree["a"][0] if mode == "first" else -tree["a"][-1]}


def test_pytrees_static_arguments_and_the_cache_follow_jax_jit():
    compiled = parity.jax.jit(scaled_sum, static_argnums=1, static_argnames="mode", backend="reference")
    tree = {"a": jnp.arange(3.0), "b": (jnp.ones((2, 2)), jnp.full(4, 0.5))}
    got = compiled(tree, 2.0, mode="first")
    want = jax.jit(scaled_sum, static_argnums=1, static_argnames="mode")(tree, 2.0, mode="first")
    assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(want)
    assert all(isinstance(leaf, jax.Array) for leaf in jax.tree_util.tree_leaves(got))
    assert float(got["total"]) == float(want["total"]) == 18.0
    assert len(compiled.cache) == 1
    compiled(tree, 2.0, mode="first")  # the same signature: no new trace
    assert len(compiled.cache) == 1
    assert float(compiled(tree, 3.0, mode="first")["total"]) == 27.0  # a new static value: a new program
    assert float(compiled(tree, 3.0, mode="last")["first"]) == -2.0
    assert len(compiled.cache) == 3
    compiled({"a": jnp.arange(4.0), "b": tree["b"]}, 3.0, mode="last")  # a new shape
    assert len(compiled.cache) == 4


def test_static_argnames_also_names_the_positional_argument():
    compiled = parity.jax.jit(lambda x, n: x * n, static_argnames="n", backend="reference")
    assert compiled(jnp.ones(2), 3).tolist() == [3.0, 3.0]
    assert compiled(jnp.ones(2), n=4).tolist() == [4.0, 4.0]


def test_unhashable_static_arguments_are_refused_as_jax_jit_refuses_them():
    compiled = parity.jax.jit(lambda x, n: x * len(n), static_argnums=1, backend="reference")
    with pytest.raises(TypeError, match="static arguments must be hashable, as for jax.jit"):
        compiled(jnp.ones(2), [1, 2])


def test_python_scalars_are_traced_as_jax_jit_traces_them():
    compiled = parity.jax.jit(lambda x, s: x * s, backend="reference")
    got = compiled(jnp.ones(2, jnp.float32), 1.5)
    assert got.dtype == jnp.float32 and got.tolist() == [1.5, 1.5]


def test_the_capture_and_the_xla_backend_never_import_torch():
    script = textwrap.dedent("""
        import sys
        import jax, jax.numpy as jnp
        import parity.jax
        f = parity.jax.jit(jax.grad(lambda w, x: jnp.tanh(x @ w).sum()), backend="xla")
        print(f(jnp.ones(3), jnp.ones((2, 3))).tolist())
        print("torch" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[1] == "False", out
    assert len(eval(out[0])) == 3


def test_auto_keeps_the_fastest_backend_that_matches_jax_jit():
    compiled = parity.jax.jit(lambda x: jnp.tanh(x) * 2.0, auto=parity.AutoOptions(candidates=("xla", "onnx")))
    x = jnp.linspace(-2, 2, 8)
    np.testing.assert_allclose(np.asarray(compiled(x)), np.asarray(jnp.tanh(x) * 2.0), rtol=1e-6)
    pick = next(iter(compiled.cache.values())).pick
    medians = {c.name: c.median_s for c in pick.candidates}
    assert set(medians) == {"xla", "onnx"} and None not in medians.values() and pick.source == "measured"
    assert pick.choice == min(medians, key=medians.get)
    assert f"→ {pick.choice}" in repr(compiled)


def test_auto_times_the_call_the_user_makes_leaf_conversions_included(monkeypatch):
    """A backend whose executable takes NumPy arrays (onnx) is timed with the conversion of the
    user's leaves and outputs that each of its calls pays: here made to cost 2 ms a call, which
    the race must see (it picked onnx for a ConvNeXt whose 40 leaves made its call 2.6x xla's)."""
    import time

    from parity.frontend.jax import jitted

    def slow_as_numpy(leaves):
        time.sleep(0.002)
        return real(leaves)

    real = jitted.as_numpy
    monkeypatch.setattr(jitted, "as_numpy", slow_as_numpy)
    compiled = parity.jax.jit(lambda x: jnp.cosh(x) - 0.5, auto=parity.AutoOptions(candidates=("xla", "onnx")))
    compiled(jnp.linspace(-2, 2, 8))
    pick = next(iter(compiled.cache.values())).pick
    medians = {c.name: c.median_s for c in pick.candidates}
    assert medians["onnx"] >= 0.002 > medians["xla"], medians  # xla's native call converts nothing
    assert pick.choice == "xla"


def test_auto_is_parity_compiles_race_its_pick_kept_for_the_next_function(tmp_path):
    """The race of frontend/auto_race.py: the pick is kept (in this process and on disk), so the
    same graph compiled again compiles only the pick and races nothing."""
    from parity.frontend import auto_race
    from parity.frontend.executables import STATS, reset_caches

    options = parity.AutoOptions(candidates=("xla", "onnx"))
    x = jnp.linspace(-2, 2, 8)
    parity.jax.jit(lambda v: jnp.sin(v) + 1.0, auto=options, cache_dir=tmp_path)(x)
    auto_race._CHOICES.clear()  # a new process: only the disk is shared
    reset_caches()
    again = parity.jax.jit(lambda v: jnp.sin(v) + 1.0, auto=options, cache_dir=tmp_path)
    np.testing.assert_allclose(np.asarray(again(x)), np.sin(np.asarray(x)) + 1.0, rtol=1e-6)
    pick = next(iter(again.cache.values())).pick
    assert pick.source == "cached on disk"
    assert STATS["backend_compiles"] + STATS["disk_loads"] == 1  # only the pick


def test_auto_drops_a_backend_whose_outputs_differ_from_jax_jit():
    """A planted wrong backend (it negates every output) is dropped with the number that shows it."""
    from parity.backends.registry import get_backend, register_backend, unregister_backend

    class Negating(type(get_backend("reference"))):
        name = "negating"

        def compile(self, graph, device):
            run = super().compile(graph, device)
            return lambda *arrays: [-o for o in run(*arrays)]

    register_backend(Negating())
    try:
        with pytest.warns(UserWarning, match=r"negating +dropped .*differs from jax.jit on the first inputs: output 0 "
                                             r"is off jax.jit's by 5\.44"):
            compiled = parity.jax.jit(lambda x: jnp.exp(x), auto=parity.AutoOptions(candidates=("negating", "xla")))
            compiled(jnp.linspace(-1.0, 1.0, 4))
        assert next(iter(compiled.cache.values())).pick.choice == "xla"
    finally:
        unregister_backend("negating")


def test_auto_with_no_backend_that_matches_names_each_reason():
    from parity.frontend.jax.auto import AutoFoundNothing

    with pytest.raises(AutoFoundNothing, match=r"(?s)no backend that runs @lambda within the contract.*numpy +dropped +- +"
                                               r"+does not run it: .*does not run .* on c64.*fix: name a backend"):
        parity.jax.jit(lambda x: x * x, auto=parity.AutoOptions(candidates=("numpy",)))(jnp.ones(2, jnp.complex64))


def test_mismatch_holds_floats_to_their_dtype_and_the_rest_exactly():
    f32 = np.float32
    assert auto.mismatch([f32([1.0, 1e-3])], [f32([1.0001, 1e-3])]) is None
    assert "off jax.jit's" in auto.mismatch([f32([1.0, 1e-3])], [f32([1.001, 1e-3])])
    assert "infinite" in auto.mismatch([f32([1.0, np.inf])], [f32([1.0, -np.inf])])
    assert "NaN" in auto.mismatch([f32([np.nan])], [f32([0.0])])
    assert "exact dtype" in auto.mismatch([np.int32([1, 2])], [np.int32([1, 3])])
