"""Cold compile time and peak memory, each measured in a fresh Python process.

For one (workload, candidate) the parent starts ``python -m parity.bench.cold`` with
Inductor's caches off (``TORCHINDUCTOR_FORCE_DISABLE_CACHES=1`` and an empty
``TORCHINDUCTOR_CACHE_DIR``) and JAX's persistent cache off, so nothing compiled
earlier is reused. The child imports the libraries the candidate needs (Dynamo,
Inductor, JAX, onnxruntime and its exporter, parity's frontend and the backend:
``Candidate.preload``) and builds the inputs first (not timed), then times the first call — capture + lower + compile + one run — and three
more calls; ``compile_s`` is the first call minus the median of those (the run
itself taken out).

Peak memory is the peak RSS growth from just before the first call to the end
(``VmHWM`` reset through ``/proc/self/clear_refs`` so the peak of the imports does not
count; where that is not allowed, ``ru_maxrss`` minus the RSS before the call). RSS
sees every runtime's allocations (torch, XLA, onnxruntime), which tracemalloc does not.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def measure_cold(workload: str, candidate: str, quick: bool, threads: int, timeout_s: float = 600) -> dict:
    """Run one cold measurement in a fresh process; a dict with compile_s and peak_rss_mb, or error."""
    with tempfile.TemporaryDirectory(prefix="parity-bench-cold-") as cache:
        # parity's own disk cache is on by default: an empty one here, or a "cold" start reads the last run's
        env = dict(os.environ, TORCHINDUCTOR_FORCE_DISABLE_CACHES="1", TORCHINDUCTOR_CACHE_DIR=cache,
                   JAX_ENABLE_COMPILATION_CACHE="false", PARITY_CACHE_DIR=os.path.join(cache, "parity"))
        cmd = [sys.executable, "-m", "parity.bench.cold", workload, candidate, "--threads", str(threads)]
        if quick:
            cmd.append("--quick")
        try:
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return {"status": "error", "error": f"timed out after {timeout_s:.0f} s"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
    return {"status": "error", "error": f"exit {proc.returncode}: {tail[0][:300]}"}


def _rss_kb() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_kb(reset: bool) -> int:
    if reset:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _child(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m parity.bench.cold")
    parser.add_argument("workload")
    parser.add_argument("candidate")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)

    from .measure import TimingPlan, pin_threads, time_interleaved

    pin_threads(args.threads)
    from .candidates import NotApplicable, make_candidate
    from .workloads import WORKLOADS

    candidate = make_candidate(args.candidate)
    candidate.preload()  # libraries are imported before timing: their import is not compilation

    case = WORKLOADS[args.workload].build(quick=args.quick)
    reset = _reset_peak()
    before = _rss_kb()
    try:
        t0 = time.perf_counter()
        call = candidate.prepare(case, args.threads or len(os.sched_getaffinity(0)))
        call()
        first = time.perf_counter() - t0
        # three single calls after the first, timed by the suite's one loop (median below)
        steady = time_interleaved({"run": call}, TimingPlan(rounds=3, batch_s=0.0, min_rounds=3, warmup=0))["run"]
    except NotApplicable as exc:
        print(json.dumps({"status": "n/a", "error": str(exc)}))
        return 0
    except Exception as exc:  # noqa: BLE001 - reported, not raised: the parent shows it
        print(json.dumps({"status": "error", "error": f"{type(exc).__name__}: {str(exc)[:300]}"}))
        return 0
    run = statistics.median(steady)
    peak = _peak_kb(reset)
    print(json.dumps({"status": "ok", "compile_s": max(first - run, 0.0), "first_call_s": first, "run_s": run,
                      "peak_rss_mb": max(peak - before, 0) / 1024,
                      "peak_method": "VmHWM after clear_refs" if reset else "ru_maxrss"}))
    return 0


if __name__ == "__main__":
    sys.exit(_child())
