"""parity against jax.jit, as tests/models compares parity against eager torch
(conformance/hf/check.py): a result matches when ``max|got − jit| ≤ RTOL · max|jit|``, or,
failing that, when its distance from a float64 run of the same JAX function is at most
NOISE_FACTOR times jax.jit's own float32 distance from it (ill-conditioned outputs;
NOISE_LEVEL_FACTOR where jax.jit's error is at least the float64 value itself, an analytically
zero gradient that both runs give as rounding noise). NaN and
±inf must sit where jax.jit's do. Integer and bool results, and PRNG keys (as their key data), must
equal jax.jit's exactly."""

from __future__ import annotations

import jax
import numpy as np

import parity.jax
from parity.conformance.hf.check import NOISE_FACTOR, NOISE_LEVEL_FACTOR, RTOL
from parity.frontend.jax.auto import float64_run as auto_float64_run


def _is_key(a) -> bool:
    return jax.dtypes.issubdtype(getattr(a, "dtype", np.float32), jax.dtypes.prng_key)


def _plain(a):
    """A leaf as a NumPy array; a PRNG key array as its key data."""
    return np.asarray(jax.random.key_data(a) if _is_key(a) else a)


def float64_run(fun, *args):
    """The oracle's output leaves: ``fun`` under x64 on its float arguments widened to float64
    (backend="auto"'s second chance runs the same, parity.frontend.jax.auto.float64_run)."""
    return auto_float64_run(fun, args)


def mismatches(got, want, exact) -> list[str]:
    """Each leaf of ``got`` that does not match ``want`` (jax.jit's) by the rule above, with its numbers.
    ``exact`` is the float64 run's pytree, or a function giving it (called only when a leaf
    fails the first test: a float64 compile is seconds)."""
    got_leaves, got_tree = jax.tree_util.tree_flatten(got)
    want_leaves, want_tree = jax.tree_util.tree_flatten(want)
    assert got_tree == want_tree, f"pytree {got_tree} instead of jax.jit's {want_tree}"
    exact_leaves = _Lazy(exact)
    problems = []
    for i, (g, w) in enumerate(zip(got_leaves, want_leaves)):
        if _is_key(g) != _is_key(w):
            problems.append(f"leaf {i}: {g.dtype} instead of {w.dtype}")
            continue
        g, w = _plain(g), _plain(w)
        if w.dtype.kind in "biu":  # integers, bools and key data have no rounding to allow for
            if not np.array_equal(g, w):
                problems.append(f"leaf {i}: {w.dtype} differs from jax.jit's at {int(np.sum(g != w))} places")
            continue
        if g.shape != w.shape or g.dtype != w.dtype:
            problems.append(f"leaf {i}: {g.dtype}{g.shape} instead of {w.dtype}{w.shape}")
            continue
        if not np.array_equal(np.isnan(g), np.isnan(w)):
            problems.append(f"leaf {i}: NaN at {int(np.sum(np.isnan(g) != np.isnan(w)))} places where jax.jit's "
                            "result is not NaN, or the reverse")
            continue
        if not np.array_equal(g[np.isinf(w)], w[np.isinf(w)]):
            problems.append(f"leaf {i}: differs from jax.jit where jax.jit's result is infinite")
            continue
        g, w = (np.where(np.isfinite(w), a, 0) for a in (g, w))  # compared above
        scale = float(np.max(np.abs(w), initial=0.0))
        worst = float(np.max(np.abs(g.astype(np.float64) - w), initial=0.0))
        if worst <= RTOL * scale:
            continue
        x = np.where(np.isfinite(w), np.asarray(_plain(exact_leaves[i]), np.float64), 0)
        own = float(np.max(np.abs(w - x), initial=0.0))
        ours = float(np.max(np.abs(g - x), initial=0.0))
        noise = own >= float(np.max(np.abs(x), initial=0.0))  # jax.jit has no correct digit: both are noise
        if own == 0 or ours > (NOISE_LEVEL_FACTOR if noise else NOISE_FACTOR) * own:
            problems.append(f"leaf {i}: off jax.jit by {worst:.3g} (scale {scale:.3g}); from float64: "
                            f"{ours:.3g} vs jax.jit's {own:.3g}{' (both rounding noise)' if noise else ''}")
    return problems


class _Lazy:
    """The leaves of a pytree, or of what a function returns, computed at the first look."""

    def __init__(self, tree_or_function):
        self._source = tree_or_function
        self._leaves = None

    def __getitem__(self, i):
        if self._leaves is None:
            tree = self._source() if callable(self._source) else self._source
            self._leaves = jax.tree_util.tree_leaves(tree)
        return self._leaves[i]


def assert_matches_jax_jit(fun, args, backend: str, what: str):
    """``parity.jax.jit(fun)`` on ``backend`` returns jax.Arrays (keys as key arrays) that match
    jax.jit's by the rule above; ``what`` names the cell in the failure."""
    got = parity.jax.jit(fun, backend=backend)(*args)
    assert all(isinstance(leaf, jax.Array) for leaf in jax.tree_util.tree_leaves(got))
    problems = mismatches(got, jax.jit(fun)(*args), float64_run(fun, *args))
    assert not problems, f"{what} on {backend}:\n" + "\n".join(problems)
