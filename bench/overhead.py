"""Per-call overhead of a tiny compiled function (``x + 1`` on f32[4]), layer by layer.

``python -m parity.bench.overhead`` times, in one process pinned to one thread
(``torch.set_num_threads(1)`` and a one-CPU affinity mask, see
:func:`~parity.bench.measure.pin_threads`), the same tiny function through:

- ``torch eager`` and ``torch.compile`` (Inductor);
- ``dynamo only``: ``torch.compile`` with a backend returning the FX graph's forward
  (Dynamo's guard check and frame wrappers, no AOTAutograd);
- ``aot floor``: a do-nothing AOTAutograd backend (``fw_compiler`` returns the FX
  graph's forward, boxed). Every AOTAutograd-based backend (Inductor, parity) pays
  this: guards, AOTAutograd's runtime wrapper, plus here one eager aten call;
- ``aot wrapper``: the same with a compiled function that returns a precomputed result
  — guards and the runtime wrapper alone, the true floor of such a backend;
- ``jax.jit`` (a device array in) and raw onnxruntime IOBinding (inputs and outputs
  bound once; ``torch.onnx.export`` of the same function), the runtimes' own floors;
- ``parity[NAME]`` for each backend, as a user calls it, and ``NAME executable``: the
  backend's executable alone on a NumPy array (no torch, no Dynamo), in a loop;
- ``parity, NumPy exe``: parity's whole path with the backend's executable replaced by
  NumPy's ``x + 1``: the frontend's own per-call work on top of the AOT wrapper.

Every candidate compiles its own copy of the function's code (Dynamo caches per code
object, as for a user who compiles a function once), and its result is checked
against eager first. Timing (:func:`time_short_batches`): after warm-up, rounds in
which every candidate, in rotating order, runs a run of short batches (about 0.5 ms
each); a sample is one batch's time per call. On a loaded machine a batch the
scheduler interrupts is an outlier, and the median over hundreds of short batches
ignores it where a long batch's mean would not. The table gives the median and
quartiles of the samples, and what each parity backend costs on top of the AOT
wrapper floor, split into the frontend's own work and the executable in place (which
costs more there than alone in a loop: Dynamo's code between calls evicts its caches).

Example::

    $ python -m parity.bench.overhead --backends xla,onnx --rounds 80
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import types
from collections.abc import Callable, Sequence

import numpy as np

from .measure import check_outputs, pin_threads


def tiny(x):
    """The measured function."""
    return x + 1


def _own_tiny() -> Callable:
    """A copy of :func:`tiny` with its own code object: its own Dynamo cache entries."""
    return types.FunctionType(tiny.__code__.replace(), tiny.__globals__, "tiny")


def _torch_calls(x) -> dict[str, Callable[[], object]]:
    import torch
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.aot_autograd import make_boxed_func

    answer = tiny(x)  # computed here: the compiler hook runs under fake tensors

    def aot_wrapper_only(gm, example_inputs):
        out = [answer]  # precomputed: the call computes nothing

        def run(args):  # AOTAutograd's boxed convention: a list in, the callee frees it
            args.clear()
            return list(out)
        run._boxed_call = True
        return run

    dynamo_only = torch.compile(_own_tiny(), backend=lambda gm, example_inputs: gm.forward, dynamic=False)
    floor = torch.compile(_own_tiny(), backend=aot_autograd(fw_compiler=lambda gm, ex: make_boxed_func(gm.forward)),
                          dynamic=False)
    wrapper = torch.compile(_own_tiny(), backend=aot_autograd(fw_compiler=aot_wrapper_only), dynamic=False)
    inductor = torch.compile(_own_tiny(), backend="inductor", dynamic=False)
    return {"torch eager": lambda: tiny(x), "inductor": lambda: inductor(x), "dynamo only": lambda: dynamo_only(x),
            "aot floor": lambda: floor(x), "aot wrapper": lambda: wrapper(x)}


def _runtime_calls(x, threads: int) -> dict[str, Callable[[], object]]:
    from .candidates import JaxJit, OnnxRuntime
    from .workloads import WORKLOADS

    case = WORKLOADS["tiny"].build(quick=True)
    assert case.torch_fn(x).tolist() == tiny(x).tolist()
    return {"jax.jit": JaxJit().prepare(case, threads), "ORT IOBinding": OnnxRuntime().prepare(case, threads)}


def _parity_calls(x, backends: Sequence[str]) -> dict[str, Callable[[], object]]:
    from unittest import mock

    import parity
    from parity.frontend import compiled_graph, single_backend

    calls = {}
    array = x.numpy()
    for name in backends:
        before = set(map(id, compiled_graph._EXECUTABLES.values()))
        compiled = parity.compile(_own_tiny(), backend=name, device="cpu")
        compiled(x)
        new = [e for e in compiled_graph._EXECUTABLES.values() if id(e) not in before]
        calls[f"parity[{name}]"] = lambda compiled=compiled: compiled(x)
        if len(new) == 1:  # one graph: its executable alone, on a NumPy array
            calls[f"{name} executable"] = lambda run=new[0]: run(array)
    # The frontend's own work: parity's whole path with an executable as cheap as NumPy's add.
    numpy_add = parity.compile(_own_tiny(), backend=backends[0] if backends else "reference", device="cpu")
    with mock.patch.object(single_backend, "compiled_executable", lambda graph, backend, device, cache_dir=None, **_: _numpy_tiny):
        numpy_add(x)
    calls["parity, NumPy exe"] = lambda: numpy_add(x)
    return calls


def _numpy_tiny(array):
    return [array + np.float32(1)]


def _numpy(result) -> list[np.ndarray]:
    items = result if isinstance(result, (list, tuple)) else [result]
    return [np.asarray(r.numpy() if hasattr(r, "numpy") else r) for r in items]


CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


def time_short_batches(calls: dict[str, Callable[[], object]], rounds: int = 40, batches: int = 10,
                       batch_s: float = 5e-4, warmup: int = 200, clock: str = "cpu") -> dict[str, list[float]]:
    """Per-call times (seconds): one sample per short batch, ``rounds * batches`` per candidate.

    ``clock="cpu"`` counts the process's CPU time (every thread of it), which time spent
    descheduled by other processes does not inflate; ``"wall"`` is ``perf_counter``.
    """
    now = CLOCKS[clock]
    size = {}
    for name, call in calls.items():
        for _ in range(warmup):
            call()
        t0 = time.perf_counter()
        for _ in range(20):
            call()
        size[name] = max(1, int(batch_s / ((time.perf_counter() - t0) / 20)))
    samples: dict[str, list[float]] = {name: [] for name in calls}
    names = list(calls)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            call, k, out = calls[name], size[name], samples[name]
            for _ in range(batches):
                t0 = now()
                for _ in range(k):
                    call()
                out.append((now() - t0) / k)
    return samples


def measure(backends: Sequence[str], rounds: int = 40, threads: int = 1, clock: str = "cpu",
            log=print) -> dict[str, list[float]]:
    """Per-call times (seconds, one per round) of every candidate; wrong ones are dropped with a note."""
    import torch

    x = torch.arange(4, dtype=torch.float32)
    want = [tiny(x).numpy()]
    calls = {**_torch_calls(x), **_runtime_calls(x, threads), **_parity_calls(x, backends)}
    checked = {}
    for label, call in calls.items():
        why = check_outputs(_numpy(call()), want, rtol=0.0)
        if why is None:
            checked[label] = call
        else:
            log(f"note: {label} is wrong ({why}); not timed")
    return time_short_batches(checked, rounds=rounds, clock=clock)


def table(times: dict[str, list[float]], backends: Sequence[str]) -> str:
    """The report: median and quartiles per candidate, then each backend's cost above the floor."""
    us = {k: statistics.median(v) * 1e6 for k, v in times.items()}
    lines = [f"{'candidate':<22} {'median µs':>10} {'q1':>8} {'q3':>8}"]
    for label, values in times.items():
        q = statistics.quantiles([v * 1e6 for v in values], n=4) if len(values) > 1 else [us[label]] * 3
        lines.append(f"{label:<22} {us[label]:>10.1f} {q[0]:>8.1f} {q[2]:>8.1f}")
    floor, own = us.get("aot wrapper"), us.get("parity, NumPy exe")
    if floor is not None and own is not None:
        lines += ["", f"above the AOT wrapper floor ({floor:.1f} µs): the frontend's own work is parity's path "
                  f"with a NumPy executable ({own - floor:.1f} µs);",
                  "the backend's executable in place is the rest (alone: called in a loop on one NumPy array)",
                  f"{'backend':<22} {'above floor':>11} {'frontend':>10} {'exe in place':>12} {'exe alone':>10}"]
        for name in backends:
            total, alone = us.get(f"parity[{name}]"), us.get(f"{name} executable")
            if total is None:
                continue
            alone_text = f"{alone:>10.1f}" if alone is not None else f"{'?':>10}"
            lines.append(f"{name:<22} {total - floor:>11.1f} {own - floor:>10.1f} {total - own:>12.1f} {alone_text}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m parity.bench.overhead [--backends a,b] [--rounds N] [--batch-ms M]``."""
    parser = argparse.ArgumentParser(prog="python -m parity.bench.overhead", description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="reference,xla,onnx",
                        help="parity backends, comma-separated (default: reference,xla,onnx)")
    parser.add_argument("--rounds", type=int, default=40,
                        help="rounds; each gives every candidate 10 samples of about 0.5 ms (default 40)")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu",
                        help="cpu: the process's CPU time, robust on a loaded machine (default); wall: perf_counter")
    args = parser.parse_args(argv)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    pinned = pin_threads(1)
    print(f"threads: 1 (torch {pinned['torch_threads']}, CPU {pinned['cpus']}); load average "
          f"{os.getloadavg()[0]:.2f}")
    print(f"clock: {args.clock}")
    print(table(measure(backends, rounds=args.rounds, clock=args.clock), backends))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
