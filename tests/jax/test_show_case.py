"""``parity conform --show-case jax:NAME[DTYPE]:CASE``: a JAX frontend row's case laid open, as an
op row's is: inputs, the captured graph, the spec's and the oracle's outputs, jax.jit's, the verdict."""

from __future__ import annotations

import jax
import numpy as np

from parity.cli import main
from parity.conformance.jax_frontend.registry import find
from parity.conformance.show import _array


def test_show_case_finds_a_jax_row_and_prints_jax_jits_outputs_and_the_verdict(capsys):
    assert main(["conform", "--show-case", "jax:exp[f32]:random"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("case jax:exp[f32]:random (JAX primitive exp, dtype f32)\n")
    case = find("jax:exp[f32]:random")
    arrays = case.arrays()
    assert _array("  input 0", arrays[0]) in out
    graph_text = out.split("graph parity captures (the translation rules under test):\n")[1]
    assert "= exp(%0)" in graph_text.split("reference interpreter")[0]
    want = np.asarray(jax.jit(case.fun)(*arrays))
    assert "jax.jit on cpu (the row's outputs):\n" + _array("  out0", want) in out
    verdict = out.strip().splitlines()[-1]
    assert verdict.startswith("jax on cpu: pass, max ") and verdict.endswith(" ULP (jax.jit)")


def test_show_case_of_a_refusal_prints_the_error_the_capture_raised(capsys):
    assert main(["conform", "--show-case", "jax:while[f32]:refused"]) == 0
    out = capsys.readouterr().out
    assert "the capture refused:\n  DataDependentLoop: " in out and "cases_control.py" in out
    assert out.strip().endswith("jax on cpu: pass (refused)")


def test_an_unknown_jax_case_names_the_cases_of_its_row(capsys):
    assert main(["conform", "--show-case", "jax:neg[f32]:nope"]) == 2
    err = capsys.readouterr().err
    assert "--show-case 'jax:neg[f32]:nope': no JAX frontend case 'jax:neg[f32]:nope'; the cases of jax:neg: " in err
    assert "jax:neg[f32]:specials" in err
