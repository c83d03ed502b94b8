"""docs/ir.md's text-format examples are real: each parses, prints back to itself, and
the symbolic one keeps its expressions and its assumption."""

import re
import textwrap
from pathlib import Path

from parity.ir import Symbol, parse
from parity.ir.shapes import graph_constraints

DOC = Path(__file__).resolve().parents[2] / "docs" / "ir.md"


def examples() -> list[str]:
    """The fenced blocks of the "## Text format" section that hold a whole graph."""
    section = DOC.read_text(encoding="utf-8").split("## Text format", 1)[1].split("\n## ", 1)[0]
    # a block inside a list item is indented with its item; the fences' own indent goes too
    blocks = [textwrap.dedent(b) for b in re.findall(r"```\n(.*?)^ *```", section, re.S | re.M)]
    return [b.strip() for b in blocks if b.lstrip().startswith("graph @")]


def test_every_graph_example_parses_and_prints_back():
    found = examples()
    assert len(found) == 2  # the first graph and the symbolic one
    for text in found:
        assert str(parse(text)).strip() == text


def test_the_symbolic_example_keeps_expressions_and_its_assumption():
    (graph,) = [parse(t) for t in examples() if "assume" in t]
    B, S = Symbol("B"), Symbol("S")
    assert [o.type.shape for o in graph.outputs] == [(B * 4, S, 8), (B, S // 2, 32)]
    facts = [str(c) for c in graph_constraints(graph)]
    assert "S must be <= 64 (position table)" in facts
