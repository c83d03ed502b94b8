"""Where each µs of a tiny call goes: ``relu(x*2+1)`` on f32[4,4], p50 and p99, layer by layer.

``python -m parity.bench.dispatch`` times in one process pinned to one thread, with
:func:`~parity.bench.overhead.time_short_batches` (interleaved rounds of short batches,
the process's CPU time; a sample is one batch's time per call):

- anchors: torch eager, ``jax.jit`` (a device array in), raw onnxruntime with IOBinding;
- the capture layers, each with a do-nothing compiled function: ``dynamo only``
  (Dynamo's guards and frame), ``aot wrapper`` (AOTAutograd's runtime wrapper on top,
  the compiled function returning a precomputed result);
- ``parity[NAME]`` as a user calls it, with no flag (the signature fast path is on by
  default: frontend/fast_path.py; a seen signature skips Dynamo), ``parity[NAME] dynamo
  path`` with ``fast_path=False``, and ``parity (no backend)``: ``backend="auto"``, the
  default, after its first call chose; ``NAME CompiledGraph``: parity's boxed callable
  alone (torch tensors in and out: the conversions plus the executable);
  ``NAME executable``: the backend's executable alone on a NumPy array;
- ``tensor → numpy → tensor``: the conversions alone (``array_converter`` +
  ``result_converter`` on a fresh NumPy result).

The breakdown subtracts neighbours, each measured: Dynamo = ``dynamo only``; the
interplay = ``dynamo+CompiledGraph`` (parity's boxed callable behind Dynamo alone) −
Dynamo − ``CompiledGraph`` (what running the two in one call costs beyond their parts:
caches Dynamo's code evicts, an extra frame); the AOT runtime wrapper =
``aot+CompiledGraph`` − ``dynamo+CompiledGraph``; parity.compile's own wrapper =
``parity[NAME] dynamo path`` − ``aot+CompiledGraph``; the boxed call = ``CompiledGraph`` − executable.
"""

from __future__ import annotations

import argparse
import os
import types
from collections.abc import Callable, Sequence

import numpy as np

from .measure import check_outputs, pin_threads
from .overhead import time_short_batches


def small(x):
    """The measured function."""
    return (x * 2 + 1).relu()


def _own() -> Callable:
    return types.FunctionType(small.__code__.replace(), small.__globals__, "small")


def _calls(x, backends: Sequence[str], threads: int) -> dict[str, Callable[[], object]]:
    import jax
    import torch
    from torch._dynamo.backends.common import aot_autograd

    import parity
    from parity.frontend import compiled_graph
    from parity.frontend.tensors import array_converter, result_converter
    from parity.ir.dtypes import DType

    from .candidates import OnnxRuntime
    from .workloads import Case

    answer = small(x)

    def precomputed(gm, example_inputs):
        def run(args):
            args.clear()
            return [answer]
        run._boxed_call = True
        return run

    dynamo_only = torch.compile(_own(), backend=lambda gm, ex: (lambda *a: (answer,)), dynamic=False)
    aot_wrapper = torch.compile(_own(), backend=aot_autograd(fw_compiler=precomputed), dynamic=False)
    jitted = jax.jit(lambda a: jax.numpy.maximum(a * 2 + 1, 0))
    on_device = jax.device_put(x.numpy(), jax.devices("cpu")[0])
    case = Case(small, None, (x,), None, None, 1)
    calls = {"torch eager": lambda: small(x), "jax.jit": lambda: jitted(on_device).block_until_ready(),
             "ORT IOBinding": OnnxRuntime().prepare(case, threads),
             "dynamo only": lambda: dynamo_only(x), "aot wrapper": lambda: aot_wrapper(x)}
    to_array, to_tensor = array_converter(DType.float32), result_converter(DType.float32)
    result = small(x).numpy().copy()
    calls["tensor → numpy → tensor"] = lambda: to_tensor(result.copy(), [to_array(x)])
    array = x.numpy()
    for name in backends:
        before = set(map(id, compiled_graph._EXECUTABLES.values()))
        f = parity.compile(_own(), backend=name)
        f(x)
        graphs = [e for e in compiled_graph._EXECUTABLES.values() if id(e) not in before]
        f(x)  # the second call makes the fast path's entry
        calls[f"parity[{name}]"] = lambda f=f: f(x)
        slow = parity.compile(_own(), backend=name, fast_path=False)
        slow(x)
        calls[f"parity[{name}] dynamo path"] = lambda f=slow: f(x)
        if len(graphs) == 1:
            run = graphs[0]
            calls[f"{name} executable"] = lambda run=run: run(array)
        found = _compiled_graphs(f)
        if len(found) == 1:
            graph = found[0]
            calls[f"{name} CompiledGraph"] = lambda g=graph: g([x])
            # the same CompiledGraph behind Dynamo alone, and behind Dynamo + AOTAutograd
            behind_dynamo = torch.compile(_own(), backend=lambda gm, ex, g=graph: (lambda *a: g(list(a))),
                                          dynamic=False)
            behind_aot = torch.compile(_own(), backend=aot_autograd(fw_compiler=lambda gm, ex, g=graph: g),
                                       dynamic=False)
            calls[f"{name} dynamo+CompiledGraph"] = lambda c=behind_dynamo: c(x)
            calls[f"{name} aot+CompiledGraph"] = lambda c=behind_aot: c(x)
    default = parity.compile(_own())  # last: its race compiles every backend's executable for this graph
    default(x), default(x)
    calls["parity (no backend)"] = lambda: default(x)
    return calls


