"""parity[inductor]'s cost per call against torch.compile's, interleaved in one process, in CPU time.

Question (issue #36): a whole ``generate()`` on a shared machine varies more than parity's own
Python around Inductor's code costs per call (a few µs of a 200–500 µs step), so
studies/decode_interleaved cannot see it. Here one call is repeated in blocks: the served MLP
(bench/programs.py ``serving``, a CompiledModule) at batch 1 after batches 1, 2, 13 and 64 (its
dynamic capture), and MPT's decode step (``model.forward`` with keywords, the inputs of one step
of a ``generate()``: MPT's zoo config has no KV cache, so a step can be repeated). Round k runs a
block of each (ABBA); the answer is the median of per-round ratios of CPU time per call
(torch.compile's over parity's: above 1, parity is faster). One CPU.

Run: ``PYTHONPATH=. python -m studies.per_call_interleaved [ROUNDS] [--code DIR]`` (``--code``: another
checkout's parity, as in studies.decode_interleaved).
"""

from __future__ import annotations

import os
import statistics
import sys
import time


def _timed(calls: dict, rounds: int, block: int) -> tuple[dict, float]:
    cpu: dict[str, list[float]] = {name: [] for name in calls}
    for k in range(rounds):
        for name in (list(calls) if k % 2 == 0 else list(calls)[::-1]):
            c0 = time.process_time()
            for _ in range(block):
                calls[name]()
            cpu[name].append((time.process_time() - c0) / block)
    us = {name: statistics.median(ts) * 1e6 for name, ts in cpu.items()}
    return us, statistics.median(t / p for p, t in zip(cpu["parity"], cpu["tc"]))


def main(argv: list[str]) -> None:
    if "--code" in argv:
        from studies.decode_interleaved.__main__ import _use_code

        i = argv.index("--code")
        _use_code(os.path.abspath(argv[i + 1]))
        argv = argv[:i] + argv[i + 2:]
    rounds = int(argv[0]) if argv else 31
    import torch

    import parity
    import parity.frontend
    from parity.bench.decode import decode_program

    torch.set_num_threads(1)
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[-1]})
    torch._dynamo.config.recompile_limit = 64  # both candidates share Sequential.forward's code object
    print(f"code: {os.path.dirname(os.path.dirname(parity.frontend.__file__))}")
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256),
                              torch.nn.LayerNorm(256)).eval()
    x = torch.randn(1, 256)
    serving = {"parity": parity.compile(mlp, backend="inductor"), "tc": torch.compile(mlp)}
    with torch.no_grad():
        for compiled in serving.values():
            want = mlp(x)
            for batch in (1, 2, 13, 64, 1):
                compiled(torch.randn(batch, 256))
            assert torch.allclose(compiled(x), want, rtol=1e-5, atol=1e-5)
        us, ratio = _timed({name: (lambda c=c: c(x)) for name, c in serving.items()}, rounds, 200)
    print(f"serving MLP, batch 1: parity[inductor] {us['parity']:.1f} µs, torch.compile {us['tc']:.1f} µs a call "
          f"(CPU); torch.compile's / parity's {ratio:.3f} (load {os.getloadavg()[0]:.1f})", flush=True)

    program, _, _ = decode_program("dynamic", True, "mpt")
    seen: dict[str, list] = {}
    compiled_fns: dict = {}

    def recording(which: str):
        def wrap(f):
            compiled = parity.compile(f, backend="inductor") if which == "parity" else torch.compile(f)
            compiled_fns[which] = compiled

            def call(*args, **kwargs):
                seen.setdefault(which, []).append((args, dict(kwargs)))
                return compiled(*args, **kwargs)
            return call
        return wrap

    for which in ("parity", "tc"):
        run = program(recording(which))
        run()
        run()
    steps = {}
    for which in ("parity", "tc"):
        args, kwargs = seen[which][len(seen[which]) // 2 + 8]  # a step of the second generate()
        steps[which] = lambda c=compiled_fns[which], a=args, kw=kwargs: c(*a, **kw)
    with torch.no_grad():
        assert torch.equal(steps["parity"]().logits, steps["tc"]().logits) or torch.allclose(
            steps["parity"]().logits, steps["tc"]().logits, rtol=1e-4, atol=1e-4)
        us, ratio = _timed(steps, rounds, 20)
    print(f"mpt decode step: parity[inductor] {us['parity']:.1f} µs, torch.compile {us['tc']:.1f} µs a call (CPU); "
          f"torch.compile's / parity's {ratio:.3f} (load {os.getloadavg()[0]:.1f})", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
