"""What ``backend="auto"`` picks for each benchmark workload, with the candidates' times.

    python -m studies.auto_picks [--quick] [--budget 1.0]

Each workload is compiled with ``backend="auto"`` and called once (the first call
checks and times the candidates; a training step's backward graph is chosen when
backward first runs); then ``parity.auto_choices`` is printed per graph.
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def picks(workloads, quick: bool, budget_s: float) -> list[str]:
    import torch

    import parity
    from parity.bench.workloads import WORKLOADS

    lines = []
    for name in workloads:
        case = WORKLOADS[name].build(quick=quick)
        f = parity.compile(case.torch_fn, backend="auto", auto=parity.AutoOptions(budget_s=budget_s))
        inputs = case.inputs
        if case.training:
            inputs = [t.detach().requires_grad_(i >= case.n_data) for i, t in enumerate(inputs)]
        t0 = time.perf_counter()
        out = f(*inputs)
        if case.training:
            out.backward()
        first = time.perf_counter() - t0
        lines.append(f"### {name} ({case.shape}); first call {first:.2f} s")
        lines += ["```", *(str(c) for c in parity.auto_choices(f)), "```"]
        torch._dynamo.reset()
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m studies.auto_picks")
    parser.add_argument("--workloads", default="tiny,mlp,encoder,encoder_train,chain,softmax_ln,convnet")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--budget", type=float, default=1.0)
    args = parser.parse_args(argv)
    print(f"load average before: {os.getloadavg()}")
    print("\n".join(picks(args.workloads.split(","), args.quick, args.budget)))
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
