"""Export time of a transformer encoder block: ``parity.export(format="onnx")`` against
``torch.onnx.export`` (``dynamo=True`` and ``dynamo=False``) on the same module.

Two blocks on ``x [8, 128, 256]``: ``nn.TransformerEncoderLayer(d_model=256, nhead=4,
dim_feedforward=1024, dropout=0, batch_first=True)`` in eval mode, and the benchmark
suite's hand-written encoder (``bench/workloads.py``'s ``encoder_torch``, GELU, same sizes)
with its weights as parameters. Each exporter writes its file ``--repeats`` times after
one warm-up export (``torch._dynamo.reset()`` before each, so no traced graph is reused)
and the median is reported, together with the first export in a fresh process (each
exporter's lazy imports and warm-up included). An exporter that raises is reported with
its error. Every file is then run in onnxruntime and compared with eager torch, so a
fast but wrong export cannot win.

    $ python -m studies.onnx_export [--repeats 5] [--no-cold]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch

import parity
from parity.bench.candidates import quiet  # the exporters' progress output, silenced
from parity.bench.workloads import WORKLOADS, encoder_torch


def layer_block() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, batch_first=True).eval()
    return layer, torch.randn(8, 128, 256)


class HandWritten(torch.nn.Module):
    """The benchmark suite's encoder workload (bench/workloads.py's encoder_torch) with its weights as parameters."""

    def __init__(self, params):
        super().__init__()
        self.weights = torch.nn.ParameterList(params)

    def forward(self, x):
        return encoder_torch(x, *self.weights)


def hand_block() -> tuple[torch.nn.Module, torch.Tensor]:
    case = WORKLOADS["encoder"].build(False)
    return HandWritten(case.inputs[1:]).eval(), case.inputs[0]


BLOCKS = {"nn.TransformerEncoderLayer": layer_block, "hand-written block": hand_block}


def export_parity(module, x, path):
    parity.export(module, (x,), path=path, input_names=["x"])


def export_dynamo(module, x, path):
    torch.onnx.export(module, (x,), path, input_names=["x"], dynamo=True)


def export_torchscript(module, x, path):
    torch.onnx.export(module, (x,), path, input_names=["x"], dynamo=False)


EXPORTERS = {"parity.export": export_parity, "torch.onnx.export(dynamo=True)": export_dynamo,
             "torch.onnx.export(dynamo=False)": export_torchscript}


def timed(fn, module, x, path) -> float:
    torch._dynamo.reset()
    start = time.perf_counter()
    with quiet():  # (under no_grad the layer takes a fused fast path that torch.export keeps)
        fn(module, x, path)
    return time.perf_counter() - start


def cold(block: str, name: str) -> float:
    """The first export in a fresh Python process: torch and parity imported, but each exporter's
    own lazy imports and warm-up (tracing caches, decomposition tables) counted."""
    code = ("import tempfile; import studies.onnx_export.__main__ as b; "
            f"m, x = b.BLOCKS[{block!r}](); "
            f"print(b.timed(b.EXPORTERS[{name!r}], m, x, tempfile.mktemp(suffix='.onnx')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2]).stdout
    return float(out.split()[-1])


def measure(block: str, repeats: int, with_cold: bool = True) -> list[dict]:
    module, x = BLOCKS[block]()
    with torch.no_grad():
        expected = module(x).numpy()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, fn in EXPORTERS.items():
            path = str(Path(tmp) / "model.onnx")
            try:
                first = timed(fn, module, x, path)  # the warm-up: first export in this process
                times = [timed(fn, module, x, path) for _ in range(repeats)]
                cold_s = cold(block, name) if with_cold else float("nan")
            except Exception as exc:  # noqa: BLE001 - an exporter that fails is a row, not a crash
                rows.append({"block": block, "exporter": name, "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:100]}"})
                continue
            session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            got = session.run(None, {session.get_inputs()[0].name: x.numpy()})[0]
            rows.append({"block": block, "exporter": name, "median_s": statistics.median(times), "times_s": times, "first_s": first,
                         "cold_s": cold_s, "max_abs_error": float(np.abs(got - expected).max())})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-cold", action="store_true", help="skip the fresh-process runs")
    args = parser.parse_args()
    print("| block | exporter | warm median s | × parity | fresh process s | × parity | max abs error vs eager |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for block in BLOCKS:
        rows = measure(block, args.repeats, not args.no_cold)
        base = rows[0]
        for r in rows:
            if "error" in r:
                print(f"| {block} | {r['exporter']} | fails: {r['error']} | | | | |")
                continue
            print(f"| {block} | {r['exporter']} | {r['median_s']:.3f} | {r['median_s'] / base['median_s']:.1f} | "
                  f"{r['cold_s']:.2f} | {r['cold_s'] / base['cold_s']:.1f} | {r['max_abs_error']:.2e} |")


if __name__ == "__main__":
    main()
