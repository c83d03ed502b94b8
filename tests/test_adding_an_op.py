"""The walk of docs/adding-an-op.md is complete: every op of the table has each required
piece, and an op added to the table without them fails with a message naming each
missing piece and the file it goes in.

The pieces (docs/adding-an-op.md, "The required pieces"):

* a reference (primitive) or decomposition (composite): ``OpDef`` refuses to exist without;
* every built-in backend claims every primitive (its lowering table; composites may be
  decomposed instead), or declines it with a reason (``Backend.declined``);
* conformance has cases for it (``conformance/opdb``);
* the frontend translates it when torch's Core ATen has an op of the same name;
* docs/ir.md's op catalogue names it.
"""

from __future__ import annotations

import dataclasses
import pathlib
import re
from dataclasses import dataclass

import pytest
import torch

from parity.backends.registry import BUILTIN_BACKENDS, get_backend
from parity.conformance import opdb
from parity.frontend.aten import TABLE as ATEN_TABLE
from parity.ir.opdef import Kind, OpDef
from parity.ir.ops import OP_TABLE

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "adding-an-op.md"


@dataclass(frozen=True)
class Facts:
    """What the tree provides, gathered once: per backend the ops it claims, the ops with
    conformance cases, the translated aten overloads, the words of docs/ir.md's catalogue."""

    claims: dict[str, frozenset[str]]
    case_ops: frozenset[str]
    translated: frozenset[str]
    catalogue: frozenset[str]


def _claimed_or_declined(backend) -> frozenset[str]:
    """The ops ``backend`` claims, and those it declines with a reason (``Backend.declined``)."""
    return frozenset(backend.claims()) | frozenset(op for op, why in backend.declined.items() if why)


def gather_facts() -> Facts:
    # A fresh instance of each backend: claims an instance computed before an op was added are stale.
    claims = {name: _claimed_or_declined(type(get_backend(name))()) for name in BUILTIN_BACKENDS}
    case_ops = frozenset(c.op for family in opdb.FAMILIES.values() for c in family.cases())
    return Facts(claims, case_ops, frozenset(ATEN_TABLE), frozenset(catalogue_words()))


def catalogue_words() -> set[str]:
    """Every name in backticks in docs/ir.md's "## Op catalogue" section."""
    text = (ROOT / "docs" / "ir.md").read_text(encoding="utf-8")
    section = re.split(r"\n## ", text.split("\n## Op catalogue", 1)[1], maxsplit=1)[0]
    return {w for span in re.findall(r"`([^`]+)`", section) for w in re.findall(r"[A-Za-z_]\w*", span)}


def core_aten_namesakes(op: str) -> list[str]:
    """The Core ATen overloads named like ``op`` ("expm1.default"): after decomposition these
    reach the frontend, so one of them must be translated."""
    packet = getattr(torch.ops.aten, op, None)
    if not isinstance(packet, torch._ops.OpOverloadPacket):
        return []
    return [f"{op}.{o}" for o in packet.overloads() if torch.Tag.core in getattr(packet, o).tags]


def missing_pieces(opdef: OpDef, facts: Facts) -> list[str]:
    """What ``opdef`` still lacks, one line per piece, naming where it goes."""
    name, missing = opdef.name, []
    if opdef.kind is Kind.PRIMITIVE:
        for backend, claimed in facts.claims.items():
            if name not in claimed:
                missing.append(f"backends/{backend}/: no lowering rule for the primitive {name!r} "
                               f"(the {backend} backend does not claim it)")
    if name not in facts.case_ops:
        missing.append(f"conformance/opdb/: no conformance case for {name!r} (its family's module builds them)")
    namesakes = core_aten_namesakes(name)
    if namesakes and not set(namesakes) & facts.translated:
        missing.append(f"frontend/aten/: aten.{namesakes[0]} is Core ATen and has no translation to {name!r}")
    if name not in facts.catalogue:
        missing.append(f"docs/ir.md: the op catalogue does not name {name!r}")
    return missing


@pytest.fixture(scope="module")
def facts() -> Facts:
    return gather_facts()


def test_every_op_in_the_table_has_every_piece(facts):
    report = {name: missing_pieces(opdef, facts) for name, opdef in OP_TABLE.items()}
    report = {name: pieces for name, pieces in report.items() if pieces}
    assert not report, "ops missing pieces (docs/adding-an-op.md):\n" + "\n".join(
        f"  {name}: {piece}" for name, pieces in report.items() for piece in pieces)


# -- an op planted in the table without its pieces --------------------------------------------

def _planted(name: str) -> OpDef:
    """A new unary primitive, as step 1 of the walk makes it: expm1's row under another name."""
    return dataclasses.replace(OP_TABLE["expm1"], name=name)


@pytest.fixture(scope="module")
def planted_report() -> str:
    """The check's message for "erfcx", in the table only while the facts are gathered."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(OP_TABLE, "erfcx", _planted("erfcx"))
        return "\n".join(missing_pieces(OP_TABLE["erfcx"], gather_facts()))


@pytest.mark.parametrize("piece", [
    "backends/xla/: no lowering rule for the primitive 'erfcx'",
    "backends/onnx/: no lowering rule for the primitive 'erfcx'",
    "backends/triton/: no lowering rule for the primitive 'erfcx'",
    "conformance/opdb/: no conformance case for 'erfcx'",
    "docs/ir.md: the op catalogue does not name 'erfcx'",
])
def test_a_planted_op_names_each_missing_piece(planted_report, piece):
    assert piece in planted_report, planted_report


def test_the_reference_backend_needs_no_piece_of_its_own(planted_report):
    assert "backends/reference/" not in planted_report  # it runs OpDef.reference


def test_a_core_aten_op_without_its_translation_names_the_frontend(facts):
    untranslated = dataclasses.replace(facts, translated=facts.translated - {"expm1.default"})
    assert missing_pieces(OP_TABLE["expm1"], untranslated) == [
        "frontend/aten/: aten.expm1.default is Core ATen and has no translation to 'expm1'"]


def test_a_primitive_without_a_reference_or_a_composite_without_a_decomposition_is_refused():
    with pytest.raises(ValueError, match="primitive erfcx needs a reference implementation"):
        dataclasses.replace(OP_TABLE["expm1"], name="erfcx", reference=None)
    softmax = OP_TABLE["softmax"]
    assert softmax.kind is Kind.COMPOSITE
    with pytest.raises(ValueError, match="composite softmax needs a decomposition"):
        dataclasses.replace(softmax, decompose=None)


def test_the_doc_lists_every_file_the_check_names():
    doc = DOC.read_text(encoding="utf-8")
    for path in ("ir/ops/unary.py", "backends/xla/elementwise.py", "backends/onnx/elementwise.py",
                 "backends/triton/elementwise.py", "frontend/aten/elementwise.py", "docs/ir.md",
                 "conformance/opdb/elementwise.py"):
        assert f"`{path}`" in doc, path
        assert (ROOT / path).exists(), f"docs/adding-an-op.md names {path}, which is gone: update the walk"
    # every file the walk names for expm1 still mentions it
    for path in re.findall(r"`((?:ir|backends|frontend|conformance)/[\w/]+\.py)`", doc):
        assert "expm1" in (ROOT / path).read_text(encoding="utf-8"), f"{path} no longer mentions expm1"
