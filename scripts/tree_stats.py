"""Size of the tree: files and lines per top-level folder, the docstring share, the largest files.

The numbers a restructuring is judged by: run it before and after and compare.

    python scripts/tree_stats.py            # every top-level folder holding Python
    python scripts/tree_stats.py --largest 15

A docstring line is a line inside a module, class or function docstring (the string
literal that is the first statement of its body), its quotes included. A figure line is a
docstring line that states a measurement (a number of µs, ms or s, or a ratio like 1.2x or
3×): those belong in docs/.
"""

from __future__ import annotations

import argparse
import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
SKIPPED = {".venv", "build", ".git", "node_modules"}
FIGURE = re.compile(r"\d(\.\d+)?\s?(µs|us|ms|s)\b|\d\.\d+x\b|\d\s?×\s?(\D|$)")


def python_files(root: pathlib.Path) -> list[pathlib.Path]:
    """Every tracked-looking .py file under ``root``, skipping virtual environments and builds."""
    return sorted(path for path in root.rglob("*.py")
                  if not SKIPPED.intersection(path.relative_to(root).parts)
                  and not any(part.endswith(".egg-info") for part in path.parts))


def docstring_lines(source: str) -> tuple[int, int]:
    """How many lines of ``source`` belong to docstrings, and how many of those state a figure."""
    count = figures = 0
    lines = source.splitlines()
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            count += body[0].end_lineno - body[0].lineno + 1
            figures += sum(1 for line in lines[body[0].lineno - 1:body[0].end_lineno] if FIGURE.search(line))
    return count, figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--largest", type=int, default=10, help="how many of the largest files to list")
    args = parser.parse_args()
    folders: dict[str, list[int]] = {}
    sizes: list[tuple[int, str]] = []
    for path in python_files(ROOT):
        relative = path.relative_to(ROOT)
        folder = relative.parts[0] if len(relative.parts) > 1 else "."
        source = path.read_text()
        lines = source.count("\n")
        doc, figures = docstring_lines(source)
        entry = folders.setdefault(folder, [0, 0, 0, 0])
        for i, value in enumerate((1, lines, doc, figures)):
            entry[i] += value
        sizes.append((lines, relative.as_posix()))
    print(f"{'folder':<14}{'files':>7}{'lines':>9}{'docstring':>11}{'figure lines':>14}")
    rows = sorted(folders.items())
    rows.append(("total", [sum(entry[i] for entry in folders.values()) for i in range(4)]))
    rows.append(("not tests/", [sum(entry[i] for name, entry in folders.items() if name != "tests") for i in range(4)]))
    for folder, (files, lines, doc, figures) in rows:
        print(f"{folder:<14}{files:>7}{lines:>9}{doc / max(lines, 1):>10.1%}{figures:>14}")
    print(f"\nlargest {args.largest} files:")
    for lines, name in sorted(sizes, reverse=True)[:args.largest]:
        print(f"{lines:>6}  {name}")


if __name__ == "__main__":
    main()