def _compiled_graphs(f) -> list:
    """The CompiledGraph objects parity handed to AOTAutograd for ``f`` (found through gc)."""
    import gc

    from parity.frontend.compiled_graph import CompiledGraph

    return [o for o in gc.get_objects() if type(o) is CompiledGraph and o.graph.name == "inference"
            and f.session is not None][-1:]


def _numpy(result) -> list[np.ndarray]:
    items = result if isinstance(result, (list, tuple)) else [result]
    return [np.asarray(r.numpy() if hasattr(r, "numpy") else r) for r in items]


def measure(backends: Sequence[str], rounds: int, log=print) -> dict[str, list[float]]:
    import torch

    x = (torch.arange(16, dtype=torch.float32).reshape(4, 4) - 8) / 4
    want = [small(x).numpy()]
    calls = _calls(x, backends, 1)
    checked = {}
    for label, call in calls.items():
        why = check_outputs(_numpy(call()), want, rtol=0.0)
        if why is None or label in ("dynamo only",):
            checked[label] = call
        else:
            log(f"note: {label} is wrong ({why}); not timed")
    return time_short_batches(checked, rounds=rounds)


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))] * 1e6


def table(times: dict[str, list[float]], backends: Sequence[str]) -> str:
    p50 = {k: _pct(v, 50) for k, v in times.items()}
    lines = ["| candidate | p50 µs | p99 µs | samples |", "| --- | --- | --- | --- |"]
    lines += [f"| {k} | {p50[k]:.1f} | {_pct(v, 99):.1f} | {len(v)} |" for k, v in times.items()]
    dyn = p50.get("dynamo only")
    lines += ["", "| backend | parity p50 | Dynamo guards + frame | Dynamo ↔ executable interplay | "
              "AOT runtime wrapper | parity.compile's wrapper | parity boxed call (conversions) | executable |",
              "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name in backends:
        keys = [f"parity[{name}] dynamo path", f"{name} aot+CompiledGraph", f"{name} dynamo+CompiledGraph",
                f"{name} CompiledGraph", f"{name} executable"]
        if dyn is None or any(k not in p50 for k in keys):
            continue
        total, aot, behind_dynamo, boxed, exe = (p50[k] for k in keys)
        lines.append(f"| {name} | {total:.1f} | {dyn:.1f} | {behind_dynamo - dyn - boxed:.1f} | "
                     f"{aot - behind_dynamo:.1f} | {total - aot:.1f} | {boxed - exe:.1f} | {exe:.1f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m parity.bench.dispatch", description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="xla,onnx")
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args(argv)
    backends = [b for b in args.backends.split(",") if b]
    pinned = pin_threads(1)
    print(f"threads: 1 (CPU {pinned['cpus']}); load average {os.getloadavg()}")
    times = measure(backends, args.rounds)
    print(table(times, backends))
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
