"""Per-call layers of a multi-input graph on the onnx backend: from raw ORT to ``parity.compile``.

    .venv/bin/python -m bench.call_layers [--workloads convnet,encoder] [--rounds N] [--markdown PATH]

At quick sizes parity[onnx] trailed the exported model by more than the model itself
explains (convnet: 852 µs against raw ORT's 589 µs, while the two models differ by 5 %).
Each row adds one layer, all in one process on 1 thread, interleaved rounds, medians:

- ``ORT anchor``: the torch.onnx export, inputs and outputs bound once (``parity bench``'s anchor);
- ``executable, same arrays``: parity's OnnxExecutable called with the same NumPy arrays
  every time (bound once);
- ``executable, fresh NumPy views``: a new ``tensor.numpy()`` view of every input per call,
  which is what the frontend passed before the executable took torch tensors: every
  input is bound again;
- ``CompiledGraph``: parity's boxed call on the torch tensors (conversions included);
- ``fast_path``: ``parity.compile(..., fast_path=True)``, which skips Dynamo;
- ``parity.compile``: as a user calls it (Dynamo's guards, AOTAutograd's wrapper).

Not a test: tests never assert time.
"""

from __future__ import annotations

import argparse
import gc
import os
import time

from .measure import TimingPlan, median, pin_threads, time_interleaved, write_report


def measure(workload: str, rounds: int) -> dict[str, float]:
    import parity
    from parity.frontend import compiled_graph
    from parity.frontend.compiled_graph import CompiledGraph

    from .candidates import make_candidate
    from .workloads import WORKLOADS

    case = WORKLOADS[workload].build(quick=True)
    before = set(map(id, compiled_graph._EXECUTABLES.values()))
    plain = parity.compile(case.torch_fn, backend="onnx")
    plain(*case.inputs)
    (executable,) = [e for e in compiled_graph._EXECUTABLES.values() if id(e) not in before]
    (graph,) = [o for o in gc.get_objects() if type(o) is CompiledGraph and o.executable is executable][:1]
    fast = parity.compile(case.torch_fn, backend="onnx", fast_path=True)
    fast(*case.inputs)
    arrays = [t.numpy() for t in case.inputs]
    anchor = make_candidate("ort")
    anchor.preload()
    calls = {"ORT anchor": anchor.prepare(case, 1),
             "executable, same arrays": lambda: executable(*arrays),
             "executable, fresh NumPy views": lambda: executable(*[t.numpy() for t in case.inputs]),
             "CompiledGraph": lambda: graph(list(case.inputs)),
             "fast_path": lambda: fast(*case.inputs),
             "parity.compile": lambda: plain(*case.inputs)}
    plan = TimingPlan(rounds=rounds, batch_s=0.01, budget_s=1e9, min_rounds=rounds)
    return {name: median(t) * 1e6 for name, t in time_interleaved(calls, plan).items()}


def main(argv=None) -> str:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workloads", default="convnet,encoder")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--markdown", default="")
    args = ap.parse_args(argv)
    pin_threads(1)
    lines = [f"1 thread, quick sizes, load average {os.getloadavg()[0]:.1f}, {time.strftime('%Y-%m-%d %H:%M')}", ""]
    for workload in args.workloads.split(","):
        t = measure(workload, args.rounds)
        base = t["ORT anchor"]
        lines += [f"| {workload} (quick) | µs per call | × ORT anchor |", "|---|---|---|"]
        lines += [f"| {name} | {v:.0f} | {v / base:.2f} |" for name, v in t.items()]
        lines.append("")
        print("\n".join(lines[-len(t) - 3:]), flush=True)
    return write_report(lines, args.markdown)


if __name__ == "__main__":
    main()
