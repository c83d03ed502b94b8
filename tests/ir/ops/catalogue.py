"""The ops docs/ir.md's op catalogue names under one heading, for tests that check a
family against its documentation."""

from __future__ import annotations

import re
from pathlib import Path

from parity.ir import OP_TABLE

IR_DOC = Path(__file__).resolve().parents[3] / "docs" / "ir.md"


def documented_ops(heading: str) -> set[str]:
    """Op names in backticks in the catalogue section whose ``###`` heading starts with ``heading``."""
    text = IR_DOC.read_text(encoding="utf-8")
    sections = re.split(r"\n#{2,3} ", text)
    (section,) = [s for s in sections if s.startswith(heading)]
    words = {w for code in re.findall(r"`([^`]*)`", section) for w in re.findall(r"[a-z_0-9]+", code)}
    return words & set(OP_TABLE)
