"""parity[onnx] against torch.compile on one decode program, interleaved in one process.

Question: on a machine whose load changes minute to minute (shared cores), is parity's steady
decode faster or slower than torch.compile's? ``parity bench`` times its candidates one after
another, minutes apart (torch.compile's first run alone takes 1–3 minutes under load), so its
ratio carries the load's changes. Here round k runs one ``generate()`` of each (ABBA order,
so neither always runs first) after both have compiled, and the answer is the median of the
per-round ratios (torch.compile's time over parity's: above 1, parity is faster), in wall time
and in the process's CPU time (which a loaded machine's descheduling does not inflate). Tokens are
checked equal to eager's first. One CPU, like ``parity bench --threads 1``.

Run: ``python -m studies.decode_interleaved MODEL CACHE ROUNDS [--code DIR] [--backends onnx,inductor]``
(CACHE: dynamic or static; MODEL: one of bench/decode.py's DECODERS, or ``all`` for each in turn).
``--backends`` names the parity candidates (default onnx), each timed against the same
torch.compile rounds; ``--inductor`` is ``--backends onnx,inductor``. ``--code DIR`` runs another checkout's parity (``git archive REV | tar -x -C DIR``)
through this environment: the editable install's module mapping is pointed at DIR before
parity is imported (bench/results/decoders.md used it for the base commit).
"""

from __future__ import annotations

import os
import statistics
import sys
import time


def _use_code(root: str) -> None:
    import __editable___parity_0_1_0_finder as finder  # the editable install's module mapping

    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for name, path in list(finder.MAPPING.items()):
        finder.MAPPING[name] = path.replace(here, root)


def main(argv: list[str]) -> None:
    if "--code" in argv:
        i = argv.index("--code")
        _use_code(os.path.abspath(argv[i + 1]))
        argv = argv[:i] + argv[i + 2:]
    backends = ["onnx", "inductor"] if "--inductor" in argv else ["onnx"]
    argv = [a for a in argv if a != "--inductor"]
    if "--backends" in argv:
        i = argv.index("--backends")
        backends = argv[i + 1].split(",")
        argv = argv[:i] + argv[i + 2:]
    model, cache, rounds = argv[0], argv[1], int(argv[2])
    from parity.bench.decode import DECODERS

    for name in (DECODERS if model == "all" else [model]):
        _compare(name, cache, rounds, backends)


def _compare(model: str, cache: str, rounds: int, backends: list[str]) -> None:
    import torch

    import parity
    import parity.frontend
    from parity.bench.decode import decode_program

    torch.set_num_threads(1)
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[-1]})
    torch._dynamo.reset()
    program, tokens, _ = decode_program(cache, True, model)
    want = program(lambda f: f)()
    calls = {f"parity[{b}]": program(lambda f, b=b: parity.compile(f, backend=b)) for b in backends}
    calls["torch.compile"] = program(lambda f: torch.compile(f))
    for name, call in calls.items():
        assert torch.equal(call(), want), f"{name}: tokens differ from eager's"
        call()
    times: dict[str, list[float]] = {name: [] for name in calls}
    cpu: dict[str, list[float]] = {name: [] for name in calls}  # the process CPU time
    for k in range(rounds):  # ABBA: neither runs first every round
        for name in (list(calls) if k % 2 == 0 else list(calls)[::-1]):
            t0, c0 = time.perf_counter(), time.process_time()
            calls[name]()
            times[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
    rate = {name: tokens / statistics.median(ts) for name, ts in times.items()}

    def ratios(of: dict) -> dict:
        return {name: statistics.median(c / p for p, c in zip(ts, of["torch.compile"]))
                for name, ts in of.items() if name != "torch.compile"}

    print(f"{model} {cache} ({os.path.dirname(os.path.dirname(parity.frontend.__file__))}): "
          + ", ".join(f"{name} {rate[name]:.0f} tokens/s" for name in calls)
          + "; median of per-round ratios (torch.compile's time / candidate's) "
          + ", ".join(f"{name} {r:.2f}x" for name, r in ratios(times).items())
          + "; in CPU time " + ", ".join(f"{name} {r:.2f}x" for name, r in ratios(cpu).items())
          + f" (load {os.getloadavg()[0]:.1f}, tokens equal eager's)", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
