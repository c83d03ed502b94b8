"""The ``parity`` command line.

Example::

    $ parity ops              # op × backend table
    $ parity ops --json       # the same as JSON
    $ parity conform --device cpu --html reports/conformance.html   # the conformance matrix
    $ parity conform --models  # plus the model zoo and the random draws
    $ parity conform --models hf --backend xla  # the Hugging Face zoo on xla, anchors beside it
    $ parity conform --mutants --backend xla   # planted faults: the suite's kill rate per fault class
    $ parity fuzz --budget 1000 --seed 1   # differential fuzzing (regressions: --save-dir, or beside the plugin)
    $ parity bench --quick    # every backend against the anchors (see parity.bench)
    $ parity aten             # which aten ops the PyTorch frontend translates
    $ parity diff model.py:net --backend xla --repro repros/   # which node makes xla's answer differ
    $ parity --version        # parity's, torch's and each backend stack's versions
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from .validate import UsageError

# subcommands whose first step is importing torch (seconds on a cold start)
NEEDS_TORCH = ("aten", "conform", "fuzz", "bench", "diff")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from .backends.registry import BackendNotFound
    from .cli_checks import check

    try:
        check(args)  # a bad backend, device, regex or path: one line, exit 2 (docs/troubleshooting-cli.md)
        if args.command in NEEDS_TORCH:
            from .frontend.status import slow_work

            with slow_work("parity: loading torch"):  # seconds on a cold start; shown on a terminal only
                import torch  # noqa: F401
        return args.run(args)
    except (UsageError, BackendNotFound) as exc:
        print(f"parity {args.command}: {exc}", file=sys.stderr)
        return 2
    except Exception:  # a bug in parity: the traceback, and a status no verdict uses
        import traceback

        traceback.print_exc()
        print(f"parity {args.command}: internal error (exit status 3): please report it with the traceback above",
              file=sys.stderr)
        return 3


def build_parser() -> argparse.ArgumentParser:
    """Every subcommand and its options (the docs' command lines are parsed by it in tests)."""
    parser = argparse.ArgumentParser(prog="parity", description="parity: one IR, many backends.")
    parser.add_argument("--version", action=_PrintVersions, nargs=0,
                        help="print the versions of parity, torch and each backend's stack, and exit")
    commands = parser.add_subparsers(dest="command", required=True)

    ops = commands.add_parser("ops", help="print the op × backend support table")
    ops.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ops.add_argument("--backend", action="append", help="only these backends (repeatable)")
    ops.set_defaults(run=_run_ops)

    aten = commands.add_parser("aten", help="which aten ops translate, and the Core ATen ops that do not")
    aten.add_argument("--json", action="store_true", help="print JSON instead of text")
    aten.set_defaults(run=_run_aten)

    from .conformance.options import add_worker_arguments

    conform = commands.add_parser("conform", help="run the conformance suite and print the op × backend matrix")
    conform.add_argument("--backend", action="append", help="only these backends (repeatable; default: all)")
    conform.add_argument("--device", action="append", help="only these devices (repeatable; default: all listed)")
    conform.add_argument("--dtype", action="append", help="only cases of these dtypes, e.g. f32 (repeatable)")
    conform.add_argument("--ops", metavar="REGEX", help="only ops whose name matches (re.search)")
    conform.add_argument("--quick", action="store_true",
                         help="edge cases plus one other case per op and dtype; no 10**6-term reductions")
    conform.add_argument("--json", metavar="PATH", help="write the JSON report")
    conform.add_argument("--markdown", metavar="PATH", help="write the Markdown report")
    conform.add_argument("--html", metavar="PATH", help="write the self-contained HTML report")
    conform.add_argument("--summary-only", action="store_true", help="print the summary without the matrix")
    conform.add_argument("--models", nargs="?", const="zoo", choices=("zoo", "hf", "all"),
                         help="also whole models vs eager torch: 'zoo' (the default: parity's own zoo and the random "
                              "draws), 'hf' (the Hugging Face transformers zoo: forward, gradients, a second step, "
                              "with torch.compile aot_eager/inductor as anchors), or 'all'")
    conform.add_argument("--architectures", metavar="A,B",
                         help="with --models zoo: only these zoo models (mlp, cnn, ...); with --models hf/all: only "
                              "these Hugging Face architectures")
    conform.add_argument("--no-frontend", action="store_true",
                         help="leave out the JAX frontend's rows (jax:PRIMITIVE, each translation rule against JAX "
                              "itself; not run without jax)")
    conform.add_argument("--no-anchors", action="store_true", help="with --models hf/all: skip the torch.compile anchors")
    conform.add_argument("--precision", default="exact", metavar="TIER",
                         help="the precision tier measured: exact (the contract), fast (a column 'NAME@fast' per "
                              "backend that declares it, held to the fast tier's bounds), both side by side, or a "
                              "vendor tier's name (a column 'NAME@TIER' beside each declaring backend's exact one, "
                              "held to the bounds the tier declares: docs/plugins.md)")
    conform.add_argument("--mutants", action="store_true",
                         help="mutation testing: plant each fault class at the backends' executable boundary and "
                              "report the kill rate per class and every surviving mutant (--quick cases; exit 1 on "
                              "a survivor)")
    conform.add_argument("--mutant-sample", type=int, default=8, metavar="N",
                         help="with --mutants: at most N op × dtype cells per fault class, one per op (0: all)")
    conform.add_argument("--mutant-seed", type=int, default=0, help="with --mutants: the seed of that sample")
    conform.add_argument("--faults", metavar="A,B", help="with --mutants: only these fault classes")
    conform.add_argument("--show-case", metavar="ID",
                         help="print one case (e.g. 'exp[f32]:specials', a cell's worst case): its inputs, graph, the "
                              "reference's and oracle's outputs, and each --backend's outputs and verdict (default "
                              "backend: reference), then exit")
    add_worker_arguments(conform, journal=True)
    conform.add_argument("merge", nargs="*", metavar="merge REPORT.json",
                         help="'parity conform merge a.json b.json ... [--html out.html] [--json out.json]': one "
                              "matrix from the reports of several machines, with their device agreement")
    conform.set_defaults(run=_run_conform)

    fuzz = commands.add_parser("fuzz", help="differential fuzzing: random graphs on every backend, node by node")
    fuzz.add_argument("--budget", type=int, default=100, help="number of graphs (default 100)")
    fuzz.add_argument("--seed", type=int, default=0, help="the stream of graphs (graph i of seed s is reproducible)")
    fuzz.add_argument("--backend", action="append", help="only these backends (repeatable; default: all)")
    fuzz.add_argument("--device", default="cpu", help="device to run on (default cpu)")
    fuzz.add_argument("--time-limit", type=float, metavar="SECONDS", help="stop after this long (reports the count)")
    fuzz.add_argument("--graph", type=int, action="append", metavar="I",
                      help="only graph I of the seed's stream (repeatable; reproduces a finding)")
    fuzz.add_argument("--no-save", action="store_true", help="do not write the regressions it finds")
    fuzz.add_argument("--save-dir", metavar="DIR",
                      help="write regressions to DIR (default: a plugin's beside its project as parity-regressions/, "
                           "a built-in backend's into conformance/regressions/ of a parity source checkout; never "
                           "into an installed package)")
    fuzz.add_argument("--no-shrink", action="store_true", help="report mismatches without minimising them")
    fuzz.add_argument("--json", metavar="PATH", help="write the fuzzing report as JSON")
    add_worker_arguments(fuzz, journal=True)
    fuzz.set_defaults(run=_run_fuzz)

    from .bench import cli as bench_cli  # light: the heavy imports happen when it runs

    bench = commands.add_parser("bench", help="benchmark every backend against torch, Inductor, JAX, onnxruntime")
    bench_cli.add_arguments(bench)
    bench.set_defaults(run=bench_cli.run)

    from . import cli_diff as diff_cli  # torch loads only when it runs

    diff = commands.add_parser("diff", help="which node makes a backend's answer differ: local vs carried error "
                                            "per node, ranked; JSON, HTML and repros (docs/diff.md)")
    diff_cli.add_arguments(diff)
    diff.set_defaults(run=diff_cli.run)
    return parser


class _PrintVersions(argparse.Action):
    """``parity --version``: one line each (argparse's own version action would reflow them)."""

    def __call__(self, parser, namespace, values, option_string=None):
        from .versions import version_lines

        print("\n".join(version_lines()))
        parser.exit(0)


def _run_ops(args) -> int:
    from .backends.registry import backend_names
    from .op_matrix import op_matrix

    names = args.backend or backend_names()
    rows = op_matrix(names)
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    from rich.console import Console
    from rich.table import Table

    styles = {"native": "green", "extern": "cyan", "decomposed": "yellow", "unsupported": "red"}
    table = Table(title="parity ops: how each backend runs each op")
    for column in ("op", "kind", "accuracy", *names):
        table.add_column(column)
    for row in rows:
        cells = []
        for name in names:
            status = row["backends"][name]
            style = styles.get(status.rstrip("?"), "dim")
            cells.append(f"[{style}]{status}[/{style}]")
        table.add_row(row["name"], row["kind"], row["accuracy"], *cells)
    console = Console()
    if not console.is_terminal:  # piped: as wide as the table, so no column name is cut to "accura…"
        console = Console(width=Console(width=10_000).measure(table).maximum)
    console.print(table)
    n_prim = sum(r["kind"] == "primitive" for r in rows)
    console.print(f"{len(rows)} ops: {n_prim} primitives, {len(rows) - n_prim} composites")
    return 0


def _run_aten(args) -> int:
    from .frontend import coverage

    report = coverage()
    if args.json:
        json.dump(report, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    missing = report["core_missing"]
    print(f"{len(report['translated'])} aten ops translate to the parity IR:")
    print("  " + " ".join(op.removeprefix("aten.") for op in report["translated"]))
    print(f"{len(missing)} Core ATen ops do not translate yet:")
    print("  " + (" ".join(op.removeprefix("aten.") for op in missing) or "(none)"))
    return 0


def _run_conform(args) -> int:
    from rich.console import Console

    from .backends.registry import BackendNotFound, get_backend
    from .conformance import runner, terminal
    from .conformance.controller import WorkerRunError
    from .conformance.options import isolation_options, worker_options
    from .conformance.plugins import load_plugins
    from .conformance.writers import write_reports
    from .ir.dtypes import DType

    console = Console(stderr=False)
    if args.merge:
        from .conformance.merge import merge_files

        return merge_files(args.merge, json_path=args.json, html_path=args.html, markdown_path=args.markdown,
                           console=console)
    try:
        dtypes = [DType.from_short(d) for d in args.dtype or ()]
        workers = worker_options(args, isolates=True)
        load_plugins(args.plugin)
        for name in args.backend or ():
            get_backend(name)  # a backend asked for by name must load
    except (ValueError, BackendNotFound) as exc:
        raise UsageError(str(exc)) from None  # one line on stderr, exit 2 (main)
    if args.show_case:
        from .conformance.show import show_case

        print(show_case(args.show_case, args.backend or ["reference"], (args.device or ["cpu"])[0]))
        return 0
    backends = _tier_columns(args.backend, args.precision)
    if args.mutants:
        return _run_mutants(args, backends, dtypes, console)
    try:
        with terminal.progress_bar(console) as progress:
            result = runner.run(backends, devices=args.device, dtypes=dtypes, ops=args.ops, quick=args.quick,
                                progress=progress, models=args.models,
                                architectures=args.architectures.split(",") if args.architectures else None,
                                anchors=not args.no_anchors, workers=workers, plugins=tuple(args.plugin),
                                isolate=isolation_options(args), frontend=not args.no_frontend)
    except (WorkerRunError, ValueError) as exc:  # a journal to refuse, a worker that cannot start, no host for a backend
        raise UsageError(str(exc)) from None  # one line on stderr, exit 2 (main)
    if not args.summary_only:
        terminal.print_matrix(result, console)
    terminal.print_summary(result, console)
    write_reports(result, json_path=args.json, markdown_path=args.markdown, html_path=args.html, console=console)
    return result.exit_code


def _tier_columns(names, precision: str):
    """The conformance columns for ``--precision``: the backend names as given for exact, else
    each backend that declares the fast tier seen at it (conformance/tiers.py), after its
    exact column for ``both``."""
    if precision == "exact":
        return names
    from .backends.registry import BackendNotFound, backend_names, get_backend
    from .conformance.tiers import at_precision
    from .ir.precision import Precision

    loaded = []
    for name in names or backend_names():
        try:
            loaded.append(get_backend(name))
        except (BackendNotFound, ImportError):
            continue  # a backend that cannot load has no fast column; its exact column says why
    if precision not in ("fast", "both"):  # a vendor tier: beside the exact column of each backend declaring it
        tiered = at_precision(loaded, precision)
        if not tiered:
            raise UsageError(f"--precision {precision!r}: no backend asked for declares that tier; parity's tiers are "
                             f"exact, fast (or both), and a vendor tier is one its backend declares (docs/plugins.md)")
        return [*(t.inner.name for t in tiered), *tiered]
    fast = at_precision(loaded, Precision.FAST)
    return [*(names or backend_names()), *fast] if precision == "both" else fast


def _run_mutants(args, backends, dtypes, console) -> int:
    """``parity conform --mutants``: the kill-rate table and the survivors; exit 1 on a survivor."""
    import pathlib

    from .conformance import terminal
    from .conformance.mutants import run_mutants
    from .conformance.mutants.run import to_text

    with terminal.progress_bar(console, "mutants") as progress:
        try:
            result = run_mutants(backends, devices=args.device, ops=args.ops, dtypes=dtypes,
                                 faults=args.faults.split(",") if args.faults else None, sample=args.mutant_sample,
                                 seed=args.mutant_seed, progress=progress)
        except ValueError as exc:
            console.print(f"[bold red]parity conform --mutants:[/] {exc}", highlight=False)
            return 2
    print(to_text(result))
    if args.json:
        target = pathlib.Path(args.json)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(result.to_json(), indent=1), encoding="utf-8")
        console.print(f"wrote {target}", highlight=False)
    return result.exit_code


def _run_fuzz(args) -> int:
    """Exit 1 when a mismatch was found that no saved regression records yet."""
    import pathlib

    from rich.console import Console

    from .backends.registry import BackendNotFound, get_backend
    from .conformance import fuzz, terminal
    from .conformance.controller import fuzz_results
    from .conformance.options import worker_options
    from .conformance.plugins import load_plugins

    console = Console()
    try:
        workers = worker_options(args)
        load_plugins(args.plugin)
        for name in args.backend or ():
            get_backend(name)
    except (ValueError, BackendNotFound) as exc:
        raise UsageError(str(exc)) from None  # one line on stderr, exit 2 (main)
    with terminal.progress_bar(console, "fuzz") as progress:
        report = fuzz.run(args.budget, seed=args.seed, backends=args.backend, device=args.device,
                          do_shrink=not args.no_shrink, save=not args.no_save, directory=args.save_dir,
                          deadline_s=args.time_limit,
                          progress=progress, only=args.graph,
                          results_for=fuzz_results(workers) if workers else None)
    for line in report.lines():
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    if args.json:
        target = pathlib.Path(args.json)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(report.to_json(), indent=1), encoding="utf-8")
        console.print(f"wrote {target}", highlight=False)
    return 1 if report.new_findings or report.crashes else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
