"""torch.compile features users combine with a compiled function, under ``parity.compile``:
activation checkpointing, autocast, inference/no-grad modes, torch.func, hooks,
parametrizations, tied weights, ``torch.compiler.disable``, dynamic marks, buffer mutation,
tensor subclasses, train/eval switches, freezing layers, threads, ``.to()`` after compiling.

Each scenario (cases.py) runs eagerly, under ``torch.compile(backend="eager")`` (Dynamo alone:
its capture count is the bar) and under ``parity.compile(backend=B)``; every output and
gradient is judged against eager's by the Hugging Face zoo's rule (conformance/hf/check.py
``compare``: max error within 1e-4 of the tensor's scale); a 16-bit result (autocast, ``.half()``)
within two of its dtype's eps of the scale, since where each op rounds may differ. A row says pass, fail (exception and
first line), off (numbers), "captures" (more than Dynamo's) and the warnings parity gave.
Each backend runs in its own process (a crash is its line). Results: results.md. Example::

    $ python -m studies.torch_features_probe --backends onnx,inductor --only checkpoint_train
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import time
import warnings

from studies.torch_ops_probe import __main__ as ops_probe

BACKENDS = ("onnx", "inductor", "xla")


def _captures(scenario, compile) -> tuple[dict, int, list[str]]:
    import torch

    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = scenario(compile)
        out = {k: v.detach() for k, v in out.items()}
    notes = sorted({f"{w.category.__name__}: {str(w.message).splitlines()[0][:200]}" for w in caught
                    if w.category.__module__.startswith("parity")})
    return out, torch._dynamo.utils.counters["stats"]["unique_graphs"], notes


def run_case(name: str, backend: str) -> dict:
    import torch

    import parity
    from parity.conformance.hf.check import compare
    from studies.torch_features_probe.cases import CASES

    scenario = CASES[name]
    eager, _, _ = _captures(scenario, lambda obj, **kw: obj)
    try:
        _, dynamo, _ = _captures(scenario, lambda obj, **kw: torch.compile(obj, backend="eager", **kw))
    except Exception as exc:  # torch's own limitation: recorded beside parity's
        dynamo = f"torch.compile fails: {type(exc).__name__}: {str(exc).strip().splitlines()[0][:150]}"
    cache = tempfile.mkdtemp(prefix="tfp-")  # a fresh disk cache: a capture per case is a capture
    try:
        got, ours, notes = _captures(scenario, lambda obj, **kw: parity.compile(obj, backend=backend, cache_dir=cache,
                                                                               **kw))
    except Exception as exc:  # the probe's point: every failure is a line, beside Dynamo's count
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        return {"status": "fail", "detail": f"{type(exc).__name__}: {first}", "dynamo": dynamo}
    low = {k for k, e in eager.items() if e.dtype in (torch.float16, torch.bfloat16)}
    check = compare({k: v for k, v in got.items() if k not in low}, {k: v for k, v in eager.items() if k not in low}, None)
    status, detail = "pass", ""
    if not check.passed:
        status, detail = "off", check.error or f"{check.tensor} max err {check.worst:.2e} of scale"
    for k in sorted(low):  # 16-bit results: within two roundings of their dtype (where each op rounds differs)
        g, e = got.get(k), eager[k]
        if g is None or g.dtype != e.dtype or g.shape != e.shape:
            status, detail = "off", f"{k}: {None if g is None else (g.dtype, tuple(g.shape))} instead of {e.dtype}"
        elif float((g.double() - e.double()).abs().max()) > 2 * torch.finfo(e.dtype).eps * float(e.double().abs().max()):
            status, detail = "off", f"{k} max err {float((g.double() - e.double()).abs().max()):.2e} beyond 2 {e.dtype} eps"
    if status == "pass" and isinstance(dynamo, int) and ours > dynamo:
        status = "captures"
    return {"status": status, "detail": detail, "captures": ours, "dynamo": dynamo, "warnings": notes}


def _one(name: str, backend: str, limit_s: int) -> dict:
    """run_case's row, or the failure's, within ``limit_s`` (torch_ops_probe's alarm)."""
    signal.alarm(limit_s)
    try:
        return run_case(name, backend)
    except ops_probe._Timeout:
        return {"status": "fail", "detail": f"timeout after {limit_s} s"}
    except Exception as exc:  # the probe's point: every failure is a line
        return {"status": "fail", "detail": f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0][:300]}"}
    finally:
        signal.alarm(0)


def run_backend(backend: str, only: list[str], out_path: str, limit_s: int) -> None:
    import torch

    from studies.torch_features_probe.cases import CASES

    torch.set_num_threads(1)
    signal.signal(signal.SIGALRM, ops_probe._alarm)
    for name in [n for n in CASES if not only or n in only]:
        start = time.time()
        result = _one(name, backend, limit_s)
        line = json.dumps({**result, "case": name, "backend": backend, "seconds": round(time.time() - start, 1)})
        print(line, flush=True)
        with open(out_path, "a") as f:
            print(line, file=f)


def report(path: str) -> str:
    """results.md's table from the JSON lines at ``path`` (the last line per case and backend wins)."""
    with open(path) as f:
        rows = {(r["case"], r["backend"]): r for r in map(json.loads, f)}
    backends, names = [b for b in BACKENDS if (b in {k[1] for k in rows})], list(dict.fromkeys(k[0] for k in rows))
    out = ["| case | " + " | ".join(backends) + " | captures (parity / Dynamo) |",
           "| --- |" + " --- |" * (len(backends) + 1)]
    for name in names:
        cells = [rows[(name, b)]["status"] if (name, b) in rows else "" for b in backends]
        caps = "; ".join(f"{b} {rows[(name, b)].get('captures', '-')}" for b in backends if (name, b) in rows)
        dyn = next((rows[(name, b)].get("dynamo") for b in backends if (name, b) in rows), "-")
        out.append(f"| {name} | " + " | ".join(cells) + f" | {caps} / {dyn} |")
    details = ["", "Details (failures, numbers off, warnings):", ""]
    for (name, b), r in rows.items():
        if r["status"] != "pass" or r.get("warnings"):
            details.append(f"- {name} [{b}] {r['status']}: {r['detail']} {' | '.join(r.get('warnings', []))}".rstrip())
    return "\n".join(out + details) + "\n"


#: the command line: (flag, default, help); --one BACKEND is the child process's
OPTIONS = (("--backends", "onnx,inductor", "comma-separated backends, each in its own process"),
           ("--only", "", "comma-separated case names (cases.py)"),
           ("--out", "/tmp/torch_features_probe.jsonl", "JSON lines, one per case and backend"),
           ("--limit-s", 240, "seconds per case and backend"))


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m studies.torch_features_probe", description=__doc__.splitlines()[0])
    for flag, default, text in OPTIONS:
        parser.add_argument(flag, default=default, type=type(default), help=text)
    parser.add_argument("--report", action="store_true", help="print the table of --out and stop")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:  # a child process: its lines only, the parent prints the table
        run_backend(args.one, [n for n in args.only.split(",") if n], args.out, args.limit_s)
        return
    if args.report:
        print(report(args.out), end="")
        return
    for backend in args.backends.split(","):
        child = [sys.executable, "-m", "studies.torch_features_probe", "--one", backend]
        subprocess.run(child + ["--only", args.only, "--out", args.out, "--limit-s", str(args.limit_s)], check=False)
    print(report(args.out), end="")


if __name__ == "__main__":
    main()
