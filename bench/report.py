"""Showing a benchmark record: a terminal table (rich), JSON, and a PNG chart (matplotlib).

Every time is shown with its ratio to the best anchor of its workload (×1.00 is the
fastest of torch eager, Inductor, jax.jit and onnx+ORT; lower is better). A candidate
that failed its correctness check shows ``wrong`` or ``error`` and is never given a
time.
"""

from __future__ import annotations

import json
import math

from rich.console import Console
from rich.markup import escape
from rich.table import Table

STATUS_STYLE = {"wrong": "bold red", "error": "red", "n/a": "dim", "interpreter": "yellow"}


def format_time(seconds: float) -> str:
    """Seconds in the unit that reads best.

    Example::

        >>> format_time(0.0000123), format_time(0.0123), format_time(1.5)
        ('12.3 µs', '12.3 ms', '1.50 s')
    """
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.2f} s"


def _cell(result: dict, is_best: bool) -> str:
    status = result.get("status")
    if status != "ok":
        style = STATUS_STYLE.get(status, "")
        label = f"n/a (interpreter)\n{result.get('reason')}" if status == "interpreter" else status
        return f"[{style}]{escape(label)}[/{style}]"
    lines = [format_time(result["median_s"])]
    if "ratio" in result:
        lines.append(f"[bold]×{result['ratio']:.2f}[/bold]" if is_best else f"×{result['ratio']:.2f}")
    if "gbps" in result:
        lines.append(f"{result['gbps']:.1f} GB/s")
    return "\n".join(lines)


def print_report(record: dict, console: Console | None = None) -> None:
    """The steady-state table, the cold-compile/memory table, and every failure's reason."""
    if console is None:
        console = Console()
        if not console.is_terminal:  # a pipe or a file: do not squeeze the table to 80 columns
            console = Console(width=160)
    machine = record["machine"]
    labels = [c["label"] for c in record["candidates"]]
    title = (f"steady state, median of interleaved rounds; threads: {record['threads']['threads']}; matmul "
             f"{machine['matmul_gflops']:.0f} GFLOP/s, copy {machine['copy_gbs']:.1f} GB/s; load average "
             f"{machine['load_average']:.1f} at the start")
    caption = ("cell: median per call, ×time over the best anchor's (bold: the fastest candidate); roofline: "
               "max(FLOPs ÷ matmul peak, bytes ÷ copy peak), and how far the fastest candidate is from it")
    table = Table(title=title, caption=caption, show_lines=True)
    table.add_column("workload")
    table.add_column("roofline")
    for label in labels:
        table.add_column(escape(label), justify="right")
    notes = []
    for w in record["workloads"]:
        ok = {k: r["median_s"] for k, r in w["results"].items() if r.get("status") == "ok"}
        fastest = min(ok, key=ok.get) if ok else None
        roof = "n/a"
        if w["roofline_s"] and fastest:
            roof = f"{format_time(w['roofline_s'])}\n(fastest {ok[fastest] / w['roofline_s']:.1f}×)"
        name = f"{w['name']}\n[dim]{w['shape']}[/dim]"
        table.add_row(name, roof, *(_cell(w["results"].get(label, {"status": "n/a"}), label == fastest)
                                    for label in labels))
        for label, r in w["results"].items():
            if r.get("status") in ("wrong", "error") or r.get("note"):
                notes.append(f"{w['name']} / {label}: {r['status']}: {r.get('reason') or r.get('note')}")
    if record["workloads"]:  # none when only programs or JAX programs were asked for
        console.print(table)
    if record["cold"]:
        cold = Table(title="cold compile (capture + lower + compile, fresh process, caches off) and peak RSS growth")
        for column in ("workload", "candidate", "cold compile", "first call", "peak RSS Δ"):
            cold.add_column(column, justify="right" if column != "candidate" else "left")
        for c in record["cold"]:
            if c["status"] == "ok":
                cold.add_row(c["workload"], escape(c["candidate"]), format_time(c["compile_s"]),
                             format_time(c["first_call_s"]), f"{c['peak_rss_mb']:.0f} MB")
            else:
                cold.add_row(c["workload"], escape(c["candidate"]), c["status"], "", "")
                notes.append(f"cold {c['workload']} / {c['candidate']}: {c['status']}: {c.get('error')}")
        console.print(cold)
    for note in notes:
        console.print(f"  {note}", highlight=False, markup=False)
    if record.get("programs"):
        print_programs(record["programs"], console)
    if record.get("jax"):
        console.print("\nJAX programs: steady time per call (× jax.jit's), then the first call in seconds",
                      highlight=False, markup=False)
        for line in jax_markdown(record["jax"]).splitlines():
            console.print(line, highlight=False, markup=False)


