"""Wall time of ``parity conform`` serial and on 1/2/4 workers, local and Monarch engines.

``python -m studies.workers_timing quick|quick-small|zoo [--out FILE]`` runs each
configuration once, back to back, as a ``parity conform`` subprocess writing its JSON
report, and prints a Markdown table: wall time, the ratio to the serial run, the 1-minute
load average before and after, whether every verdict (status and case counts per cell)
equals the serial run's, and which serial run gave every number too (max ULP, max ratio,
worst case, output digests): the serial run on every CPU, or the one on one CPU (workers
split the CPUs, and a few runtimes' results depend on their thread count). ``quick`` is
``--quick`` on every installed backend, ``quick-small`` only on reference and onnx;
``zoo`` is ``--models`` (``--ops`` matching no op, so only model and random rows run) on
reference and onnx. An untimed run first warms Inductor's and Triton's disk caches, so
every timed run finds them warm."""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

RUNS = [("serial", []), ("serial on one CPU", ["ONE_CPU"]), ("--workers 1", ["--workers", "1"]), ("--workers 2", ["--workers", "2"]),
        ("--workers 4", ["--workers", "4"]), ("--workers 1 --engine monarch", ["--workers", "1", "--engine", "monarch"]),
        ("--workers 2 --engine monarch", ["--workers", "2", "--engine", "monarch"]),
        ("--workers 4 --engine monarch", ["--workers", "4", "--engine", "monarch"])]
SELECTIONS = {
    "quick": ["--quick"],  # every installed backend
    "quick-small": ["--quick", "--backend", "reference", "--backend", "onnx"],
    "zoo": ["--models", "--ops", "^$", "--backend", "reference", "--backend", "onnx"],
}
_VERDICT = ("op", "dtype", "backend", "device", "status", "cases", "failed")
_FIELDS = (*_VERDICT, "max_ulp", "max_ratio", "worst_case", "hashes")


def _cells(path: pathlib.Path, fields=_FIELDS) -> list[tuple]:
    doc = json.loads(path.read_text())
    return [tuple(c.get(k) for k in fields) for c in doc["cells"]]


def _one_cpu() -> None:
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("selection", choices=sorted(SELECTIONS))
    ap.add_argument("--out", help="append the table to this Markdown file")
    args = ap.parse_args(argv)
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    rows, serial, reference = [], None, {}
    with tempfile.TemporaryDirectory() as tmp:
        # One untimed run first: Inductor's and Triton's disk caches (under parity's cache
        # directory) are then warm for every timed run, not for all but the first. (Each run
        # cold is not practical: Inductor compiling the whole --quick cold took over 10 minutes
        # serially here.)
        warm = [sys.executable, "-m", "parity.cli", "conform", *SELECTIONS[args.selection], "--summary-only"]
        subprocess.run(warm, env=env, capture_output=True, text=True)
        for label, flags in RUNS:
            report = pathlib.Path(tmp) / f"{len(rows)}.json"
            one_cpu = flags == ["ONE_CPU"]
            cmd = [sys.executable, "-m", "parity.cli", "conform", *SELECTIONS[args.selection],
                   *([] if one_cpu else flags), "--summary-only", "--json", str(report)]
            before = os.getloadavg()[0]
            start = time.perf_counter()
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, preexec_fn=_one_cpu if one_cpu else None)
            wall = time.perf_counter() - start
            after = os.getloadavg()[0]
            cells = _cells(report) if report.exists() else None
            if serial is None:
                serial = wall
            if label.startswith("serial"):
                reference[label] = cells
            verdicts = "yes" if cells is not None and _cells(report, _VERDICT) == [c[:len(_VERDICT)] for c in
                                                                                reference["serial"]] else "NO"
            numbers = [name for name, ref in reference.items() if cells is not None and cells == ref]
            rows.append(f"| {label} | {wall:.1f} s | {wall / serial:.2f}× | {before:.1f} → {after:.1f} | "
                        f"{len(cells or [])} | {verdicts} | {', '.join(numbers) or 'neither'} | exit {done.returncode} |")
            print(rows[-1], flush=True)
            if done.returncode not in (0, 1):
                print(done.stderr[-2000:], file=sys.stderr, flush=True)
    table = ["| run | wall time | vs serial | load average | cells | verdicts = serial's | every number = |"
             " exit |", "| --- | --- | --- | --- | --- | --- | --- | --- |", *rows]
    text = (f"\n### `parity conform {' '.join(SELECTIONS[args.selection])}` "
            f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores)\n\n" + "\n".join(table))
    print(text)
    if args.out:
        with open(args.out, "a", encoding="utf-8") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
