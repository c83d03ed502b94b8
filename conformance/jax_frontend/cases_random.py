"""Frontend cases of the random, sorting and bit rules (``rules/random.py``, ``rules/keys.py``,
``rules/sorting.py``, ``rules/elementwise.py``'s ``erf_inv`` and ``bitcast_convert_type``).

Keys, bits, bit casts, sorts and top-k are bit-exact: a threefry draw is integer arithmetic,
and JAX's key data and bits must equal the captured graph's for every seed. Each case
returns plain arrays (a key's data, never a key array). ``erf_inv`` is a composite (XLA's
float32 polynomial, built from the IR's ops): its bound is derived in :data:`ERF_INV`.
"""

from __future__ import annotations

import numpy as np

from ...ir.dtypes import DType
from .. import values as V
from ..bounds import Bound
from ..opdb.common import EDGE, RANDOM
from .spec import FrontendCase

F32, I32, U32 = DType.float32, DType.int32, DType.uint32

# erf_inv(x) = x * p(w), w = -log1p(-x*x) shifted, p a polynomial by Horner in f32 (XLA's,
# built op for op): ~20 rounded steps of at most 0.5 ulp each where the terms keep their sign.
# Near |x| = 1, 1 - x*x cancels and amplifies the rounding of x*x: that is a recorded deviation
# of the jax/cpu column (deviations.py, measured 13.7 ulp), not a wider bound here.
ERF_INV = Bound("ulp", 8, note="XLA's float32 polynomial in ~20 rounded steps (Horner, log1p), each at most 0.5 ulp "
                               "where the terms keep their sign; 2 ulp from jax.jit measured over 200k points")

_SEEDS = np.array([0, 1, -7, 2**31 - 1, -2**31], np.int32)


def _random():
    import jax

    return jax.random


def _seed_cases() -> dict:
    r = _random()
    seeds = lambda rng: (_SEEDS[rng.integers(len(_SEEDS))],)  # noqa: E731
    return {
        "random_seed": [FrontendCase("random_seed", I32, lambda s: r.key_data(r.key(s)), lambda rng: (seed,),
                                     f"seed_{int(seed)}", (EDGE,)) for seed in _SEEDS],
        "random_unwrap": [FrontendCase("random_unwrap", I32, lambda s: r.key_data(r.split(r.key(s), 2)), seeds,
                                       "split_data", (RANDOM,))],
        "random_split": [FrontendCase("random_split", I32, lambda s: r.key_data(r.split(r.key(s), 3)), seeds,
                                      "three", (RANDOM,)),
                         FrontendCase("random_split", I32, lambda s: r.key_data(r.split(r.split(r.key(s))[1], 1)),
                                      seeds, "nested_one", (RANDOM,))],
        "random_fold_in": [FrontendCase("random_fold_in", I32, lambda s, d: r.key_data(r.fold_in(r.key(s), d)),
                                        lambda rng, d=d: (np.int32(-7), np.int32(d)), f"data_{d}", (EDGE,))
                           for d in (0, 1, -1, 2**31 - 1)],
        "random_bits": [FrontendCase("random_bits", U32, lambda s: r.bits(r.key(s), (3, 5)), seeds, "u32_3x5",
                                     (RANDOM,)),
                        FrontendCase("random_bits", U32, lambda s: r.bits(r.fold_in(r.key(s), 3), (1,)), seeds,
                                     "one_word", (RANDOM,))],
        "random_wrap": [FrontendCase("random_wrap", U32, lambda k: r.bits(r.wrap_key_data(k), (4,)),
                                     lambda rng: (rng.integers(0, 2**32, (2,), dtype=np.uint32),), "wrapped",
                                     (RANDOM,))],
    }