def jax_markdown(rows: list[dict]) -> str:
    """The ``parity bench --jax`` tables (bench/jax_zoo.py) and the geometric mean of each candidate's ratio."""
    from .jax_zoo import first_calls, ratios, table

    candidates = [c for c in dict.fromkeys(r["candidate"] for r in rows) if c != "jax.jit"]
    means = []
    for candidate in candidates:
        got = ratios(rows, candidate)
        if got:
            means.append(f"{candidate} {math.exp(sum(map(math.log, got)) / len(got)):.2f}× over {len(got)}")
    return "\n".join([*table(rows), "", "geometric mean of the ratios: " + ("; ".join(means) or "none timed"), "",
                      *first_calls(rows)]) + "\n"


def to_markdown(record: dict) -> str:
    """The steady-state and cold-compile tables as Markdown (for the README)."""
    labels = [c["label"] for c in record["candidates"]]
    lines = ["| workload | roofline | " + " | ".join(labels) + " |", "|---" * (len(labels) + 2) + "|"]
    if not record["workloads"]:
        lines = []
    for w in record["workloads"]:
        cells = []
        for label in labels:
            r = w["results"].get(label, {"status": "n/a"})
            if r.get("status") == "ok":
                cells.append(f"{format_time(r['median_s'])} (×{r['ratio']:.2f})" if "ratio" in r
                             else format_time(r["median_s"]))
            elif r.get("status") == "interpreter":
                cells.append(f"interpreter, {r['reason']}")
            else:
                cells.append(r.get("status", "n/a"))
        roof = format_time(w["roofline_s"]) if w["roofline_s"] else "n/a"
        lines.append(f"| {w['name']} ({w['shape']}) | {roof} | " + " | ".join(cells) + " |")
    if record["cold"]:
        lines += ["", "| cold compile | workload | compile | peak RSS Δ |", "|---|---|---|---|"]
        for c in record["cold"]:
            if c["status"] == "ok":
                lines.append(f"| {c['candidate']} | {c['workload']} | {format_time(c['compile_s'])} | "
                             f"{c['peak_rss_mb']:.0f} MB |")
            else:
                lines.append(f"| {c['candidate']} | {c['workload']} | {c['status']} | |")
    text = "\n".join(lines) + "\n"
    if record.get("programs"):
        text += "\n" + programs_markdown(record["programs"])
    if record.get("jax"):
        text += "\n" + jax_markdown(record["jax"])
    return text


# -- programs (bench/programs.py): throughput, first run and captures per candidate --------------


def _program_cells(entry: dict, row: dict) -> tuple[str, str, str]:
    if row.get("status") != "ok":
        return f"{row.get('status')}: {row.get('reason', '')}", "", ""
    ratio = f" (×{row['ratio_to_best_anchor']:.2f})" if "ratio_to_best_anchor" in row else ""
    per_size = row["captures"] / entry["distinct_sizes"] if entry.get("distinct_sizes") else None
    captures = f"{row['captures']}" + (f" ({per_size:.2f} per size)" if per_size is not None else "")
    first = format_time(row["first_run_s"])
    if "first_run_vs_torch_compile" in row:  # issue 36: at most 2x torch.compile's first generate()
        first += f" (×{row['first_run_vs_torch_compile']:.2f} torch.compile's)"
    return f"{row['throughput']:.0f} {entry['unit']}/s{ratio}", first, captures


def print_programs(entries: list[dict], console) -> None:
    """One row per (program, candidate): steady throughput, ×time over the best anchor, first run, captures."""
    table = Table(title="programs: steady throughput (median of whole runs), first run (compiles included), "
                        "Dynamo captures", show_lines=False)
    for column in ("program", "candidate", "throughput", "first run (×torch.compile's)", "captures"):
        table.add_column(column, justify="left" if column in ("program", "candidate") else "right")
    for entry in entries:
        for label, row in entry["results"].items():
            table.add_row(f"{entry['name']} [dim]{escape(entry['shape'])}[/dim]", escape(label),
                          *(escape(c) for c in _program_cells(entry, row)))
    console.print(table)


