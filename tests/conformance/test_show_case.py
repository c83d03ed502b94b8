"""``parity conform --show-case ID`` (conformance/show.py): a case's inputs, graph, the spec's
and the oracle's outputs, and each backend's own outputs with its verdict."""

import numpy as np
import pytest

from parity.backends.registry import register_backend, unregister_backend
from parity.cli import main
from parity.conformance.show import find_case
from parity.ir.interpreter import evaluate


@pytest.fixture
def add_off(monkeypatch):
    import pathlib

    monkeypatch.syspath_prepend(str(pathlib.Path(__file__).parent))
    from perturbed import Perturbed

    register_backend(Perturbed("add_off", {"add": 1 + 2**-8}))
    yield "add_off"
    unregister_backend("add_off")


def _section(text: str, head: str) -> str:
    return text.split(head, 1)[1].split("\n\n", 1)[0]


def test_show_case_prints_the_inputs_graph_and_every_side_s_outputs(add_off, capsys):
    assert main(["conform", "--show-case", "add[f32]:random", "--backend", "reference", "--backend", add_off]) == 0
    text = capsys.readouterr().out
    case = find_case("add[f32]:random")
    arrays = case.arrays()
    spec = evaluate(case.graph(arrays), arrays)[0]
    assert text.splitlines()[0] == "case add[f32]:random (op add, dtype f32)"
    assert "= add(%0, %1)" in _section(text, "graph:")
    first_input = _section(text, "inputs:").split("input 1:")[0]
    assert f"{arrays[0].flat[0]:.7e}"[:8] in first_input.replace(" ", "")  # the drawn numbers, not a summary
    wrong = _section(text, f"{add_off} on cpu: ")
    assert wrong.startswith("fail") and "ULP" in wrong
    printed = wrong.split("=", 1)[1].replace("[", " ").replace("]", " ").replace(",", " ").split()
    assert np.array_equal(np.array(printed, np.float32), (spec * np.float32(1 + 2**-8)).ravel())
    assert _section(text, "reference on cpu: ").startswith("pass")


def test_an_unknown_case_id_names_the_cases_of_its_op(capsys):
    assert main(["conform", "--show-case", "exp[f32]:nope"]) == 2
    err = capsys.readouterr().err
    assert "--show-case 'exp[f32]:nope': no such case; the cases of 'exp': exp[f32]:broadcast" in err
