"""PyTorch programs outside the model zoo under ``parity.compile(fn, backend=B, strict=True)``:
~75 small functions (cases.py) per backend, forward and, for float ops, the gradients of
``(out * w).sum()`` through the compiled function, against eager. Numbers are judged by the
Hugging Face zoo's rule (conformance/hf/check.py ``compare``: max error within 1e-4 of the
tensor's scale, or at most 2x eager's own float32 distance from a float64 run); random ops by
the properties of their output. Each backend runs in its own process (a crash is its line).

Results: results.md. Example::

    $ TRITON_INTERPRET=1 python -m studies.torch_ops_probe --backends onnx,xla --only cdist,histc
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import warnings
import zlib

BACKENDS = ("xla", "onnx", "inductor", "triton")


def _flat(out, prefix="out") -> dict:
    import torch

    if isinstance(out, torch.Tensor):
        return {prefix: torch.view_as_real(out) if out.is_complex() else out}
    if isinstance(out, (tuple, list)):
        found = {}
        for i, o in enumerate(out):
            found.update(_flat(o, f"{prefix}.{i}"))
        return found
    return {}


def _double(t):
    import torch

    return t.double() if isinstance(t, torch.Tensor) and t.is_floating_point() else t


def _grads(fn, inputs, weights):
    """The outputs and d(sum(float outputs * w))/d(float inputs) of ``fn``, named."""
    import torch

    leaves = [t.detach().clone().requires_grad_(t.is_floating_point()) if isinstance(t, torch.Tensor) else t
              for t in inputs]
    torch.manual_seed(0)
    out = _flat(fn(*leaves))
    floats = [o for o in out.values() if o.is_floating_point() and o.requires_grad]
    loss = sum((o.double() * weights(o)).sum() for o in floats)
    wanted = [t for t in leaves if isinstance(t, torch.Tensor) and t.requires_grad]
    grads = torch.autograd.grad(loss, wanted, allow_unused=True)
    return {**{k: v.detach() for k, v in out.items()},
            **{f"grad{i}": g if g is not None else torch.zeros_like(w) for i, (g, w) in enumerate(zip(grads, wanted))}}


def _weights():
    import torch

    made = {}

    def of(o):
        key = tuple(o.shape)
        if key not in made:
            made[key] = torch.randn(o.shape, generator=torch.Generator().manual_seed(len(made) + 3)).double()
        return made[key]
    return of


def _verdict(check, label) -> str | None:
    if check.passed:
        return None
    if check.error:
        return f"{label}: {check.error}"
    return f"{label} off: {check.tensor} max err {check.worst:.2e} of scale > 1e-4 (x{check.ratio64:.1f} eager's f64 distance)"


def run_case(case, backend: str, strict: bool = True) -> dict:
    """One case on one backend: {"status": pass|fail|off|island, "detail": ...}."""
    import torch

    import parity
    from parity.conformance.hf.check import compare
    from parity.frontend import compiled_graph

    torch._dynamo.reset()
    compiled_graph.reset_caches()
    from studies.torch_ops_probe import cases as cases_module

    cases_module.R.manual_seed(zlib.crc32(case.name.encode()))
    inputs = case.inputs()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = parity.compile(case.fn, backend=backend, strict=strict)
        try:
            if case.random is not None:
                torch.manual_seed(0)
                case.random(compiled(*inputs), *inputs)
                problems = []
            elif case.grad:
                got = _grads(compiled, inputs, _weights())
                eager = _grads(case.fn, inputs, _weights())
                try:
                    exact = _grads(case.fn, [_double(t) for t in inputs], _weights())
                except Exception:
                    exact = None
                fwd = {k: v for k, v in eager.items() if not k.startswith("grad")}
                problems = [_verdict(compare(got, fwd, exact), "forward"),
                            _verdict(compare(got, {k: v for k, v in eager.items() if k.startswith("grad")}, exact), "backward")]
            else:
                torch.manual_seed(0)
                got = _flat(compiled(*inputs))
                eager = _flat(case.fn(*inputs))
                try:
                    exact = _flat(case.fn(*[_double(t) for t in inputs]))
                except Exception:
                    exact = None
                problems = [_verdict(compare(got, eager, exact), "forward")]
        except AssertionError as exc:
            problems = [f"random check: {exc}"]
    notes = sorted({f"{w.category.__name__}: {' / '.join(str(w.message).splitlines())[:400]}" for w in caught
                    if w.category.__module__.startswith("parity")})
    problems = [p for p in problems if p]
    if problems:
        return {"status": "off", "detail": "; ".join(problems), "warnings": notes}
    return {"status": "island" if notes else "pass", "detail": "", "warnings": notes}


def _refused(exc) -> bool:
    from parity.frontend.errors import UnsupportedAtenOp

    return isinstance(exc, UnsupportedAtenOp)


def _declined(case, backend: str, exc) -> dict:
    """"eager op" where strict=False runs the case right with a warning naming the op that strict
    mode refused (the behaviour promised for what the IR cannot express), else "fail"."""
    first = str(exc).splitlines()
    detail = f"{type(exc).__name__}: {first[0][:300]}" + (f" ({first[1].strip()[:200]})" if len(first) > 1 else "")
    try:
        loose = run_case(case, backend, strict=False)
    except Exception as again:
        return {"status": "fail", "detail": f"{detail}; strict=False: {type(again).__name__}: {str(again)[:200]}",
                "warnings": []}
    named = [w for w in loose["warnings"] if exc.aten_op in w]
    if loose["status"] in ("pass", "island") and named:
        return {"status": "eager op", "detail": detail, "warnings": named}
    return {"status": "fail", "detail": f"{detail}; strict=False: {loose['status']} {loose['detail']}",
            "warnings": loose["warnings"]}


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def run_backend(backend: str, only: list[str], out_path: str, limit_s: int) -> None:
    """Every case on ``backend`` in this process, a JSON line each to ``out_path``."""
    import torch

    from studies.torch_ops_probe.cases import cases

    torch.set_num_threads(1)
    signal.signal(signal.SIGALRM, _alarm)
    for case in cases():
        if only and case.name not in only:
            continue
        start = time.time()
        signal.alarm(limit_s)
        try:
            result = run_case(case, backend)
        except _Timeout:
            result = {"status": "fail", "detail": f"timeout after {limit_s} s", "warnings": []}
        except Exception as exc:  # the probe's point: every failure is a line
            first = (str(exc).strip().splitlines() or [""])[0][:300]
            result = {"status": "fail", "detail": f"{type(exc).__name__}: {first}", "warnings": []}
            if _refused(exc):  # strict mode's error: does strict=False run it eagerly, and say so?
                result = _declined(case, backend, exc)
        finally:
            signal.alarm(0)
        result.update(case=case.name, backend=backend, seconds=round(time.time() - start, 1))
        print(json.dumps(result), flush=True)
        with open(out_path, "a") as f:
            f.write(json.dumps(result) + "\n")


def report(path: str) -> str:
    """results.md's tables from the JSON lines at ``path`` (the last line per case and backend wins)."""
    rows: dict = {}
    for line in open(path):
        r = json.loads(line)
        rows[(r["case"], r["backend"])] = r
    backends = [b for b in BACKENDS if any(k[1] == b for k in rows)]
    names = list(dict.fromkeys(k[0] for k in rows))
    out = ["| case | " + " | ".join(backends) + " |", "| --- |" + " --- |" * len(backends)]
    for name in names:
        out.append(f"| {name} | " + " | ".join(rows[(name, b)]["status"] if (name, b) in rows else "" for b in backends) + " |")
    counts = ["", "| status | " + " | ".join(backends) + " |", "| --- |" + " --- |" * len(backends)]
    for status in ("pass", "island", "eager op", "off", "fail"):
        counts.append(f"| {status} | " + " | ".join(str(sum(1 for k, r in rows.items() if k[1] == b and r["status"] == status))
                                                   for b in backends) + " |")
    details = ["", "Details (failures, numbers off, warnings):", ""]
    for (name, b), r in rows.items():
        if r["status"] != "pass":
            details.append(f"- {name} [{b}] {r['status']}: {r['detail']} {' | '.join(r['warnings'])}".rstrip())
    return "\n".join(out + counts + details) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m studies.torch_ops_probe", description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--only", default="", help="comma-separated case names")
    parser.add_argument("--out", default="/tmp/torch_ops_probe.jsonl")
    parser.add_argument("--limit-s", type=int, default=300, help="per case and backend")
    parser.add_argument("--report", action="store_true", help="print the tables of --out and stop")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a child process: one backend
    args = parser.parse_args()
    only = [n for n in args.only.split(",") if n]
    if args.report:
        print(report(args.out), end="")
        return
    if args.one:
        run_backend(args.one, only, args.out, args.limit_s)
        return
    for backend in args.backends.split(","):
        env = {**os.environ, "TRITON_INTERPRET": "1"} if backend == "triton" else os.environ
        subprocess.run([sys.executable, "-m", "studies.torch_ops_probe", "--one", backend, "--only", args.only,
                        "--out", args.out, "--limit-s", str(args.limit_s)], env=env, check=False)
    print(report(args.out), end="")


if __name__ == "__main__":
    main()
