"""JAX primitives parity knowingly has no rule for, each with why and the user's way out: the
refusal a user meets names them (``UntranslatedPrimitive``) instead of the generic advice.

A primitive is listed here when the IR cannot express it exactly or within an op's bound
(jnp.linalg's factorizations and solves: the IR has no linear algebra; special functions with
no op and no construction within a bound), or when a translated spelling exists that the user
can write instead. docs/jax.md prints this table.

Example::

    >>> why, fix = GAPS["lu"]
    >>> "linear-algebra" in why and "jax.jit" in fix
    True
"""

from __future__ import annotations

_LINALG_WHY = ("jnp.linalg's factorizations and solves (det of a matrix larger than 3×3, inv, solve, slogdet, "
               "cholesky, qr, svd, eigh, eig, pinv, matrix_rank, norm with ord=2 or 'nuc') have no "
               "linear-algebra op in parity's IR")
_LINALG_FIX = ("compute the factorization or solve with jax.jit outside the function given to parity.jax.jit and "
               "pass its result in as an argument; or run this function with plain jax.jit")
_SPECIAL_WHY = ("a special function (or jax.random.gamma's sampler, built on one) with no IR op, and no "
                "construction from the IR's ops that stays within an op's bound")
_SPECIAL_FIX = "compute it outside parity.jax.jit and pass the values in; or run this function with plain jax.jit"
_COLLECTIVE_WHY = "a collective across devices (pmap, shard_map): parity compiles a program for one device"
_COLLECTIVE_FIX = "call parity.jax.jit on the per-device function, outside pmap/shard_map; or use plain jax.jit"

LINALG = ("lu", "lu_pivots_to_permutation", "cholesky", "cholesky_update", "qr", "geqrf", "geqp3", "householder_product",
          "ormqr", "svd", "eigh", "eig", "schur", "hessenberg", "tridiagonal", "tridiagonal_solve",
          "triangular_solve", "custom_linear_solve", "symmetric_product")
SPECIAL = ("polygamma", "zeta", "igamma", "igammac", "igamma_grad_a", "random_gamma",
           "bessel_i0e", "bessel_i1e", "regularized_incomplete_beta")
COLLECTIVES = ("psum", "pmax", "pmin", "ppermute", "all_gather", "all_to_all", "reduce_scatter", "axis_index",
               "pbroadcast", "ragged_all_to_all")

GAPS: dict[str, tuple[str, str]] = {name: (_LINALG_WHY, _LINALG_FIX) for name in LINALG}
GAPS |= {name: (_SPECIAL_WHY, _SPECIAL_FIX) for name in SPECIAL}
GAPS |= {name: (_COLLECTIVE_WHY, _COLLECTIVE_FIX) for name in COLLECTIVES}
GAPS |= {
    "cumlogsumexp": ("the IR has no cumulative logsumexp, and a cumsum of exp(x - max) underflows where early terms "
                     "are far below the maximum",
                     "write it as lax.associative_scan(jnp.logaddexp, x, axis=...), which parity translates (the "
                     "computation jax.jit runs for it on CPU and GPU)"),
    "rng_bit_generator": ("XLA's RngBitGenerator (the 'rbg' and 'unsafe_rbg' PRNG implementations, lax.rng_bit_generator)"
                          ", whose bits are defined by each XLA backend, not by a formula parity can reproduce",
                          "use JAX's default PRNG implementation, threefry2x32 (jax.random.key(seed), "
                          "jax_default_prng_impl unset)"),
    "reduce_xor": ("the IR has no xor reduction", "reduce with jnp.sum(x.astype(jnp.int32), axis) % 2 for booleans; or "
                   "run this function with plain jax.jit"),
}
