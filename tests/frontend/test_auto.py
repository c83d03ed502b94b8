"""backend="auto": only backends that claim the graph's ops, are conformant for them and
match eager torch on the first inputs are timed; the fastest is chosen and remembered;
$PARITY_BACKEND forces one backend."""

import json
import re

import numpy as np
import pytest
import torch

import parity
from parity.backends.base import Backend, Deviation
from parity.backends.registry import get_backend, register_backend, unregister_backend
from parity.frontend import auto, compiler
from parity.frontend.auto_options import ENV_VAR
from parity.ir.dtypes import DType
from parity.ir.ops import OP_TABLE

FAST = parity.AutoOptions(budget_s=0.02, candidates=("onnx", "xla"))


def _fn(x):
    return torch.relu(x * 2 + 1)


X = torch.tensor([-2.0, -0.5, 0.0, 1.0])


class Planted(Backend):
    """onnx with a planted fault: wrong first outputs, a missing claim, or a recorded deviation."""

    devices = ("cpu",)

    def __init__(self, name, *, wrong_first=False, unclaimed=None, deviations=()):
        self.name = name
        self.wrong_first = wrong_first
        self.unclaimed = unclaimed
        self.deviations = tuple(deviations)
        self.compiles = 0

    def claims(self):
        claims = dict(get_backend("onnx").claims())
        claims.pop(self.unclaimed, None)
        return claims

    def compile(self, graph, device):
        self.compiles += 1
        run = get_backend("onnx").compile(graph, device)
        calls = []

        def call(*arrays):
            calls.append(1)
            outputs = run(*arrays)
            if self.wrong_first and len(calls) == 1:
                return [o + np.ones_like(o) for o in outputs]
            return outputs

        return call


@pytest.fixture
def planted():
    made = []

    def plant(name, **kwargs):
        backend = Planted(name, **kwargs)
        register_backend(backend)
        made.append(name)
        return backend

    auto._CHOICES.clear()
    yield plant
    for name in made:
        unregister_backend(name)
    auto._CHOICES.clear()


def _choice(f):
    (choice,) = parity.auto_choices(f)
    return choice, {c.name: c for c in choice.candidates}


def test_auto_chooses_a_timed_candidate_and_computes_right(planted):
    f = parity.compile(_fn, backend="auto", auto=FAST)
    assert f(X).tolist() == [0.0, 0.0, 1.0, 3.0]
    assert f(X * 2).tolist() == [0.0, 0.0, 1.0, 5.0]
    choice, by_name = _choice(f)
    assert choice.choice in ("onnx", "xla") and choice.source == "measured"
    assert all(c.times_s for c in by_name.values())
    assert "chosen" in str(choice)


def test_wrong_numbers_on_first_inputs_are_never_chosen(planted):
    planted("planted_wrong", wrong_first=True)
    f = parity.compile(_fn, backend="auto", auto=parity.AutoOptions(budget_s=0.02,
                                                                    candidates=("planted_wrong", "onnx")))
    assert f(X).tolist() == [0.0, 0.0, 1.0, 3.0]
    choice, by_name = _choice(f)
    assert choice.choice == "onnx"
    assert by_name["planted_wrong"].status == "dropped"
    assert "differs from eager torch" in by_name["planted_wrong"].why
    assert by_name["planted_wrong"].times_s == []


def test_a_backend_that_does_not_claim_an_op_is_never_a_candidate(planted):
    partial = planted("planted_partial", unclaimed="mul")
    f = parity.compile(_fn, backend="auto", auto=parity.AutoOptions(budget_s=0.02,
                                                                    candidates=("planted_partial", "onnx")))
    f(X)
    choice, by_name = _choice(f)
    assert choice.choice == "onnx"
    assert by_name["planted_partial"].status == "dropped" and "does not claim" in by_name["planted_partial"].why
    assert "'mul'" in by_name["planted_partial"].why and partial.compiles == 0


def test_a_recorded_deviation_drops_the_candidate(planted):
    deviating = planted("planted_deviating", deviations=[Deviation("mul", "planted", "9 ulp", dtype=DType.float32)])
    f = parity.compile(_fn, backend="auto", auto=parity.AutoOptions(budget_s=0.02,
                                                                    candidates=("planted_deviating", "onnx")))
    f(X)
    choice, by_name = _choice(f)
    assert choice.choice == "onnx" and deviating.compiles == 0
    assert "not conformant: mul f32: recorded deviation 9 ulp" in by_name["planted_deviating"].why


