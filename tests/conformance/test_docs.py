"""docs/conformance.md publishes the bounds table that conformance/bounds.py enforces."""

import pathlib

from parity.conformance import bounds, bounds_tables, opdb
from parity.conformance.compare import op_node
from parity.ir.dtypes import FLOAT_DTYPES
from parity.ir.opdef import Kind
from parity.ir.ops import OP_TABLE

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "conformance.md"


def test_published_table_is_the_generated_one():
    text = DOC.read_text(encoding="utf-8")
    published = text.split("<!-- bounds:begin -->\n", 1)[1].split("<!-- bounds:end -->", 1)[0]
    assert published.strip() == bounds_tables.markdown_table().strip(), (
        "regenerate the table in docs/conformance.md from parity.conformance.bounds_tables.markdown_table()")


def test_every_case_has_a_bound_and_every_table_entry_an_op():
    for case in opdb.all_cases():
        # a built case (the loop's, whose body follows from the operand types) names its op's node
        node = op_node(case, case.graph(case.arrays())) if case.build is not None else None
        attrs = node.attrs if node is not None else OP_TABLE[case.op].normalize_attrs(case.attrs)
        for dtype in FLOAT_DTYPES:
            assert bounds.bound_for(case.op, attrs, dtype).kind in ("exact", "ulp", "scaled")
    assert all(name in OP_TABLE for name in bounds.COMPOSITE_BOUNDS)


def test_table_rows_name_every_composite():
    table = bounds_tables.markdown_table()
    for op in (o.name for o in OP_TABLE.values() if o.kind is Kind.COMPOSITE):
        assert f"| {op} |" in table
