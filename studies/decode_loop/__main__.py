"""Decode loops: tokens/s and the first generate()'s time, parity's backends against torch.

Question: with ``model.forward = compile(model.forward)``, how fast is ``model.generate()``
(greedy, prompt 8 + 16 or 32 tokens) on each parity backend, against torch eager and
torch.compile (Inductor, its default automatic dynamic), with a dynamic and a static KV
cache? And how many compiles does each pay (xla compiles an executable per concrete shape)?

Run: ``python -m studies.decode_loop gpt2 eager,torch-inductor,onnx,xla,inductor,auto [--full]
[--static-only | --dynamic-only]``
(one process per model: every candidate on the same machine state; medians after warm-up).
Results: studies/decode_loop/results.md.
"""

from __future__ import annotations

import statistics
import sys
import time

import torch


def _compiler(name: str):
    if name == "eager":
        return lambda f: f
    if name == "torch-inductor":
        return lambda f: torch.compile(f)  # the user's default: Inductor, automatic dynamic
    import parity

    return lambda f: parity.compile(f, backend=name)


def _xla_compiles() -> int:
    """XLA executables compiled so far (one per graph and concrete shape)."""
    from parity.backends.registry import get_backend

    return get_backend("xla").compile_count


def main(argv: list[str]) -> None:
    from torch._dynamo.utils import counters

    from parity.bench.decode import decode_program
    from parity.frontend import STATS

    model, names, quick = argv[0], argv[1].split(","), "--full" not in argv
    only = [c for c in ("dynamic", "static") if f"--{c}-only" in argv]
    caches = only or ["dynamic", "static"]
    torch.set_num_threads(1)  # tiny models: one thread, and a shared machine does not stall a pool
    for cache in caches:
        program, tokens, shape = decode_program(cache, quick, model)
        want = program(lambda f: f)()
        print(f"\n{shape}", flush=True)
        print("| candidate | tokens equal | captures | backend compiles | XLA compiles | first generate() s "
              "| steady tokens/s |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for name in names:
            torch._dynamo.reset()
            counters.clear()
            compiles_before = STATS.get("backend_compiles", 0)
            xla_before = _xla_compiles()
            try:
                call = program(_compiler(name))
                t0 = time.perf_counter()
                got = call()
                first = time.perf_counter() - t0
                times = []
                for _ in range(5):
                    t0 = time.perf_counter()
                    again = call()
                    times.append(time.perf_counter() - t0)
                equal = torch.equal(got, want) and torch.equal(again, want)
                row = (f"| {name} | {'yes' if equal else 'NO'} | {counters['stats']['unique_graphs']} | "
                       f"{STATS.get('backend_compiles', 0) - compiles_before} | {_xla_compiles() - xla_before} | "
                       f"{first:.2f} | "
                       f"{tokens / statistics.median(times):.1f} |")
            except Exception as exc:  # a failing candidate is a row, not the end of the study
                row = f"| {name} | error: {type(exc).__name__}: {str(exc).splitlines()[0][:160]} | | | | | |"
            print(row, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
