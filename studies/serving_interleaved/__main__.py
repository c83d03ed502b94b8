"""The varying-batch serving program, every candidate interleaved round by round in one process.

Question (issue #36): on ``parity bench --programs serving`` (an MLP 256→1024→256 + LayerNorm
served 48 requests of batch 1–64), is parity's steady throughput at least torch eager's and
torch.compile's, and with how many captures? ``parity bench`` times its candidates one after
another, so on a shared machine its ratios carry the load's changes. Here every candidate
compiles and is checked against eager first (the bench's own check), then round k runs one
whole program of each, the order rotating from round to round; each ratio is the median of the
per-round ratios (the anchor's time over the candidate's: above 1, the candidate is faster),
in wall time and in the process's CPU time (which time spent descheduled by the other
processes of a loaded machine does not inflate).
One CPU (``torch.set_num_threads(1)``, onnxruntime intra-op 1 via the affinity mask), like
``parity bench --threads 1``.

Run: ``python -m studies.serving_interleaved ROUNDS [--backends onnx,inductor,auto] [--code DIR]``
(``--code DIR``: another checkout's parity, as in ``studies.decode_interleaved``).
"""

from __future__ import annotations

import os
import statistics
import sys
import time


def main(argv: list[str]) -> None:
    backends = ["onnx", "inductor", "auto"]
    if "--code" in argv:
        from studies.decode_interleaved.__main__ import _use_code

        i = argv.index("--code")
        _use_code(os.path.abspath(argv[i + 1]))
        argv = argv[:i] + argv[i + 2:]
    if "--backends" in argv:
        i = argv.index("--backends")
        backends = argv[i + 1].split(",")
        argv = argv[:i] + argv[i + 2:]
    rounds = int(argv[0])
    import torch
    from torch._dynamo.utils import counters

    import parity
    from parity.bench.programs import PROGRAMS, _mismatch, program_candidates

    torch.set_num_threads(1)
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[-1]})
    torch._dynamo.config.recompile_limit = 64  # the timed candidates share Sequential.forward's code object
    case = PROGRAMS["serving"].build(quick=True)
    want, samples = case.setup(lambda m: m)()
    candidates = program_candidates(backends)
    captures = {}
    for label, compile_with in candidates.items():  # each alone, as parity bench counts them
        torch._dynamo.reset()
        counters.clear()
        run = case.setup(compile_with)
        got, _ = run()
        assert not _mismatch(got, want, case), f"{label}: {_mismatch(got, want, case)}"
        run()
        captures[label] = counters["stats"]["unique_graphs"]
    torch._dynamo.reset()  # then all of them side by side, for timing
    runs = {label: case.setup(compile_with) for label, compile_with in candidates.items()}
    for _ in range(2):
        for label, run in runs.items():
            got, _ = run()
            assert not _mismatch(got, want, case), f"{label}: {_mismatch(got, want, case)}"
    wall: dict[str, list[float]] = {label: [] for label in runs}
    cpu: dict[str, list[float]] = {label: [] for label in runs}
    labels = list(runs)
    for k in range(rounds):
        for label in labels[k % len(labels):] + labels[:k % len(labels)]:
            t0, c0 = time.perf_counter(), time.process_time()
            runs[label]()
            wall[label].append(time.perf_counter() - t0)
            cpu[label].append(time.process_time() - c0)
    print(f"serving, {rounds} rounds, load {os.getloadavg()[0]:.1f} ({os.path.dirname(parity.__file__)})")
    print("| candidate | samples/s (wall) | × eager's | × torch.compile's | samples/s (CPU time) | × eager's | "
          "× torch.compile's | captures |\n|---|---|---|---|---|---|---|---|")
    for label in runs:
        cells = []
        for times in (wall, cpu):
            ts = times[label]
            ratio = [statistics.median(e / t for e, t in zip(times[a], ts)) for a in ("torch eager", "torch.compile")]
            cells.append(f"{samples / statistics.median(ts):,.0f} | {ratio[0]:.2f} | {ratio[1]:.2f}")
        print(f"| {label} | {' | '.join(cells)} | {captures[label]} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
