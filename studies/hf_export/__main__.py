"""ONNX export of the Hugging Face zoo: ``parity.export`` against ``torch.onnx.export(dynamo=True)``.

Every architecture of :mod:`parity.conformance.hf` (tiny configs, random weights) is
exported in eval mode with its forward's keyword arguments by each exporter, the file is
run in plain onnxruntime and compared with eager torch (every output within 1e-4 of its
scale: :func:`parity.conformance.hf.export_check.check_export`). Prints a Markdown table,
architecture × exporter, with pass/fail, the worst relative error and the first line of
any error, then each exporter's pass rate. ``torch.onnx.export(dynamo=True)`` needs
``onnxscript``; without it that column says so instead of failing 47 times.

    $ python -m studies.hf_export [--only llama,bert] [--exporters parity,torch.onnx] [--json out.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import sys

from parity.conformance.hf import ARCHITECTURES, get_architecture
from parity.conformance.hf.export_check import EXPORTERS, ExportResult, check_export


def cell(result: ExportResult | None, width: int = 110) -> str:
    if result is None:
        return "not run: onnxscript is not installed (torch.onnx.export(dynamo=True) needs it)"
    if result.passed:
        return f"pass ({result.worst:.1e}, {result.seconds:.1f} s)"
    line = result.first_line.replace("|", "\\|")
    line = line if len(line) <= width else line[:width - 1] + "…"
    if result.worst != float("inf") and not result.error.startswith(result.tensor + ":"):
        return f"fail ({result.worst:.1e}): {line}"
    return f"fail: {line}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated architecture names (default: the whole zoo)")
    parser.add_argument("--exporters", default=",".join(EXPORTERS), help=f"comma-separated, of {list(EXPORTERS)}")
    parser.add_argument("--json", default="", help="also write every result to this JSON file")
    parser.add_argument("--inference", action="store_true",
                        help="leave out the loss inputs (labels): the forward as served")
    args = parser.parse_args(argv)
    specs = [get_architecture(n) for n in args.only.split(",")] if args.only else list(ARCHITECTURES)
    exporters = [e for e in args.exporters.split(",") if e]
    runnable = {e: e != "torch.onnx" or importlib.util.find_spec("onnxscript") is not None for e in exporters}
    print("| architecture | " + " | ".join(exporters) + " |")
    print("| --- | " + " | ".join("---" for _ in exporters) + " |")
    results: list[ExportResult] = []
    for spec in specs:
        row = {e: check_export(spec, e, inference=args.inference) if runnable[e] else None for e in exporters}
        results += [r for r in row.values() if r is not None]
        print(f"| {spec.name} | " + " | ".join(cell(row[e]) for e in exporters) + " |", flush=True)
    print()
    for e in exporters:
        mine = [r for r in results if r.exporter == e]
        print(f"{e}: {sum(r.passed for r in mine)}/{len(specs)} pass" if runnable[e] else f"{e}: not run")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([dataclasses.asdict(r) for r in results], f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
