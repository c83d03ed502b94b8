"""Where the time of a parity training step goes (issue 15 item 5), per backend.

``python -m parity.bench.train_breakdown [--quick] [--backends xla,onnx] [--rounds 15]``
runs the ``encoder_train`` workload (forward + loss + backward of a transformer
encoder block, bench/workloads.py) in one process pinned to one thread, and times, in
interleaved rounds (every candidate one batch per round, the order rotating; a piece's
time is the median over rounds of its per-step mean in that round's batch):

- eager torch: the forward (``fn(...)``, up to the loss) and the backward
  (``loss.backward()``) of the same step, split by a clock read in between;
- each parity backend, the same step, split the same way, and inside it the time spent
  in the forward and the backward graph's ``CompiledGraph.__call__`` (a class-level
  wrapper reads the clock around each call); what is left of the forward is Dynamo's
  guards and AOTAutograd's forward wrapper, of the backward the autograd engine and
  AOTAutograd's backward wrapper;
- the forward and backward executables alone, on the very NumPy arrays the step fed them
  (captured once), and the conversions alone: torch → arrays for the inputs and arrays →
  torch for the results, the same way CompiledGraph does them.

It also counts what runs: the aten ops eager dispatches in the forward and in the
backward, the nodes of AOTAutograd's FX graphs and of the IR graphs, the activations the
forward saves for the backward (count and MB), and the kernels of each executable (XLA:
the fusions and custom calls of the optimized HLO; ONNX: the nodes of the model).

The output is a markdown table (bench/results/train_breakdown.md keeps one, with the
analysis).
"""

from __future__ import annotations

import argparse
import re
import collections
import statistics
import time

import numpy as np
import torch

from .measure import pin_threads


class _Clock:
    """Accumulates the time spent in each CompiledGraph (by its kind) while enabled."""

    def __init__(self):
        self.kinds: dict[int, str] = {}
        self.spent: collections.Counter = collections.Counter()
        self.captured: dict[str, list] = {}  # kind -> the boxed args of its first call

    def install(self):
        from parity.frontend.compiled_graph import CompiledGraph

        original = CompiledGraph.__call__
        clock = self

        def timed(graph, args):
            kind = clock.kinds.get(id(graph))
            if kind is not None and kind not in clock.captured:
                clock.captured[kind] = list(args)
            t0 = time.perf_counter()
            out = original(graph, args)
            if kind is not None:
                clock.spent[kind] += time.perf_counter() - t0
            return out

        CompiledGraph.__call__ = timed
        return original


class _TimedExecutable:
    """The executable of a CompiledGraph, reading the clock around each call (in place)."""

    def __init__(self, inner, clock, kind):
        self.inner, self.clock, self.kind = inner, clock, kind

    def __call__(self, *arrays):
        t0 = time.perf_counter()
        out = self.inner(*arrays)
        self.clock.spent[self.kind + " executable"] += time.perf_counter() - t0
        return out

    def __getattr__(self, name):
        return getattr(self.inner, name)


