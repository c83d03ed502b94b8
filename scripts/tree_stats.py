"""Size of the tree: files and lines per top-level folder, the docstring share, the largest files.

The numbers a restructuring is judged by: run it before and after and compare.

    python scripts/tree_stats.py            # every top-level folder holding Python
    python scripts/tree_stats.py --largest 15

A docstring line is a line inside a module, class or function docstring (the string
literal that is the first statement of its body), its quotes included.
"""

from __future__ import annotations

import argparse
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
SKIPPED = {".venv", "build", ".git", "node_modules"}


def python_files(root: pathlib.Path) -> list[pathlib.Path]:
    """Every tracked-looking .py file under ``root``, skipping virtual environments and builds."""
    return sorted(path for path in root.rglob("*.py")
                  if not SKIPPED.intersection(path.relative_to(root).parts)
                  and not any(part.endswith(".egg-info") for part in path.parts))


def docstring_lines(source: str) -> int:
    """How many lines of ``source`` belong to docstrings."""
    count = 0
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            count += body[0].end_lineno - body[0].lineno + 1
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--largest", type=int, default=10, help="how many of the largest files to list")
    args = parser.parse_args()
    folders: dict[str, list[int]] = {}
    sizes: list[tuple[int, str]] = []
    total_lines = total_doc = 0
    for path in python_files(ROOT):
        relative = path.relative_to(ROOT)
        folder = relative.parts[0] if len(relative.parts) > 1 else "."
        source = path.read_text()
        lines = source.count("\n")
        doc = docstring_lines(source)
        entry = folders.setdefault(folder, [0, 0, 0])
        entry[0] += 1
        entry[1] += lines
        entry[2] += doc
        total_lines += lines
        total_doc += doc
        sizes.append((lines, relative.as_posix()))
    print(f"{'folder':<14}{'files':>7}{'lines':>9}{'docstring':>11}")
    for folder, (files, lines, doc) in sorted(folders.items()):
        print(f"{folder:<14}{files:>7}{lines:>9}{doc / max(lines, 1):>10.1%}")
    files = sum(entry[0] for entry in folders.values())
    print(f"{'total':<14}{files:>7}{total_lines:>9}{total_doc / max(total_lines, 1):>10.1%}")
    files, lines, doc = (sum(entry[i] for name, entry in folders.items() if name != "tests") for i in range(3))
    print(f"{'not tests/':<14}{files:>7}{lines:>9}{doc / max(lines, 1):>10.1%}")
    print(f"\nlargest {args.largest} files:")
    for lines, name in sorted(sizes, reverse=True)[:args.largest]:
        print(f"{lines:>6}  {name}")


if __name__ == "__main__":
    main()