def programs_markdown(entries: list[dict]) -> str:
    """The programs' table as Markdown (for the README).

    Example::

        >>> row = {"status": "ok", "throughput": 1000.0, "first_run_s": 0.1, "captures": 2, "anchor": True,
        ...        "ratio_to_best_anchor": 1.0}
        >>> entry = {"name": "serving", "shape": "MLP", "unit": "samples", "distinct_sizes": 40,
        ...          "results": {"torch eager": row}}
        >>> programs_markdown([entry]).splitlines()[2]
        '| serving (MLP) | torch eager | 1000 samples/s (×1.00) | 100.0 ms | 2 (0.05 per size) |'
    """
    lines = ["| program | candidate | throughput (×time over the best anchor) | first run (×torch.compile's) "
             "| captures |",
             "|---|---|---|---|---|"]
    for entry in entries:
        for label, row in entry["results"].items():
            lines.append(f"| {entry['name']} ({entry['shape']}) | {label} | " + " | ".join(_program_cells(entry, row)) + " |")
    return "\n".join(lines) + "\n"


def write_json(record: dict, path: str) -> None:
    """The whole record, every round's time included."""
    with open(path, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")


def write_chart(record: dict, path: str) -> None:
    """A PNG: per workload, each candidate's time relative to the best anchor (log scale)."""
    from ..backends.registry import import_extra

    matplotlib = import_extra("matplotlib", "bench", "parity bench --chart")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [c["label"] for c in record["candidates"]]
    workloads = record["workloads"]
    has_cold = any(c["status"] == "ok" for c in record["cold"])
    fig, axes = plt.subplots(1, 2 if has_cold else 1, figsize=(13 if has_cold else 9, 1.8 + 0.9 * len(workloads)),
                             gridspec_kw={"width_ratios": [3, 1.4]} if has_cold else None, squeeze=False)
    ax = axes[0][0]
    height = 0.8 / max(len(labels), 1)
    colors = plt.get_cmap("tab10").colors
    for j, label in enumerate(labels):
        for i, w in enumerate(workloads):
            r = w["results"].get(label, {})
            y = i + (j - (len(labels) - 1) / 2) * height
            if r.get("status") == "ok" and "ratio" in r:
                ax.barh(y, r["ratio"], height, color=colors[j % 10], label=label if i == 0 else None)
                ax.text(r["ratio"], y, f" {r['ratio']:.2f}", va="center", fontsize=7)
            else:
                ax.text(1.0, y, f" {r.get('status', 'n/a')}", va="center", fontsize=7, color="firebrick")
                ax.barh(y, 0, height, color=colors[j % 10], label=label if i == 0 else None)
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks(range(len(workloads)), [w["name"] for w in workloads])
    ax.invert_yaxis()
    ax.set_xlabel("time / best anchor (log; lower is better)")
    machine = record["machine"]
    ax.set_title(f"steady state, threads: {record['threads']['threads']}, matmul {machine['matmul_gflops']:.0f} "
                 f"GFLOP/s, copy {machine['copy_gbs']:.1f} GB/s, load {machine['load_average']:.1f}"
                 + (" (--quick)" if record["quick"] else ""),
                 fontsize=9)
    fig.legend(*ax.get_legend_handles_labels(), fontsize=8, loc="lower center", ncol=min(len(labels), 8),
               frameon=False)
    if has_cold:
        cold = [c for c in record["cold"] if c["status"] == "ok"]
        bx = axes[0][1]
        bx.barh(range(len(cold)), [c["compile_s"] for c in cold],
                color=[colors[labels.index(c["candidate"]) % 10] if c["candidate"] in labels else "gray"
                       for c in cold])
        bx.set_yticks(range(len(cold)), [f"{c['candidate']}\n{c['workload']}" for c in cold], fontsize=7)
        bx.invert_yaxis()
        bx.set_xscale("log" if _spread(cold) else "linear")
        bx.set_xlabel("cold compile, s (fresh process)")
        bx.set_title("cold compile", fontsize=9)
    fig.tight_layout(rect=(0, 0.6 / (1.8 + 0.9 * len(workloads)), 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _spread(cold: list[dict]) -> bool:
    times = [c["compile_s"] for c in cold if c["compile_s"] > 0]
    return len(times) > 1 and math.log10(max(times) / min(times)) > 1.5
