"""parity.jax.jit takes the torch frontend's path to a backend (frontend/executables.py): the
executable cache in memory and on disk (a second process loads, never compiles), and the
runtime request, so a plugin's ``backend_options`` reach its ``compile``."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

import parity.jax
from parity.frontend.executables import STATS, reset_caches
from parity.ir.errors import UnsupportedOpError
from parity.validate import UsageError


def test_with_the_memory_cache_gone_the_jax_function_loads_from_the_disk_cache(tmp_path):
    """What a new process sees (CI's proof; the matrix test below runs two processes)."""
    reset_caches()
    x = jnp.linspace(-1.0, 1.0, 5)
    first = parity.jax.jit(lambda v: jnp.tanh(v) * 3.0, backend="xla", cache_dir=tmp_path)(x)
    assert (STATS["backend_compiles"], STATS["disk_loads"]) == (1, 0)
    reset_caches()
    second = parity.jax.jit(lambda v: jnp.tanh(v) * 3.0, backend="xla", cache_dir=tmp_path)(x)
    assert (STATS["backend_compiles"], STATS["disk_loads"]) == (0, 1)
    assert second.tolist() == first.tolist()
    np.testing.assert_allclose(np.asarray(second), np.tanh(np.asarray(x)) * 3.0, rtol=1e-6)


@pytest.mark.matrix
def test_a_second_process_loads_the_compiled_jax_function_from_the_disk_cache(tmp_path):
    program = textwrap.dedent(f"""
        import jax.numpy as jnp
        import parity.jax
        from parity.frontend.executables import STATS
        f = parity.jax.jit(lambda x: jnp.tanh(x) * 3.0 + 1.0, backend="xla", cache_dir={str(tmp_path)!r})
        print(f(jnp.linspace(-1.0, 1.0, 5)).tolist())
        print(STATS["backend_compiles"], STATS["disk_loads"])
    """)
    runs = [subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True).stdout
            for _ in range(2)]
    first, second = ([line for line in run.splitlines() if line] for run in runs)
    assert first[1] == "1 0", runs[0]  # compiled, and stored
    assert second[1] == "0 1", runs[1]  # loaded from the disk, no compile
    want = (np.tanh(np.linspace(-1.0, 1.0, 5, dtype=np.float32)) * 3.0 + 1.0).tolist()
    np.testing.assert_allclose(eval(second[0]), want, rtol=1e-6)
    assert eval(first[0]) == eval(second[0])


def test_backend_options_reach_a_plugin_and_key_its_executables():
    """The template plugin (examples/plugin_template, installed) stops at a node that makes inf
    from finite operands under its check_finite option; without it, log(0) is -inf."""
    reset_caches()
    x = jnp.array([1.0, 0.0])
    plain = parity.jax.jit(lambda v: jnp.log(v) * 2.0, backend="numpy", cache_dir=False)
    assert plain(x).tolist() == [0.0, -np.inf]
    checked = parity.jax.jit(lambda v: jnp.log(v) * 2.0, backend="numpy", cache_dir=False,
                             backend_options={"check_finite": True})
    with pytest.raises(FloatingPointError, match=r"check_finite\): log at .*test_backend_path.py:\d+"):
        checked(x)
    assert STATS["backend_compiles"] == 2  # the same graph under other options: another executable
    parity.jax.jit(lambda v: jnp.log(v) * 2.0, backend="numpy", cache_dir=False)(x)
    assert (STATS["backend_compiles"], STATS["cache_hits"]) == (2, 1)


def test_backend_options_are_checked_against_the_backend_before_tracing():
    with pytest.raises(UsageError, match="the numpy backend takes no option 'check_finit'; did you mean "
                                         "'check_finite'"):
        parity.jax.jit(jnp.exp, backend="numpy", backend_options={"check_finit": True})
    with pytest.raises(UsageError, match="backend='auto' picks among several; name the backend"):
        parity.jax.jit(jnp.exp, backend_options={"check_finite": True})


def test_a_backends_numpy_outputs_come_back_as_jax_arrays_that_own_their_memory():
    """to_jax moves NumPy outputs in one call; the backend may reuse its buffers (onnx binds them by
    address), so a jax.Array returned must not alias them."""
    import jax

    from parity.frontend.jax.run import to_jax

    buffers = [np.arange(4, dtype=np.float32), np.ones((2, 3), np.int32), np.array(True)]
    got = to_jax(buffers)
    assert all(isinstance(g, jax.Array) for g in got)
    assert [g.dtype for g in got] == [b.dtype for b in buffers]
    for buffer in buffers:
        buffer[...] = 0  # the backend writes its next call's results
    assert got[0].tolist() == [0.0, 1.0, 2.0, 3.0] and got[1].tolist() == [[1] * 3] * 2 and bool(got[2])


def test_a_program_with_prng_keys_loads_from_the_disk_cache_and_compiles_nothing(tmp_path, monkeypatch):
    """Keys cross as their data around the one cached executable (jitted._with_keys): no second,
    key-converting executable that a new process would have to compile."""
    import jax

    def draw(key, x):
        return jax.random.split(key), x * jax.random.uniform(key, x.shape)

    reset_caches()
    first = parity.jax.jit(draw, backend="xla", cache_dir=tmp_path)(jax.random.key(1), jnp.ones(3))
    reset_caches()
    xla_compiles = []  # every XLA compilation of the second run, whoever asks for it
    compile_lowered = jax.stages.Lowered.compile
    monkeypatch.setattr(jax.stages.Lowered, "compile",
                        lambda self, *a, **k: xla_compiles.append(1) or compile_lowered(self, *a, **k))
    second = parity.jax.jit(draw, backend="xla", cache_dir=tmp_path)(jax.random.key(1), jnp.ones(3))
    assert (STATS["backend_compiles"], STATS["disk_loads"], len(xla_compiles)) == (0, 1, 0)
    np.testing.assert_array_equal(jax.random.key_data(second[0]), jax.random.key_data(first[0]))
    np.testing.assert_array_equal(np.asarray(second[1]), np.asarray(first[1]))


def test_a_node_the_claims_predicate_declines_is_refused_with_the_reason():
    sys.path.insert(0, str(Path(__file__).parents[1] / "backends"))
    from claim_plugins import PredicateClaims
    from runtime_plugins import registered

    x = jnp.linspace(-1.0, 1.0, 4)
    with registered(PredicateClaims()):
        kept = parity.jax.jit(lambda v: (v * 2.0).astype(jnp.int32), backend="predicate_claims", cache_dir=False)(x)
        assert kept.tolist() == [-2, 0, 0, 2]  # convert to i32: the predicate takes it
        with pytest.raises(UnsupportedOpError) as err:
            parity.jax.jit(lambda v: v.astype(jnp.float16), backend="predicate_claims", cache_dir=False)(x)
    assert ("the predicate_claims backend does not run convert on f32 (its claim's predicate declines this node: "
            "its result is f16; the backend makes only f32, i32)") in str(err.value)
