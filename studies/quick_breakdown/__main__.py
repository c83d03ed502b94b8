"""Where ``parity conform --quick``'s time goes: per backend and per phase, in CPU seconds.

``python -m studies.quick_breakdown [--backend B]... [--ops REGEX] [--out FILE]`` runs the
``--quick`` op cases the way a worker runs them (:class:`parity.conformance.worker.Session`:
one batch of op × dtype bundles at a time, on each target in turn, in one process; a
runtime's first import falls in its backend's first compilation) and times each
phase with a CPU clock that counts the compilers this process waits for (``os.times``: user
+ system, children included): importing parity and building the case selection, the inputs
and float64 oracle of each bundle (``Prepared``, once for every target), loading each
backend, then per backend lowering, compiling, running and measuring, and
how many compilations each backend made (bundles batched as the runner batches them,
``runner.batches``; ``--no-batch``: bundle by bundle, as before batches). The JAX frontend's
rows are timed on their own. Run it pinned to one CPU (``taskset -c 1``) to see what one of
two workers pays. Results: ``results.md``."""

from __future__ import annotations

import argparse
import os
import time
from collections import defaultdict


def cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class Clock:
    """CPU and wall seconds per (backend, phase)."""

    def __init__(self):
        self.cpu: dict = defaultdict(float)
        self.wall: dict = defaultdict(float)
        self.count: dict = defaultdict(int)
        self.backend = "-"

    def timed(self, phase: str, fn):
        def wrapper(*args, **kwargs):
            c, w = cpu(), time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                key = (self.backend, phase)
                self.cpu[key] += cpu() - c
                self.wall[key] += time.perf_counter() - w
                self.count[key] += 1
        return wrapper


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", action="append")
    ap.add_argument("--ops")
    ap.add_argument("--no-frontend", action="store_true")
    ap.add_argument("--no-batch", action="store_true", help="every backend compiles bundle by bundle (as before batches)")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    clock = Clock()
    c0, w0 = cpu(), time.perf_counter()
    from parity.backends import subgraph_claims
    from parity.conformance import execute
    from parity.conformance.selection import resolve_targets
    from parity.conformance.worker import Session, Task, WorkerSpec

    session = Session(WorkerSpec(ops=args.ops, quick=True))
    clock.cpu[("-", "import + select")] = cpu() - c0
    clock.wall[("-", "import + select")] = time.perf_counter() - w0
    # the phases, by wrapping what run_bundle calls
    execute.lower_for = clock.timed("lower", execute.lower_for)
    execute._measured = clock.timed("measure", execute._measured)
    orig_regions = subgraph_claims.compile_by_regions
    execute.compile_by_regions = clock.timed("compile", orig_regions)

    def executed(backend, device, graph, arrays):
        executable = execute.compile_by_regions(backend, graph, lambda piece, _: backend.compile(piece, device))
        return [execute.as_array(o) for o in clock.timed("run", executable)(*arrays)]

    execute.execute = executed
    prepared = clock.timed("prepare (inputs + oracle)", execute.Prepared.__init__)
    execute.Prepared.__init__ = prepared
    from parity.conformance.runner import batches
    from parity.conformance.selection import select_cases
    from parity.conformance.tiers import column_backend

    live = [t for t in resolve_targets(args.backend, ["cpu"]) if t.available]
    for t in live:
        if args.no_batch and t.instance is not None:
            t.instance.compile_batch = 1
        clock.backend = t.backend
        c, w = cpu(), time.perf_counter()
        session.load(t.backend)
        clock.cpu[(t.backend, "load")] += cpu() - c
        clock.wall[(t.backend, "load")] += time.perf_counter() - w
    groups: dict = defaultdict(list)
    for case in select_cases(ops=args.ops, quick=True):
        groups[(case.op, case.dtype)].append(case)
    total: dict = defaultdict(lambda: [0.0, 0.0])
    for chunk in batches(list(groups.values()), live):  # as the runner hands them out
        clock.backend = "-"  # a bundle's inputs and oracle: once, for every target
        bundles = [[execute.Prepared(c) for c in g] for g in chunk]
        for t in live:
            clock.backend = t.backend
            c, w = cpu(), time.perf_counter()
            execute.run_bundles(column_backend(t.backend), t.device, bundles, session.claims[t.backend])
            total[t.backend][0] += cpu() - c
            total[t.backend][1] += time.perf_counter() - w
    if not args.no_frontend:
        from parity.conformance.jax_frontend.rows import planned_groups

        clock.backend = "jax"
        c, w = cpu(), time.perf_counter()
        for ids in planned_groups(ops=args.ops, quick=True):
            list(session.run(Task(0, ids, (("jax", "cpu"),), "jax")))
        total["jax"] = [cpu() - c, time.perf_counter() - w]
    lines = [f"load average at the end: {os.getloadavg()}", "",
             "| backend | phase | CPU s | wall s | calls |", "| --- | --- | ---: | ---: | ---: |"]
    for key in sorted(clock.cpu, key=lambda k: (k[0], -clock.cpu[k])):
        lines.append(f"| {key[0]} | {key[1]} | {clock.cpu[key]:.1f} | {clock.wall[key]:.1f} | {clock.count[key]} |")
    lines += ["", "| backend | CPU s (inputs and oracle excluded) | wall s | compilations |", "| --- | ---: | ---: | ---: |"]
    for name, (c, w) in total.items():
        lines.append(f"| {name} | {c:.1f} | {w:.1f} | {clock.count[(name, 'compile')]} |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "a") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
