"""Warm start from disk: a new process's first call with the disk cache filled, against eager's.

Each measurement is a fresh process (``python -m parity.bench.warm_start --child ...``)
that imports its libraries first (not timed, as in bench/cold.py), builds the inputs,
then times the first call. Candidates:

- ``eager``: the torch function's first call.
- ``cold[NAME]``: ``parity.compile(fn, backend=NAME, cache_dir=<empty dir>)``'s first call.
- ``warm[NAME]``: the same with the directory a cold run filled: capture (Dynamo +
  AOTAutograd + translation to IR) still runs; the backend's compile is read from disk.
- ``cold/warm[NAME, fast_path]``: with ``fast_path=True`` too: a warm process reads the
  call signature's entry (IR graph and calling plan) and skips capture altogether
  (frontend/fast_path_disk.py).

Rounds are interleaved (eager, then each backend warm, without and with the fast path) and medians reported, with
``backend_s``: the time inside ``compiled_executable`` (compile, or load from disk).

    python -m parity.bench.warm_start --workload encoder --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def _child(workload: str, mode: str, backend: str, cache_dir: str, quick: bool) -> dict:
    import torch  # noqa: F401
    import torch._dynamo  # noqa: F401
    import torch._functorch.aot_autograd  # noqa: F401

    from ..backends.registry import get_backend
    from ..frontend import api, compiled_graph, single_backend
    from .workloads import WORKLOADS

    case = WORKLOADS[workload].build(quick=quick)
    if mode == "eager":
        t0 = time.perf_counter()
        case.torch_fn(*case.inputs)
        return {"first_s": time.perf_counter() - t0}
    get_backend(backend)
    spent = [0.0]
    real = single_backend.compiled_executable

    def timed(*args):
        t = time.perf_counter()
        try:
            return real(*args)
        finally:
            spent[0] += time.perf_counter() - t

    single_backend.compiled_executable = timed
    f = api.compile(case.torch_fn, backend=backend, cache_dir=cache_dir, fast_path=mode == "fast")
    t0 = time.perf_counter()
    f(*case.inputs)
    first = time.perf_counter() - t0
    return {"first_s": first, "backend_s": spent[0], "stats": dict(compiled_graph.STATS)}


def _run(args: list[str]) -> dict:
    proc = subprocess.run([sys.executable, "-m", "parity.bench.warm_start", "--child", *args],
                          capture_output=True, text=True)
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError(f"child {args} failed: {proc.stderr[-2000:]}")


def measure(workload: str, backends: list[str], rounds: int, quick: bool) -> dict:
    results: dict[str, list[dict]] = {"eager": []}
    with tempfile.TemporaryDirectory(prefix="parity-warm-") as root:
        modes = [("parity", ""), ("fast", ", fast_path")]
        for name in backends:
            for mode, label in modes:
                where = os.path.join(root, name + mode)
                results[f"cold[{name}{label}]"] = [_run([workload, mode, name, where, str(quick)])]
                results[f"warm[{name}{label}]"] = []
        for _ in range(rounds):
            results["eager"].append(_run([workload, "eager", "-", "-", str(quick)]))
            for name in backends:
                for mode, label in modes:
                    where = os.path.join(root, name + mode)
                    results[f"warm[{name}{label}]"].append(_run([workload, mode, name, where, str(quick)]))
    return results


def table(results: dict) -> str:
    eager = statistics.median(r["first_s"] for r in results["eager"])
    lines = ["| candidate | first call (s, median) | above eager (s) | in backend compile/load (s) | runs | stats |",
             "| --- | --- | --- | --- | --- | --- |"]
    for name, runs in results.items():
        first = statistics.median(r["first_s"] for r in runs)
        backend = statistics.median(r["backend_s"] for r in runs) if "backend_s" in runs[0] else None
        lines.append(f"| {name} | {first:.3f} | {first - eager:+.3f} | "
                     f"{'' if backend is None else f'{backend:.3f}'} | {len(runs)} | {runs[-1].get('stats', '')} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m parity.bench.warm_start")
    parser.add_argument("--child", nargs=5, metavar=("WORKLOAD", "MODE", "BACKEND", "DIR", "QUICK"))
    parser.add_argument("--workload", default="encoder")
    parser.add_argument("--backends", default="xla,onnx")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if args.child:
        workload, mode, backend, cache_dir, quick = args.child
        print(json.dumps(_child(workload, mode, backend, cache_dir, quick == "True")))
        return 0
    print(f"load average before: {os.getloadavg()}")
    results = measure(args.workload, args.backends.split(","), args.rounds, args.quick)
    print(table(results))
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
