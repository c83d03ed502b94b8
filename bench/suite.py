"""Running the suite: every workload on every candidate, checked, then timed interleaved.

For each workload, every candidate is prepared and called once (its first call, which
includes any compilation in this process — with on-disk caches such as Inductor's
possibly warm — is recorded as ``first_call_s``), and its
result is compared with torch eager's before anything is timed: a candidate that
raises is ``error``, one whose numbers differ is ``wrong`` — with the reason — and
neither is timed. The correct ones are then timed together
(:func:`~parity.bench.measure.time_interleaved`). Cold compile time and peak memory
come from fresh processes (:mod:`parity.bench.cold`).
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable, Sequence

import numpy as np

from .candidates import Candidate, NotApplicable, TorchEager
from .cold import measure_cold
from .measure import TimingPlan, check_outputs, machine_context, median, pin_threads, roofline_s, time_interleaved
from .workloads import WORKLOADS

QUICK_PLAN = TimingPlan(rounds=11, batch_s=0.01, budget_s=1.5)  # 5 rounds in 0.5 s moved cells by 2x under load
FULL_PLAN = TimingPlan(rounds=11, batch_s=0.05, budget_s=4.0)


def versions() -> dict:
    """Versions of everything measured, for the JSON record."""
    import jax
    import onnxruntime
    import torch

    import parity

    return {"python": platform.python_version(), "parity": parity.__version__, "torch": torch.__version__,
            "jax": jax.__version__, "onnxruntime": onnxruntime.__version__, "platform": platform.platform(),
            "processor": platform.processor() or platform.machine()}


def run_suite(workloads: Sequence[str], candidates: Sequence[Candidate], *, quick: bool = False,
              threads: int | None = None, cold: Sequence[str] = (), log: Callable[[str], None] = print) -> dict:
    """Run ``workloads`` on ``candidates``; the result is the JSON record the report reads."""
    pinned = pin_threads(threads)
    machine = machine_context()
    log(f"threads: {pinned['threads']} (torch set_num_threads={pinned['torch_threads']}, interop "
        f"{pinned['torch_interop_threads']}; onnxruntime intra-op {pinned['ort_intra_op']}, inter-op 1; "
        f"XLA:CPU {pinned['xla_cpu']})")
    log(f"machine: float32 matmul {machine['matmul_gflops']:.1f} GFLOP/s, copy {machine['copy_gbs']:.1f} GB/s"
        f" (load average {os.getloadavg()[0]:.2f})")
    plan = QUICK_PLAN if quick else FULL_PLAN
    record = {"quick": quick, "threads": pinned, "machine": {**machine, "load_average": os.getloadavg()[0]},
              "versions": versions(), "rtol": check_outputs.__defaults__[0],
              "candidates": [{"key": c.key, "label": c.label, "anchor": c.anchor} for c in candidates],
              "workloads": [], "cold": []}
    for name in workloads:
        record["workloads"].append(_run_workload(name, candidates, quick, pinned["threads"], plan, log))
    # The machine's peaks, measured again after the run: the better of the two is the roofline.
    again = machine_context()
    record["machine"].update({k: max(machine[k], again[k]) for k in machine})
    for entry in record["workloads"]:
        _add_roofline(entry, record["machine"])
    for name in cold:
        for candidate in candidates:
            if not candidate.timed:
                continue
            log(f"cold compile: {name} on {candidate.label} (fresh process)")
            result = measure_cold(name, candidate.key, quick, pinned["threads"])
            record["cold"].append({"workload": name, "candidate": candidate.label, "anchor": candidate.anchor,
                                   **result})
    return record


def _run_workload(name: str, candidates: Sequence[Candidate], quick: bool, threads: int, plan: TimingPlan,
                  log) -> dict:
    workload = WORKLOADS[name]
    case = workload.build(quick=quick)
    want = [np.array(a) for a in TorchEager().to_numpy(TorchEager().prepare(case, threads)())]
    entry = {"name": name, "description": workload.description, "shape": case.shape, "training": case.training,
             "flops": case.flops, "bytes": case.bytes, "results": {}}
    calls = {}
    for candidate in candidates:
        result = entry["results"][candidate.label] = {"anchor": candidate.anchor}
        try:
            t0 = time.perf_counter()
            call = candidate.prepare(case, threads)
            got = [np.array(a) for a in candidate.to_numpy(call())]
            result["first_call_s"] = time.perf_counter() - t0
        except NotApplicable as exc:
            result.update(status="n/a", reason=str(exc))
        except Exception as exc:  # noqa: BLE001 - a failing candidate is reported, never timed
            result.update(status="error", reason=f"{type(exc).__name__}: {_first_line(exc)}")
        else:
            why = check_outputs(got, want)
            if why is not None:
                result.update(status="wrong", reason=why)
            elif not candidate.timed:
                kernels = candidate.kernels_per_call()
                result.update(status="interpreter", kernels_per_call=kernels,
                              reason="kernels per call unknown" if kernels is None else f"{kernels} kernels/call")
            else:
                result["status"] = "ok"
                calls[candidate.label] = call
        if candidate.note:
            result["note"] = candidate.note
        log(f"{name}: {candidate.label}: {result['status']}"
            + (f" ({result['reason']})" if "reason" in result else f", first call {result['first_call_s']:.2f} s"))
    for label, times in time_interleaved(calls, plan).items():
        result = entry["results"][label]
        result.update(median_s=median(times), times_s=times)
        if workload.report_gbps and case.bytes:
            result["gbps"] = case.bytes / result["median_s"] / 1e9
        if case.tokens:
            result["tokens_per_s"] = case.tokens / result["median_s"]
    anchors = {label: r["median_s"] for label, r in entry["results"].items() if r["anchor"] and "median_s" in r}
    entry["best_anchor"] = min(anchors, key=anchors.get) if anchors else None
    for result in entry["results"].values():
        if anchors and "median_s" in result:
            result["ratio"] = result["median_s"] / min(anchors.values())
    return entry


def _add_roofline(entry: dict, machine: dict) -> None:
    entry["roofline_s"] = roofline_s(entry["flops"], entry["bytes"], machine)
    for result in entry["results"].values():
        if entry["roofline_s"] and "median_s" in result:
            result["roofline_fraction"] = entry["roofline_s"] / result["median_s"]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else ""


def default_cold(workloads: Sequence[str]) -> list[str]:
    """Cold compile is measured on the encoder block when it runs, else the first workload."""
    return ["encoder"] if "encoder" in workloads else list(workloads[:1])