def _sorting_cases() -> dict:
    import jax.numpy as jnp
    from jax import lax

    ties = lambda rng, d: (np.resize(np.concatenate([V.specials(d), np.repeat(V.normal(rng, d, (4,)), 2)]),  # noqa: E731
                                     24).reshape(3, 8),)
    out = {"sort": [], "top_k": []}
    for d in (F32, I32, DType.bfloat16):
        out["sort"] += [FrontendCase("sort", d, lambda x: jnp.sort(x, axis=1), lambda rng, d=d: ties(rng, d),
                                     "rows_with_ties", (EDGE,)),
                        FrontendCase("sort", d, lambda x: jnp.argsort(x, axis=0), lambda rng, d=d: ties(rng, d),
                                     "argsort_columns", (EDGE,))]
        out["top_k"] += [FrontendCase("top_k", d, lambda x: lax.top_k(x, 3), lambda rng, d=d: ties(rng, d),
                                      "last_axis", (EDGE,)),
                         FrontendCase("top_k", d, lambda x: lax.top_k(x, 2, axis=0), lambda rng, d=d: ties(rng, d),
                                      "first_axis", (EDGE,))]
    # several keys (jnp.lexsort): few distinct values per key, so the later keys break ties, with NaN and ±0
    few = lambda rng, d: V.cast(np.round(rng.standard_normal((3, 24))), d)  # noqa: E731
    for d in (F32, I32):
        out["sort"] += [
            FrontendCase("sort", d, lambda x, y, z: lax.sort((x, y, z), dimension=1, num_keys=2), lambda rng, d=d: (
                np.resize(np.concatenate([V.specials(d), few(rng, d).ravel()]), (3, 24)), few(rng, d),
                V.normal(rng, F32, (3, 24))), "two_keys", (EDGE,)),
            FrontendCase("sort", d, lambda x, y: jnp.lexsort((x, y), axis=0), lambda rng, d=d: (
                few(rng, d), few(rng, d)), "lexsort_columns", (EDGE,))]
    # approx_max_k / approx_min_k on distinct numbers (among ties and NaNs it defines no choice: rules/sorting.py)
    out["approx_top_k"] = [FrontendCase("approx_top_k", d, fun, lambda rng, d=d: (V.normal(rng, d, (4, 50)),), name,
                                        (RANDOM,))
                           for d in (F32, DType.float64) for name, fun in (
                               ("max_k", lambda x: lax.approx_max_k(x, 5)), ("min_k", lambda x: lax.approx_min_k(x, 6)),
                               ("max_k_first_axis", lambda x: lax.approx_max_k(x, 3, reduction_dimension=0)))]
    return out


def _bit_cases() -> dict:
    from jax import lax

    pairs = ((F32, np.int32), (F32, np.uint32), (I32, np.float32), (U32, np.float32))
    bitcast = [FrontendCase("bitcast_convert_type", d, lambda x, to=to: lax.bitcast_convert_type(x, to),
                            lambda rng, d=d: (V.specials(d),), f"to_{np.dtype(to).name}", (EDGE,)) for d, to in pairs]
    edges = np.array([0.0, -0.0, 1e-30, -1e-30, 0.5, -0.5, 0.9999999, -0.9999999, 1.0, -1.0, 0.3, 2.0, np.nan],
                     np.float32)
    erf_inv = [FrontendCase("erf_inv", F32, lambda x: lax.erf_inv(x), lambda rng: (edges,), "edges", (EDGE,),
                            bound=ERF_INV),
               FrontendCase("erf_inv", F32, lambda x: lax.erf_inv(x),
                            lambda rng: (rng.uniform(-1, 1, 4096).astype(np.float32),), "uniform", (RANDOM,),
                            bound=ERF_INV)]
    return {"bitcast_convert_type": bitcast, "erf_inv": erf_inv}


def _cases(name: str) -> list[FrontendCase]:
    return {**_seed_cases(), **_sorting_cases(), **_bit_cases()}[name]


CASES = {name: (lambda name=name: _cases(name)) for name in (
    "random_seed", "random_unwrap", "random_split", "random_fold_in", "random_bits", "random_wrap",
    "sort", "top_k", "approx_top_k", "bitcast_convert_type", "erf_inv")}
