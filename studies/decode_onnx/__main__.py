"""Where a decode step's time goes on parity's onnx backend, per model of the generation matrix.

Question: for ``model.forward = parity.compile(model.forward, backend="onnx")`` and a greedy
``generate()`` (bench/decode.py's quick program: the zoo's tiny config, prompt 5 + 16 tokens),
how many nodes does the decode step's ONNX model hold before and after ORT's optimizer, which
op types are they, how much of the per-token time is ORT's run, and which op types take it?

Every ORT session parity makes is built with ``optimized_model_filepath`` (ORT writes the
model its optimizer produced) and ORT's profiler on (per-node kernel times). The decode step
is the session run most often. The compiled forward (Dynamo's guards, parity's call) and
ORT's run are medians over the timed generate() calls' decode steps; ORT's run is timed around the executable's own run call
(binding and copies excluded). With ``--profile`` ORT's profiler also gives each op type's
share of the kernel time (it slows every run: the times printed then are not the plain
ones). PARITY_CACHE_DIR is a fresh folder, so every session is built here, none loaded from
disk.

Run: ``python -m studies.decode_onnx MODEL [--static] [--profile]`` (one process per model:
the backend is patched once; a line of numbers, then the op types by count, and with
--profile by kernel time).
"""

from __future__ import annotations

import collections
import json
import os
import statistics
import sys
import tempfile
import time

WORK = tempfile.mkdtemp(prefix="decode_onnx_")
os.environ["PARITY_CACHE_DIR"] = os.path.join(WORK, "cache")  # before parity is imported: nothing from disk


def _recording_sessions(sessions: list, profile: bool) -> None:
    """Patch the onnx backend so each session writes its optimized model (and a profile), and
    each executable's ORT run is timed: ``sessions`` gets one dict per session."""
    import onnxruntime as ort

    from parity.backends.onnx import backend

    def make_session(model, device: str = "cpu"):
        k = len(sessions)
        options = backend._session_options()
        options.optimized_model_filepath = os.path.join(WORK, f"session{k}.optimized.onnx")
        options.enable_profiling = profile
        options.profile_file_prefix = os.path.join(WORK, f"session{k}")
        proto = model.SerializeToString()
        session = ort.InferenceSession(proto, options, providers=[backend.PROVIDERS[device]],
                                       disabled_optimizers=backend.DISABLED_OPTIMIZERS)
        sessions.append({"session": session, "nodes_in": _op_counts(proto), "optimized": options.optimized_model_filepath,
                         "runs_s": []})
        return session

    binding = backend.OnnxExecutable._binding

    def timed_binding(self):
        local = binding(self)
        if not getattr(local, "timed", False):
            (record,) = [s for s in sessions if s["session"] is self.session]
            run = local.run

            def timed_run():
                t0 = time.perf_counter()
                out = run()
                record["runs_s"].append(time.perf_counter() - t0)
                return out

            local.run, local.timed = timed_run, True
        return local

    backend.make_session = make_session
    backend.OnnxExecutable._binding = timed_binding


def _op_counts(model_or_path) -> collections.Counter:
    import onnx

    model = onnx.load(model_or_path) if isinstance(model_or_path, str) else onnx.load_from_string(model_or_path)
    return collections.Counter(node.op_type for node in model.graph.node)


def _profile(path: str) -> tuple[list[float], collections.Counter]:
    """(each run's duration in µs, kernel µs per op type summed over runs) from an ORT profile."""
    with open(path) as f:
        events = json.load(f)
    runs = [e["dur"] for e in events if e.get("name") == "model_run"]
    by_op: collections.Counter = collections.Counter()
    for e in events:
        if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time"):
            by_op[e["args"].get("op_name", "?")] += e["dur"]
    return runs, by_op


def _seconds(call) -> float:
    t0 = time.perf_counter()
    call()
    return time.perf_counter() - t0


def measure(model: str, cache: str, profile: bool) -> None:
    import torch

    import parity
    from parity.bench.decode import decode_program

    sessions: list = []
    _recording_sessions(sessions, profile)
    program, tokens, shape = decode_program(cache, True, model)
    eager = program(lambda f: f)
    want = eager()
    eager_token_ms = min(_seconds(eager) for _ in range(3)) / tokens * 1e3
    torch._dynamo.reset()
    forward_s: list[float] = []

    def timed_compile(forward):  # the whole compiled forward: Dynamo's guards, parity's call, ORT
        compiled = parity.compile(forward, backend="onnx")

        def call(*args, **kwargs):
            t0 = time.perf_counter()
            out = compiled(*args, **kwargs)
            forward_s.append(time.perf_counter() - t0)
            return out

        return call

    call = program(timed_compile)
    got = call()
    assert torch.equal(got, want), f"{model}: onnx's tokens differ from eager's"
    repeats = 3
    token_ms = min(_seconds(call) for _ in range(repeats)) / tokens * 1e3
    step = max(sessions, key=lambda s: len(s["runs_s"]))
    optimized = _op_counts(step["optimized"])
    # the step's runs in the timed generate() calls: the last repeats × (tokens - 1) (prefill is its own graph)
    timed = step["runs_s"][-repeats * (tokens - 1):]
    ort_ms = statistics.median(timed) * 1e3
    steps = forward_s[-repeats * tokens:]
    steps = [t for k, t in enumerate(steps) if k % tokens]  # each generate()'s first forward is the prefill
    forward_ms = statistics.median(steps) * 1e3
    print(f"{model} {cache}: {len(sessions)} sessions; step: {sum(step['nodes_in'].values())} nodes in, "
          f"{sum(optimized.values())} after ORT's optimizer; per token {token_ms:.2f} ms (best of 3 generate() calls) (eager {eager_token_ms:.2f}), "
          f"compiled forward {forward_ms:.2f} ms, ORT run {ort_ms:.2f} ms ({ort_ms / token_ms:.0%} of the token)" + (", profiling on" if profile else ""), flush=True)
    print("  after the optimizer: " + ", ".join(f"{op} {n}" for op, n in optimized.most_common(14)))
    if profile:
        _, by_op = _profile(step["session"].end_profiling())
        kernel_total = sum(by_op.values())
        print("  kernel time: " + ", ".join(f"{op} {us / kernel_total:.0%}" for op, us in by_op.most_common(8)))


def main(argv: list[str]) -> None:
    import torch

    torch.set_num_threads(1)
    measure(argv[0], "static" if "--static" in argv else "dynamic", "--profile" in argv)


if __name__ == "__main__":
    main(sys.argv[1:])
