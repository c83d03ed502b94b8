import json

from parity.cli import main
from parity.ir import OP_TABLE, Kind


def test_ops_json_lists_every_op_with_kind_and_backend_status(capsys):
    assert main(["ops", "--json", "--backend", "reference"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["name"] for r in rows} == set(OP_TABLE)
    for row in rows:
        assert row["kind"] == OP_TABLE[row["name"]].kind.value
        expected = "native" if OP_TABLE[row["name"]].kind is Kind.PRIMITIVE else "decomposed"
        assert row["backends"] == {"reference": expected}


def test_ops_table_prints_counts(capsys):
    assert main(["ops", "--backend", "reference"]) == 0
    out = capsys.readouterr().out
    assert "primitives" in out and "composites" in out