def test_a_recorded_matrix_decides_conformance(planted, tmp_path):
    cells = [{"op": op, "dtype": d.short, "backend": b, "device": "cpu",
              "status": "fail" if (b, op) == ("xla", "mul") else "pass"}
             for op, opdef in OP_TABLE.items() for d in opdef.dtypes for b in ("onnx", "xla")]
    path = tmp_path / "conformance.json"
    path.write_text(json.dumps({"cells": cells}))
    f = parity.compile(_fn, backend="auto", auto=parity.AutoOptions(budget_s=0.02, candidates=("onnx", "xla"),
                                                                    matrix=str(path)))
    f(X)
    choice, by_name = _choice(f)
    assert choice.choice == "onnx" and by_name["xla"].why.startswith("not conformant: mul f32: fail")


def test_the_environment_variable_forces_one_backend(planted, monkeypatch):
    monkeypatch.setenv(ENV_VAR, "xla")
    f = parity.compile(_fn, backend="auto", auto=FAST)
    assert f(X).tolist() == [0.0, 0.0, 1.0, 3.0]
    assert f.options.backend == "xla" and parity.auto_choices(f) == []
    monkeypatch.setenv(ENV_VAR, "onnx")  # read once, when the options were made
    assert f(X).tolist() == [0.0, 0.0, 1.0, 3.0] and f.options.backend == "xla"


def test_the_choice_is_remembered_in_process_and_on_disk(planted, tmp_path):
    counted = planted("planted_counted")
    options = parity.AutoOptions(budget_s=0.02, candidates=("planted_counted", "onnx"))
    first = parity.compile(_fn, backend="auto", auto=options, cache_dir=tmp_path)
    first(X)
    chosen = _choice(first)[0].choice
    again = parity.compile(_fn, backend="auto", auto=options, cache_dir=tmp_path)
    again(X)
    assert _choice(again)[0].source == "cached in this process" and _choice(again)[0].choice == chosen
    auto._CHOICES.clear()  # a new process: only the disk remembers
    compiler.reset_caches()
    later = parity.compile(_fn, backend="auto", auto=options, cache_dir=tmp_path)
    assert later(X).tolist() == [0.0, 0.0, 1.0, 3.0]
    assert _choice(later)[0].source == "cached on disk" and _choice(later)[0].choice == chosen
    assert counted.compiles == (2 if chosen == "planted_counted" else 1)


def test_strict_false_picks_per_partition(planted):
    f = parity.compile(lambda x: torch.lgamma(x) * 2, backend="auto", strict=False, auto=FAST)
    with pytest.warns(UserWarning, match="aten.lgamma.default .*runs eagerly"):
        out = f(torch.full((3,), 3.0))
    torch.testing.assert_close(out, torch.lgamma(torch.full((3,), 3.0)) * 2)
    whole, part = parity.auto_choices(f)
    assert whole.choice is None and "partitioned" in whole.source
    assert part.choice in ("onnx", "xla")
    assert [(r.on_backend, r.in_eager) for r in parity.fallbacks(f)] == [(1, 1)]


def test_strict_auto_names_the_op_no_candidate_claims(planted):
    f = parity.compile(lambda x: torch.lgamma(x) * 2, backend="auto", auto=FAST)
    with pytest.raises(Exception, match="lgamma"):
        f(torch.ones(3))


def test_explain_shows_what_auto_chose(planted):
    """parity.explain of an auto-compiled function lists each graph's candidates, their
    times and the pick (and says so when nothing was chosen yet)."""
    planted("planted_wrong", wrong_first=True)
    f = parity.compile(_fn, backend="auto", auto=parity.AutoOptions(budget_s=0.02,
                                                                    candidates=("planted_wrong", "onnx", "xla")))
    before = parity.explain(f, X, backends=["onnx"])
    assert before.auto == [] and "backend='auto': nothing chosen yet" in str(before)
    f(X)
    report = parity.explain(f, X, backends=["onnx"])
    (choice,) = report.auto
    text = str(report)
    assert f"backend='auto', choice 1: inference graph on cpu: {choice.choice} (measured)" in text
    assert re.search(rf"{choice.choice} +chosen +[\d.]+ µs median of \d+", text)
    assert re.search(r"(onnx|xla) +timed +[\d.]+ µs median of \d+", text)
    assert re.search(r"planted_wrong +dropped .*differs from eager torch", text)
    assert parity.explain(_fn, X, backends=["onnx"]).auto is None  # not an auto-compiled function
