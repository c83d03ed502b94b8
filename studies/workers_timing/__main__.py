"""Wall time of ``parity conform`` serial and on 1/2/4 workers, local and Monarch engines.

``python -m studies.workers_timing quick|zoo [--out studies/workers_timing/results.md]`` runs
each configuration once, back to back, as a ``parity conform`` subprocess writing its
JSON report, and prints a Markdown table: wall time, the ratio to the serial run, the
1-minute load average before and after, and whether every cell (status, max ULP, max
ratio, case counts, worst case) equals the serial run's. ``quick`` is
``--quick --backend reference --backend onnx``; ``zoo`` is ``--models`` restricted to the
smallest zoo models (``--ops`` matching no op, so only model and random rows run) on
reference and onnx.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

RUNS = [("serial", []), ("--workers 1", ["--workers", "1"]), ("--workers 2", ["--workers", "2"]),
        ("--workers 4", ["--workers", "4"]), ("--workers 1 --engine monarch", ["--workers", "1", "--engine", "monarch"]),
        ("--workers 2 --engine monarch", ["--workers", "2", "--engine", "monarch"]),
        ("--workers 4 --engine monarch", ["--workers", "4", "--engine", "monarch"])]
SELECTIONS = {
    "quick": ["--quick", "--backend", "reference", "--backend", "onnx"],
    "zoo": ["--models", "--ops", "^$", "--backend", "reference", "--backend", "onnx"],
}
_FIELDS = ("op", "dtype", "backend", "device", "status", "max_ulp", "max_ratio", "cases", "failed", "worst_case", "hashes")


def _cells(path: pathlib.Path) -> list[tuple]:
    doc = json.loads(path.read_text())
    return [tuple(c.get(k) for k in _FIELDS) for c in doc["cells"]]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("selection", choices=sorted(SELECTIONS))
    ap.add_argument("--out", help="append the table to this Markdown file")
    args = ap.parse_args(argv)
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    rows, serial, serial_cells = [], None, None
    with tempfile.TemporaryDirectory() as tmp:
        for label, flags in RUNS:
            report = pathlib.Path(tmp) / f"{len(rows)}.json"
            cmd = [sys.executable, "-m", "parity.cli", "conform", *SELECTIONS[args.selection], *flags,
                   "--summary-only", "--json", str(report)]
            before = os.getloadavg()[0]
            start = time.perf_counter()
            done = subprocess.run(cmd, env=env, capture_output=True, text=True)
            wall = time.perf_counter() - start
            after = os.getloadavg()[0]
            cells = _cells(report) if report.exists() else None
            if serial is None:
                serial, serial_cells = wall, cells
            same = "yes" if cells is not None and cells == serial_cells else "NO"
            rows.append(f"| {label} | {wall:.1f} s | {wall / serial:.2f}× | {before:.1f} → {after:.1f} | "
                        f"{len(cells or [])} | {same if label != 'serial' else '—'} | exit {done.returncode} |")
            print(rows[-1], flush=True)
            if done.returncode not in (0, 1):
                print(done.stderr[-2000:], file=sys.stderr, flush=True)
    table = ["| run | wall time | vs serial | load average | cells | cells = serial's | exit |",
             "| --- | --- | --- | --- | --- | --- | --- |", *rows]
    text = (f"\n### `parity conform {' '.join(SELECTIONS[args.selection])}` "
            f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores)\n\n" + "\n".join(table))
    print(text)
    if args.out:
        with open(args.out, "a", encoding="utf-8") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
