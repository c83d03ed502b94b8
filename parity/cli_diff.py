"""``parity diff script.py:fn``: the numerics debugger on the command line.

The script is run (``runpy``) and must define ``fn`` — a function or an ``nn.Module``
instance — and its example inputs, one of:

- ``fn.example_args``: a tuple of positional arguments (and ``fn.example_kwargs``, a dict);
- a module-level ``example_inputs()`` returning a tuple of positional arguments, or a
  dict of keyword arguments.

Example::

    $ parity diff model.py:net --backend xla                # ranked table on the terminal
    $ parity diff model.py:net --backend onnx --json d.json --html d.html --repro repros/
    $ parity diff model.py:net --backend xla --against onnx # carried error against another backend

Exit status: 0 when every node is within its contract, 1 when some node is over it (or
the backend raised on it), 2 when the script, its inputs or an option cannot be used, 3 on
a bug in parity (docs/troubleshooting-cli.md).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import runpy
import sys
from typing import Any


class ScriptError(Exception):
    """The script, its function or its example inputs could not be loaded."""


def check_target(spec: str) -> tuple[str, str]:
    """``path.py:name`` → (path, name), checked without running the script."""
    from .validate import UsageError, existing_file

    path, sep, name = spec.rpartition(":")
    if not sep or not path or not name:
        raise UsageError(f"expected SCRIPT.py:NAME, got {spec!r} (e.g. model.py:net)")
    existing_file(path, "script")
    return path, name


def load_target(spec: str) -> tuple[Any, tuple, dict]:
    """``path.py:name`` → (the callable, its positional args, its keyword args)."""
    path, name = check_target(spec)
    namespace = runpy.run_path(path, run_name="__parity_diff__")
    if name not in namespace:
        defined = ", ".join(k for k in namespace if not k.startswith("_")) or "nothing"
        raise ScriptError(f"{path} defines no {name!r} (it defines {defined})")
    fn = namespace[name]
    if hasattr(fn, "example_args"):
        return fn, tuple(fn.example_args), dict(getattr(fn, "example_kwargs", {}) or {})
    make = namespace.get("example_inputs")
    if make is None:
        raise ScriptError(f"{path} gives no inputs for {name!r}: define {name}.example_args = (...) or a "
                          f"function example_inputs() returning a tuple of arguments (or a dict of keyword "
                          f"arguments); see docs/diff.md")
    inputs = make()
    if isinstance(inputs, dict):
        return fn, (), inputs
    return fn, tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,), {}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``parity diff`` options (registered by parity/cli.py)."""
    parser.add_argument("target", metavar="SCRIPT.py:NAME", help="the function or module to diff (docs/diff.md)")
    parser.add_argument("--backend", default="reference", help="backend to debug (default reference)")
    parser.add_argument("--device", default="cpu", help="device (default cpu)")
    parser.add_argument("--against", default="oracle",
                        help="reference of the carried error: oracle (float64, the default), eager, or a backend")
    parser.add_argument("--top", type=int, default=20, help="rows of the terminal table (default 20)")
    parser.add_argument("--no-backward", action="store_true", help="forward graphs only, even if inputs need grad")
    parser.add_argument("--json", metavar="PATH", help="write the JSON report")
    parser.add_argument("--html", metavar="PATH", help="write the HTML view")
    parser.add_argument("--repro", metavar="DIR", help="write a repro folder per guilty node (at most 10)")


def run(args) -> int:
    """Run ``parity diff`` with parsed ``args``; the exit status (see the module docstring)."""
    from rich.console import Console

    from . import diff

    # Piped or logged output has no terminal width: rich would squeeze the eleven columns
    # into 80 and cut node names and ops to a letter, so it gets room for a full row.
    console = Console() if sys.stdout.isatty() else Console(width=200)
    try:
        fn, positional, keywords = load_target(args.target)
    except ScriptError as exc:
        console.print(f"[bold red]parity diff:[/] {exc}", highlight=False)
        return 2
    report = diff(fn, *positional, backend=args.backend, device=args.device, against=args.against,
                  backward=False if args.no_backward else None, **keywords)
    report.print(console, top=args.top)
    outputs = ((args.json, lambda: json.dumps(report.to_json(), indent=1)), (args.html, report.to_html))
    for path, render in outputs:
        if path:
            target = pathlib.Path(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(render(), encoding="utf-8")
            console.print(f"wrote {target}", highlight=False)
    if args.repro:
        folders = report.write_repro(args.repro)
        console.print(f"wrote {len(folders)} repro folder(s) to {args.repro}"
                      + ("" if folders else " (no node is over its contract)"), highlight=False)
    return report.exit_code


__all__ = ["ScriptError", "add_arguments", "check_target", "load_target", "run"]
