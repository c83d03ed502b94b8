"""A/B of the training partition on ``encoder_train``, in one process.

``python -m parity.bench.train_partition_ab [--quick] [--backend xla] [--rounds 15]``
compiles the step twice, once with AOTAutograd's ``default_partition`` (A) and once with
parity's (B, frontend/saved_tensors.py), each from its own code object with the caches
cleared in between, checks that the loss and every gradient are the same bits, and times
eager, A and B in interleaved rounds of 3 steps on one thread. Prints, per candidate, the
median wall and CPU time (``time.process_time``: steadier than wall time on a shared machine)
and their ratio to eager's, and the forward graph's outputs (all, computed).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

from .measure import pin_threads


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--backend", default="xla")
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args(argv)
    pin_threads(1)
    from torch._functorch.partitioners import default_partition

    import parity
    from parity.backends.cache import BuildOnceCache
    from parity.backends.registry import get_backend
    from parity.frontend import compiled_graph, pipeline

    from .workloads import WORKLOADS, encoder_loss_torch

    x, target, *params = WORKLOADS["encoder_train"].build(args.quick).inputs
    outputs = []

    def recorded(partition):
        def split(*a, **k):
            fw, bw = partition(*a, **k)
            outs = fw.graph.find_nodes(op="output")[0].args[0]
            outputs.append((len(outs), sum(getattr(n, "op", "") != "placeholder" for n in outs)))
            return fw, bw
        return split

    def step_a(*a):
        return encoder_loss_torch(*a)

    def step_b(*a):  # the same step, its own code object: Dynamo does not share A's graphs
        return encoder_loss_torch(*a)

    def compiled(fn, partition):
        compiled_graph.reset_caches()
        get_backend(args.backend)._executables = BuildOnceCache()
        pipeline.PARTITION["fn"] = recorded(partition)
        leaves = [p.clone().requires_grad_(True) for p in params]
        step = parity.compile(fn, backend=args.backend)
        loss = step(x, target, *leaves)
        loss.backward()
        return step, leaves, [loss.detach()] + [p.grad for p in leaves]

    original = pipeline.PARTITION["fn"]
    try:
        fa, pa, ga = compiled(step_a, default_partition)
        fb, pb, gb = compiled(step_b, original)
    finally:
        pipeline.PARTITION["fn"] = original
    print("forward outputs (all, computed): A", outputs[0], "B", outputs[1])
    print("same bits (loss and gradients):", all(torch.equal(a, b) for a, b in zip(ga, gb)))

    candidates = {"eager": (encoder_loss_torch, [p.clone().requires_grad_(True) for p in params]),
                  "A default_partition": (fa, pa), "B parity partition": (fb, pb)}
    wall = {k: [] for k in candidates}
    cpu = {k: [] for k in candidates}
    names = list(candidates)
    for r in range(args.rounds + 1):  # round 0 warms up
        for name in names[r % 3:] + names[:r % 3]:
            fn, leaves = candidates[name]
            w0, c0 = time.perf_counter(), time.process_time()
            for _ in range(3):
                for p in leaves:
                    p.grad = None
                fn(x, target, *leaves).backward()
            if r:
                wall[name].append((time.perf_counter() - w0) / 3 * 1e3)
                cpu[name].append((time.process_time() - c0) / 3 * 1e3)
    ew, ec = statistics.median(wall["eager"]), statistics.median(cpu["eager"])
    for name in names:
        w, c = statistics.median(wall[name]), statistics.median(cpu[name])
        print(f"| {name} | wall {w:.2f} ms ×{w / ew:.3f} | cpu {c:.2f} ms ×{c / ec:.3f} |")
    print("load average", os.getloadavg())


if __name__ == "__main__":
    main()
