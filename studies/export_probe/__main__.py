"""ONNX export of small PyTorch programs outside the model zoo: ``parity.export`` against
``torch.onnx.export(dynamo=True)``.

The programs are torch_ops_probe's (cases.py; the random ones left out: a file has no
eager numbers to match) and a few whole modules users deploy (modules.py). Each is
exported twice by each exporter: with static shapes, and with dim 0 (the batch) dynamic
on the first input of the most dims and every input of its batch size (an
example batch of 1 is doubled first: torch.export specializes size 1). Each file runs in
plain onnxruntime (CPU) at the export shape and, when dynamic, at batch + 1 (the first
row appended again), and its outputs, in order, are compared with eager by the zoo's rule
(conformance/hf/check.py ``compare``: within 1e-4 of the tensor's scale, or at most 2x
eager's own float32 distance from a float64 run). A cell reads ``ok`` or the first stage
that failed: ``export``, ``ort`` (the session or its run), ``off`` (numbers), ``static``
(the "dynamic" file runs only at the export shape), and the file's size.

Results: results.md. Example::

    $ python -m studies.export_probe --only cdist,m_unet --out /tmp/export_probe.jsonl
    $ python -m studies.export_probe --report --out /tmp/export_probe.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import tempfile
import time
import warnings
import zlib

EXPORTERS = ("parity", "torch.onnx")
MODES = ("static", "dynamic")


def _cases() -> list:
    from studies.export_probe.modules import module_cases
    from studies.torch_ops_probe.cases import cases

    return [c for c in cases() if c.random is None] + module_cases()


def _batched(inputs: tuple) -> tuple[list[int], tuple]:
    """The inputs that share the batch (their dim 0), and the example with a batch of 1 doubled."""
    import torch

    tensors = [i for i, t in enumerate(inputs) if isinstance(t, torch.Tensor) and t.dim() >= 1]
    if not tensors:
        return [], inputs
    anchor = max(tensors, key=lambda i: (inputs[i].dim(), -i))
    size = inputs[anchor].shape[0]
    members = [i for i in tensors if inputs[i].shape[0] == size]
    if size == 1:
        inputs = tuple(torch.cat([t, t]) if i in members else t for i, t in enumerate(inputs))
    return members, inputs


def _grown(inputs: tuple, members: list[int]) -> tuple:
    import torch

    return tuple(torch.cat([t, t[:1]]) if i in members else t for i, t in enumerate(inputs))


def _flat(out) -> list:
    from studies.torch_ops_probe.__main__ import _flat as flat

    return list(flat(out).values())


def _export(exporter: str, fn, inputs: tuple, names: list[str], dims: dict | None, path: str) -> None:
    import torch

    if exporter == "parity":
        import parity

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parity.export(fn, inputs, path=path, input_names=names, dynamic_dims=dims)
        return
    from parity.conformance.hf.export_check import _quiet_torch_onnx

    class Call(torch.nn.Module):
        def __init__(self):
            super().__init__()
            if isinstance(fn, torch.nn.Module):
                self.inner = fn

        def forward(self, *args):
            return fn(*args)

    shapes = None
    if dims:
        batch = torch.export.Dim("batch")
        shapes = {"args": tuple({0: batch} if n in dims else None for n in names)}
    with _quiet_torch_onnx():
        torch.onnx.export(Call(), inputs, path, input_names=names, dynamo=True, external_data=False,
                          dynamic_shapes=shapes)


def _run(path: str, inputs: tuple) -> list:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    feeds = {}
    for i in session.get_inputs():  # an exporter may drop an input the graph never reads
        k = int(i.name[2:]) if i.name.startswith("in") and i.name[2:].isdigit() else None
        if k is None:
            raise ValueError(f"the file has an input {i.name!r} that is none of the arguments")
        feeds[i.name] = _array(inputs[k])
    if any(o.type == "tensor(bfloat16)" for o in session.get_outputs()):
        return [_bfloat16_tensor(o) for o in session.run_with_ort_values(None, feeds)]
    return [_tensor(o) for o in session.run(None, feeds)]


def _bfloat16_tensor(value):
    """An OrtValue as a tensor, through its memory (ORT's Python API has no bfloat16 array)."""
    import ctypes

    import numpy as np
    import torch

    if value.data_type() != "tensor(bfloat16)":
        return torch.from_numpy(value.numpy())
    shape = value.shape()
    bits = np.ctypeslib.as_array((ctypes.c_int16 * int(np.prod(shape))).from_address(value.data_ptr()))
    return torch.from_numpy(bits.copy().reshape(shape)).view(torch.bfloat16)


def _array(t):
    """numpy has no bfloat16: an OrtValue of the tensor's bits typed BFLOAT16."""
    import torch

    if t.dtype != torch.bfloat16:
        return t.numpy()
    import onnx
    import onnxruntime as ort

    return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(t.view(torch.int16).numpy(), onnx.TensorProto.BFLOAT16)


def _tensor(a):
    import torch

    return torch.from_numpy(a) if hasattr(a, "dtype") else torch.tensor(a)


def _first_line(exc: BaseException) -> str:
    from parity.conformance.hf.batch_export import reason

    return reason(exc)[:300]


def _judge(fn, inputs: tuple, got: list) -> str | None:
    """None when ``got`` (the file's outputs, in order) matches eager, else why not."""
    import torch

    from parity.conformance.hf.check import compare
    from studies.torch_ops_probe.__main__ import _double

    with torch.no_grad():
        eager = _flat(fn(*inputs))
        try:
            exact = _flat(fn(*[_double(t) for t in inputs]))
        except Exception:
            exact = None
    if len(got) != len(eager):
        return f"{len(got)} outputs for eager's {len(eager)}"
    names = [f"out{i}" for i in range(len(eager))]
    got = [g.to(e.dtype) if g.dtype != e.dtype and g.shape == e.shape else g for g, e in zip(got, eager)]
    check = compare(dict(zip(names, got)), dict(zip(names, eager)),
                    dict(zip(names, exact)) if exact is not None and len(exact) == len(eager) else None)
    if check.error:
        return check.error
    if not check.passed:
        return f"{check.tensor} max err {check.worst:.1e} of scale (x{check.ratio64:.1f} eager's f64 distance)"
    return None


def run_cell(case, exporter: str, mode: str, folder: str) -> dict:
    """One case, exporter and mode: {"status": ok|export|ort|off|static|eager, "detail", "bytes"}."""
    import torch

    from studies.torch_ops_probe import cases as cases_module

    torch._dynamo.reset()
    cases_module.R.manual_seed(zlib.crc32(case.name.encode()))
    inputs = tuple(t.detach() if isinstance(t, torch.Tensor) else t for t in case.inputs())
    members, batched = _batched(inputs)
    if mode == "dynamic":
        if not members:
            return {"status": "n/a", "detail": "no tensor input with a dim", "bytes": 0}
        inputs = batched
    names = [f"in{i}" for i in range(len(inputs))]
    dims = {names[i]: {0: "batch"} for i in members} if mode == "dynamic" else None
    path = os.path.join(folder, f"{case.name}.{exporter}.{mode}.onnx")
    try:
        _export(exporter, case.fn, inputs, names, dims, path)
    except Exception as exc:
        return {"status": "export", "detail": _first_line(exc), "bytes": 0}
    size = os.path.getsize(path)
    sizes = [inputs] + ([_grown(inputs, members)] if mode == "dynamic" else [])
    for k, feed in enumerate(sizes):
        try:
            with torch.no_grad():
                case.fn(*feed)
        except Exception as exc:
            return {"status": "eager", "detail": f"eager fails at batch + 1: {_first_line(exc)}", "bytes": size}
        try:
            got = _run(path, feed)
        except Exception as exc:
            status = "static" if k else "ort"
            return {"status": status, "detail": _first_line(exc), "bytes": size}
        why = _judge(case.fn, feed, got)
        if why:
            return {"status": "off", "detail": ("at batch + 1: " if k else "") + why, "bytes": size}
    return {"status": "ok", "detail": "", "bytes": size}


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def run(only: list[str], out_path: str, limit_s: int, exporters: list[str]) -> None:
    import torch

    torch.set_num_threads(1)
    signal.signal(signal.SIGALRM, _alarm)
    with tempfile.TemporaryDirectory() as folder:
        for case in _cases():
            if only and case.name not in only:
                continue
            for exporter in exporters:
                for mode in MODES:
                    start = time.time()
                    signal.alarm(limit_s)
                    try:
                        result = run_cell(case, exporter, mode, folder)
                    except _Timeout:
                        result = {"status": "export", "detail": f"timeout after {limit_s} s", "bytes": 0}
                    finally:
                        signal.alarm(0)
                    result.update(case=case.name, exporter=exporter, mode=mode, seconds=round(time.time() - start, 1))
                    print(json.dumps(result), flush=True)
                    with open(out_path, "a") as f:
                        f.write(json.dumps(result) + "\n")


def _cell(r: dict | None) -> str:
    if r is None:
        return ""
    return r["status"] + (f" {r['bytes'] / 1024:.0f}K" if r["status"] == "ok" else "")


def report(path: str) -> str:
    """results.md's tables from the JSON lines at ``path`` (the last line per cell wins)."""
    rows: dict = {}
    for line in open(path):
        r = json.loads(line)
        rows[(r["case"], r["exporter"], r["mode"])] = r
    columns = [(e, m) for e in EXPORTERS for m in MODES]
    names = list(dict.fromkeys(k[0] for k in rows))
    out = ["| case | " + " | ".join(f"{e} {m}" for e, m in columns) + " |", "| --- |" + " --- |" * len(columns)]
    for name in names:
        out.append(f"| {name} | " + " | ".join(_cell(rows.get((name, e, m))) for e, m in columns) + " |")
    counts = ["", "| status | " + " | ".join(f"{e} {m}" for e, m in columns) + " |", "| --- |" + " --- |" * len(columns)]
    for status in ("ok", "export", "ort", "off", "static", "eager", "n/a"):
        counts.append(f"| {status} | " + " | ".join(
            str(sum(1 for k, r in rows.items() if k[1:] == col and r["status"] == status)) for col in columns) + " |")
    details = ["", "Details (every cell that is not ok):", ""]
    for (name, e, m), r in rows.items():
        if r["status"] != "ok":
            details.append(f"- {name} [{e} {m}] {r['status']}: {r['detail']}")
    return "\n".join(out + counts + details) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m studies.export_probe", description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated case names")
    parser.add_argument("--exporters", default=",".join(EXPORTERS))
    parser.add_argument("--out", default="/tmp/export_probe.jsonl")
    parser.add_argument("--limit-s", type=int, default=120, help="per cell")
    parser.add_argument("--report", action="store_true", help="print the tables of --out and stop")
    args = parser.parse_args()
    if not args.report:
        run([n for n in args.only.split(",") if n], args.out, args.limit_s, args.exporters.split(","))
    print(report(args.out), end="")


if __name__ == "__main__":
    main()