def _eager_ops(fn, data, params):
    """aten ops eager torch dispatches in the forward and in the backward."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = collections.Counter()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops[str(func.overloadpacket.__name__)] += 1
            return func(*args, **(kwargs or {}))

    leaves = [p.detach().clone().requires_grad_(True) for p in params]
    with Count() as fw:
        loss = fn(*data, *leaves)
    with Count() as bw:
        loss.backward()
    return fw.ops, bw.ops


def _kernels(executable) -> str:
    """What the executable launches: XLA's fusions/calls, or the ONNX model's node count."""
    last = getattr(executable, "_last", None)
    if last is not None:
        text = last[1].as_text()
        entry = text[text.rfind("ENTRY"):]
        ops = collections.Counter()
        for line in entry.splitlines():
            found = re.search(r"\s([a-z][a-z0-9-]*)\(", line.split(" = ", 1)[-1]) if " = " in line else None
            if found is None:
                continue
            op = found.group(1)
            if op not in ("parameter", "get-tuple-element", "tuple", "constant", "bitcast"):
                ops[op] += 1
        return f"{sum(ops.values())} HLO ops in ENTRY ({', '.join(f'{k} {v}' for k, v in ops.most_common(5))})"
    return "?"


def _onnx_nodes(graph) -> str:
    from parity.backends.onnx.backend import to_model

    model = to_model(graph)
    ops = collections.Counter(n.op_type for n in model.graph.node)
    return f"{sum(ops.values())} ONNX nodes ({', '.join(f'{k} {v}' for k, v in ops.most_common(5))})"


def _use_torch_decompositions():
    from torch._decomp import core_aten_decompositions

    from parity.frontend import pipeline

    parity_table = pipeline.decomposition_table

    def table():
        t, core = parity_table(), core_aten_decompositions()
        for op in (torch.ops.aten.pow.Tensor_Scalar, torch.ops.aten.select_backward.default):
            t.pop(op, None)
            if op in core:
                t[op] = core[op]
        return t

    pipeline.decomposition_table = table


def build(backends, quick):
    """The timed calls (name -> step function returning per-piece seconds) and the static facts."""
    import parity
    from parity.bench.workloads import WORKLOADS
    from parity.frontend.tensors import to_torch

    case = WORKLOADS["encoder_train"].build(quick=quick)
    data = case.inputs[:case.n_data]
    clock = _Clock()
    clock.install()
    calls, facts, standalone = {}, {}, {}

    def stepper(fn, kinds=None):
        params = [p.detach().clone().requires_grad_(True) for p in case.inputs[case.n_data:]]

        def step():
            for p in params:
                p.grad = None
            clock.spent.clear()
            t0 = time.perf_counter()
            loss = fn(*data, *params)
            t1 = time.perf_counter()
            loss.backward()
            t2 = time.perf_counter()
            pieces = {"forward": t1 - t0, "backward": t2 - t1, "step": t2 - t0}
            if kinds:
                pieces["fw CompiledGraph"] = clock.spent["forward"]
                pieces["bw CompiledGraph"] = clock.spent["backward"]
                pieces["fw executable"] = clock.spent["forward executable"]
                pieces["bw executable"] = clock.spent["backward executable"]
            return pieces

        return step, params

    step, _ = stepper(case.torch_fn)
    calls["eager"] = step
    fw_ops, bw_ops = _eager_ops(case.torch_fn, data, case.inputs[case.n_data:])
    facts["eager"] = {"forward ops": f"{sum(fw_ops.values())} aten ops",
                      "backward ops": f"{sum(bw_ops.values())} aten ops"}

    for name in backends:
        fn = parity.compile(case.torch_fn, backend=name)
        graphs = {}
        fn.session.on_compiled = lambda g, kind, graphs=graphs: graphs.__setitem__(kind, g)
        step, params = stepper(fn, kinds=True)
        step()  # compiles
        for kind, g in graphs.items():
            clock.kinds[id(g)] = kind
            g.executable = _TimedExecutable(g.executable, clock, kind)
        clock.captured.clear()
        step()  # captures each graph's boxed args
        calls[name] = step
        info = {}
        for kind in ("forward", "backward"):
            g = graphs[kind]
            short = "fw" if kind == "forward" else "bw"
            args = clock.captured[kind]
            arrays = [convert(args[j]) for j, convert in g._inputs]
            results = g.executable(*arrays)
            exe = g.executable.inner
            standalone[f"{name} {short} executable"] = (lambda exe=exe, arrays=arrays: exe(*arrays))
            standalone[f"{name} {short} torch→arrays"] = (
                lambda g=g, args=args: [convert(args[j]) for j, convert in g._inputs])
            dtypes = [v.type.dtype for v in g.graph.outputs]

            def to_torch_all(results=results, dtypes=dtypes):
                return [to_torch(r, d) for r, d in zip(results, dtypes)]

            standalone[f"{name} {short} arrays→torch"] = to_torch_all
            ir = collections.Counter(n.op for n in g.graph.nodes)
            compute = sum(v for k, v in ir.items() if k not in ("constant", "reshape", "broadcast_in_dim",
                                                                  "transpose"))
            info[f"{kind} IR"] = (f"{sum(ir.values())} IR nodes ({compute} not constant/reshape/broadcast/"
                                  f"transpose; dot_general {ir['dot_general']})")
            info[f"{kind} kernels"] = _kernels(exe) if name == "xla" else _onnx_nodes(g.graph)
        fwg = graphs["forward"]
        n_user = 1  # the loss
        saved = [v.type for v in fwg.graph.outputs][n_user:]
        mb = sum(t.numel * np.dtype(t.dtype.numpy).itemsize for t in saved) / 2**20
        info["saved for backward"] = (f"{len(fwg._outputs) - n_user} tensors ({len(saved)} computed by the "
                                      f"forward graph, {mb:.1f} MB)")
        facts[name] = info
    return calls, standalone, facts, case


def time_rounds(calls, standalone, rounds, batch_s=0.25):
    """Interleaved rounds: per-piece per-call medians (seconds)."""
    batch = {}
    for name, call in {**calls, **standalone}.items():
        for _ in range(2):
            call()
        t0 = time.perf_counter()
        call()
        one = time.perf_counter() - t0
        batch[name] = max(1, int(batch_s / max(one, 1e-6)))
    samples: dict[str, dict[str, list]] = collections.defaultdict(lambda: collections.defaultdict(list))
    names = list(calls) + list(standalone)
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            k = batch[name]
            if name in calls:
                total = collections.Counter()
                for _ in range(k):
                    total.update(calls[name]())
                for piece, s in total.items():
                    samples[name][piece].append(s / k)
            else:
                fn = standalone[name]
                t0 = time.perf_counter()
                for _ in range(k):
                    fn()
                samples[name]["alone"].append((time.perf_counter() - t0) / k)
    return {name: {piece: statistics.median(v) for piece, v in pieces.items()} for name, pieces in samples.items()}


def table(med, facts, backends) -> str:
    ms = 1e3
    eager = med["eager"]
    lines = ["| backend | piece | median ms | share of its step | × eager's |", "| --- | --- | --- | --- | --- |"]
    e = eager["step"]
    lines.append(f"| eager | step | {e * ms:.2f} | 100 % | 1.00 |")
    lines.append(f"| eager | forward (fn → loss) | {eager['forward'] * ms:.2f} | {eager['forward'] / e:.0%} | |")
    lines.append(f"| eager | backward (loss.backward) | {eager['backward'] * ms:.2f} | "
                 f"{eager['backward'] / e:.0%} | |")
    for name in backends:
        m, s = med[name], med[name]["step"]
        rows = [("step", m["step"], f"{m['step'] / e:.2f}")]
        for side, total, label, rest in (
                ("fw", "forward", "forward (fn → loss)", "Dynamo guards + AOT fw wrapper"),
                ("bw", "backward", "backward (loss.backward)", "autograd engine + AOT bw wrapper")):
            graph, exe = m[f"{side} CompiledGraph"], m[f"{side} executable"]
            rows += [
                (label, m[total], f"{m[total] / eager[total]:.2f}"),
                (f"· {side} CompiledGraph", graph, ""),
                (f"·· {side} executable in place", exe, ""),
                (f"·· {side} executable alone (same arrays, in a loop)", med[f"{name} {side} executable"]["alone"], ""),
                (f"·· {side} torch→arrays alone", med[f"{name} {side} torch→arrays"]["alone"], ""),
                (f"·· {side} arrays→torch alone", med[f"{name} {side} arrays→torch"]["alone"], ""),
                (f"·· {side} CompiledGraph − executable (conversions, in place)", graph - exe, ""),
                (f"· {rest} ({total} − CompiledGraph)", m[total] - graph, ""),
            ]
        for piece, v, vs in rows:
            lines.append(f"| {name} | {piece} | {v * ms:.2f} | {v / s:.0%} | {vs} |")
    lines += ["", "| backend | what | count |", "| --- | --- | --- |"]
    for name, info in facts.items():
        for what, count in info.items():
            lines.append(f"| {name} | {what} | {count} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backends", default="xla,onnx")
    parser.add_argument("--quick", action="store_true", help="the bench's --quick size (b2 s128 d256)")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--torch-decompositions", action="store_true",
                        help="torch's own decompositions of pow.Tensor_Scalar and select_backward "
                             "(the graphs before frontend/aten_decompositions.py's rewrites of them)")
    args = parser.parse_args(argv)
    pin_threads(args.threads)
    if args.torch_decompositions:
        _use_torch_decompositions()
    backends = [b for b in args.backends.split(",") if b]
    calls, standalone, facts, case = build(backends, args.quick)
    med = time_rounds(calls, standalone, args.rounds)
    load = __import__("os").getloadavg()[0]
    print(f"encoder_train ({case.shape}), threads {args.threads}, {args.rounds} interleaved rounds, "
          f"load average {load:.1f} at the end\n")
    print(table(med, facts, backends))


if __name__ == "__main__":
    main()
