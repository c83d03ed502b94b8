"""Where parity[xla]'s time per call goes on a JAX zoo program, against jax.jit's: the whole call
of each, each executable on flat leaves (jax.jit of the same function over its flat leaves;
parity's XLA executable through its C++ entry), and the pytree work around parity's call
(flattening the arguments, rebuilding the outputs with their PRNG keys).

Medians of 50-call batches, every candidate once per round, rounds interleaved, in one
process pinned to one CPU. Results: docs/jax.md ("Speed").

Example::

    $ python -m studies.jax_call_overhead cnn/forward nnx_lstm/forward --rounds 40
"""

from __future__ import annotations

import argparse
import os
import statistics
import time


def decompose(model: str, stage: str, rounds: int) -> dict[str, float]:
    """Median µs per call of each candidate above, for one program."""
    import jax

    import parity.jax
    from parity.conformance.jax_zoo import program
    from parity.frontend.jax.compat import fast_call, key_array, key_base

    fun, args = program(model, stage)
    jitted = jax.jit(fun)
    ours = parity.jax.jit(fun, backend="xla", cache_dir=False)
    jax.block_until_ready((jitted(*args), ours(*args)))
    compiled = next(iter(ours.cache.values()))
    executable, zero = compiled.run.jax_compiled()
    executable = fast_call(executable)
    leaves, tree = jax.tree_util.tree_flatten((args, {}))
    keys = [jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key) for leaf in leaves]
    data = [key_base(leaf) if key else leaf for leaf, key in zip(leaves, keys)]
    outputs = executable(*data, zero)

    def flat_fun(*flat):
        positional, named = jax.tree_util.tree_unflatten(tree, flat)
        return jax.tree_util.tree_leaves(fun(*positional, **named))

    jitted_flat = jax.jit(flat_fun)
    jax.block_until_ready(jitted_flat(*leaves))
    candidates = {
        "jax.jit": lambda: jax.block_until_ready(jitted(*args)),
        "parity[xla]": lambda: jax.block_until_ready(ours(*args)),
        "jax.jit, flat leaves": lambda: jax.block_until_ready(jitted_flat(*leaves)),
        "parity's executable, flat leaves": lambda: jax.block_until_ready(executable(*data, zero)),
        "flatten the arguments": lambda: jax.tree_util.tree_flatten((args, {})),
        "rebuild the outputs": lambda: jax.tree_util.tree_unflatten(
            compiled.out_tree, [key_array(o) if key else o for o, key in zip(outputs, compiled.out_keys)]),
    }
    times: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(rounds):
        for name, call in candidates.items():
            start = time.perf_counter()
            for _ in range(50):
                call()
            times[name].append((time.perf_counter() - start) / 50 * 1e6)
    return {"key leaves in": sum(keys), **{name: statistics.median(t) for name, t in times.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m studies.jax_call_overhead", description=__doc__.splitlines()[0])
    parser.add_argument("programs", nargs="+", help="MODEL/STAGE, e.g. cnn/forward")
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--cpu", type=int, default=0, help="the CPU to pin the process to")
    args = parser.parse_args()
    os.sched_setaffinity(0, {args.cpu})
    print(f"load average {os.getloadavg()[0]:.2f}")
    for name in args.programs:
        model, stage = name.split("/")
        row = decompose(model, stage, args.rounds)
        print(f"{name}: " + "; ".join(f"{k} {v:.1f}" + (" µs" if k != "key leaves in" else "") for k, v in row.items()),
              flush=True)
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
