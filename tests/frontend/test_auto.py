"""backend="auto": only backends that claim the graph's ops, are conformant for them and
match eager torch on the first inputs are timed; the fastest is chosen and remembered;
$PARITY_BACKEND forces one backend."""

import builtins
import json
import re
import subprocess
import sys
import textwrap
import time
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import parity
from parity.backends.base import Backend, CompilePrior, Deviation
from parity.backends.registry import get_backend, register_backend, unregister_backend
from parity.frontend import auto, auto_compile_times, compiled_graph
from parity.frontend.auto_options import ENV_VAR
from parity.ir.dtypes import DType
from parity.ir.ops import OP_TABLE

FAST = parity.AutoOptions(budget_s=60, candidates=("onnx", "xla"))


def _fn(x):
    return torch.relu(x * 2 + 1)


X = torch.tensor([-2.0, -0.5, 0.0, 1.0])


class Planted(Backend):
    """onnx with a planted fault: wrong first outputs, a missing claim, or a recorded deviation."""

    devices = ("cpu",)

    def __init__(self, name, *, wrong_first=False, unclaimed=None, deviations=(), compile_s=0.0):
        self.name = name
        self.compile_s = compile_s  # a planted cold-compile cost
        self.runs = 0
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
        time.sleep(self.compile_s)
        run = get_backend("onnx").compile(graph, device)
        calls = []

        def call(*arrays):
            calls.append(1)
            self.runs += 1
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
    auto_compile_times.reset()
    yield plant
    for name in made:
        unregister_backend(name)
    auto._CHOICES.clear()
    auto_compile_times.reset()


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
    f = parity.compile(_fn, backend="auto", auto=parity.AutoOptions(budget_s=60,
                                                                    candidates=("planted_wrong", "onnx")))
    assert f(X).tolist() == [0.0, 0.0, 1.0, 3.0]
    choice, by_name = _choice(f)
    assert choice.choice == "onnx"
    assert by_name["planted_wrong"].status == "dropped"
    assert "differs from eager torch" in by_name["planted_wrong"].why
    assert by_name["planted_wrong"].times_s == []


def test_a_backend_that_does_not_claim_an_op_is_never_a_candidate(planted):
    partial = planted("planted_partial", unclaimed="mul")
    f = parity.compile(_fn, backend="auto", auto=parity.AutoOptions(budget_s=60,
                                                                    candidates=("planted_partial", "onnx")))
    f(X)
    choice, by_name = _choice(f)
    assert choice.choice == "onnx"
    assert by_name["planted_partial"].status == "dropped" and "does not claim" in by_name["planted_partial"].why
    assert "'mul'" in by_name["planted_partial"].why and partial.compiles == 0


def test_a_recorded_deviation_drops_the_candidate(planted):
    deviating = planted("planted_deviating", deviations=[Deviation("mul", "planted", "9 ulp", dtype=DType.float32)])
    f = parity.compile(_fn, backend="auto", auto=parity.AutoOptions(budget_s=60,
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
    f = parity.compile(_fn, backend="auto", auto=parity.AutoOptions(budget_s=60, candidates=("onnx", "xla"),
                                                                    matrix=str(path)))
    f(X)
    choice, by_name = _choice(f)
    assert choice.choice == "onnx" and by_name["xla"].why.startswith("not conformant: mul f32: fail")


def test_the_environment_variable_forces_one_backend(planted, monkeypatch):
    monkeypatch.setenv(ENV_VAR, "xla")
    f = parity.compile(_fn, backend="auto", auto=FAST)
    assert f(X).tolist() == [0.0, 0.0, 1.0, 3.0]
    assert f.options.backend == "xla" and parity.auto_choices(f) == []
    assert repr(f) == "<parity.compile of _fn: backend=xla (forced over auto by $PARITY_BACKEND or " \
                      "AutoOptions.forced), device=cpu>"
    monkeypatch.setenv(ENV_VAR, "onnx")  # read once, when the options were made
    assert f(X).tolist() == [0.0, 0.0, 1.0, 3.0] and f.options.backend == "xla"


def test_the_choice_is_remembered_in_process_and_on_disk(planted, tmp_path):
    counted = planted("planted_counted")
    options = parity.AutoOptions(budget_s=60, candidates=("planted_counted", "onnx"))
    first = parity.compile(_fn, backend="auto", auto=options, cache_dir=tmp_path)
    first(X)
    chosen = _choice(first)[0].choice
    again = parity.compile(_fn, backend="auto", auto=options, cache_dir=tmp_path)
    again(X)
    assert _choice(again)[0].source == "cached in this process" and _choice(again)[0].choice == chosen
    auto._CHOICES.clear()  # a new process: only the disk remembers
    compiled_graph.reset_caches()
    later = parity.compile(_fn, backend="auto", auto=options, cache_dir=tmp_path)
    assert later(X).tolist() == [0.0, 0.0, 1.0, 3.0]
    assert _choice(later)[0].source == "cached on disk" and _choice(later)[0].choice == chosen
    assert counted.compiles == (2 if chosen == "planted_counted" else 1)


def test_strict_false_picks_per_partition(planted):
    f = parity.compile(lambda x: torch.special.bessel_j0(x) * 2, backend="auto", strict=False, auto=FAST)
    with pytest.warns(UserWarning, match="aten.special_bessel_j0.default .*runs eagerly"):
        out = f(torch.full((3,), 3.0))
    torch.testing.assert_close(out, torch.special.bessel_j0(torch.full((3,), 3.0)) * 2)
    whole, part = parity.auto_choices(f)
    assert whole.choice is None and "partitioned" in whole.source
    assert part.choice in ("onnx", "xla")
    assert [(r.on_backend, r.in_eager) for r in parity.fallbacks(f)] == [(1, 1)]


def test_strict_auto_names_the_op_no_candidate_claims(planted):
    f = parity.compile(lambda x: torch.special.bessel_j0(x) * 2, backend="auto", auto=FAST)
    with pytest.raises(Exception, match="bessel_j0"):
        f(torch.ones(3))


def test_explain_shows_what_auto_chose(planted):
    """parity.explain of an auto-compiled function lists each graph's candidates, their
    times and the pick (and says so when nothing was chosen yet)."""
    planted("planted_wrong", wrong_first=True)
    f = parity.compile(_fn, backend="auto", auto=parity.AutoOptions(budget_s=60,
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


# -- the default: auto, within a budget that counts compiles, warmed up, remembered on disk ---------


def test_a_bare_compile_runs_auto_and_says_so():
    """No backend named: auto chooses at the first call, never the reference interpreter, and
    the compiled object's repr and parity.explain say which backend runs and why."""
    f = parity.compile(_fn)
    assert repr(f) == "<parity.compile of _fn: backend=auto (chooses the fastest conformant backend at the " \
                      "first call), device=cpu>"
    assert f(X).tolist() == [0.0, 0.0, 1.0, 3.0]
    choice, by_name = _choice(f)
    assert "reference" not in by_name and choice.choice in by_name and choice.source == "measured"
    raced = sorted((c for c in by_name.values() if c.times_s), key=lambda c: c.median_s)
    assert raced[0].name == choice.choice and len(raced) >= 2
    line = re.fullmatch(r"<parity.compile of _fn: (backend=auto → (\w+) \(fastest of (.*) on the first call\), "
                        r"device=cpu)>", repr(f))
    assert line and line.group(2) == choice.choice
    assert [t.split()[0] for t in line.group(3).split(", ")] == [c.name for c in raced]
    assert f"runs on: {line.group(1)}" in str(parity.explain(f, X, backends=["onnx"]))
    assert repr(parity.compile(_fn, backend="onnx")) == "<parity.compile of _fn: backend=onnx, device=cpu>"
    assert repr(parity.compile(torch.nn.Linear(2, 2), backend="onnx")) == \
        "<parity.compile of Linear: backend=onnx, device=cpu>"


def test_a_candidate_known_to_compile_slowly_is_not_raced(planted):
    slow = planted("planted_slow", compile_s=0.3)
    options = parity.AutoOptions(budget_s=0.2, candidates=("onnx", "planted_slow"))
    first = parity.compile(_fn, auto=options)
    first(X)  # nothing is known yet: both compile, and planted_slow's 0.3 s is measured
    assert slow.compiles == 1 and _choice(first)[1]["planted_slow"].status != "dropped"
    auto_compile_times.reset()  # a new process: the disk cache keeps the measured times
    second = parity.compile(lambda x: torch.relu(x * 3 + 1) - x, auto=options)  # a larger graph
    assert second(X).tolist() == torch.relu(X * 3 + 1).sub(X).tolist()
    choice, by_name = _choice(second)
    assert slow.compiles == 1 and choice.choice == "onnx"
    assert by_name["planted_slow"].status == "dropped"
    why = re.fullmatch(r"not raced: it took (\d+\.\d\d) s to compile a graph no larger than this one, more than "
                       r"the 0\.\d\d s left of auto's budget \(AutoOptions\(budget_s=0\.2\)\)",
                       by_name["planted_slow"].why)
    assert why and float(why.group(1)) >= 0.3


def test_a_candidate_whose_declared_prior_exceeds_the_budget_is_not_compiled(planted, tmp_path):
    """Nothing measured yet: a backend's declared cold-compile prior orders the candidates and
    leaves out one that would not fit what is left of the budget; explain says why."""
    costly = planted("planted_costly")
    costly.compile_priors = (CompilePrior("cpu", per_graph_s=1000.0, per_node_s=1.0, basis="planted"),)
    options = parity.AutoOptions(budget_s=60, candidates=("planted_costly", "onnx"))  # costly listed first
    f = parity.compile(_fn, auto=options, cache_dir=tmp_path)
    assert f(X).tolist() == [0.0, 0.0, 1.0, 3.0]
    choice, by_name = _choice(f)
    assert costly.compiles == 0 and (choice.choice, choice.source) == ("onnx", "the only one compiled within the budget")
    why = re.fullmatch(r"not raced: its declared cold-compile prior is (\d+\.\d\d) s for a graph of (\d+) nodes "
                       r"\(no compile of it measured yet\), more than the (\d+\.\d\d) s left of auto's budget "
                       r"\(AutoOptions\(budget_s=60\)\)", by_name["planted_costly"].why)
    assert why, by_name["planted_costly"].why
    assert float(why.group(1)) == pytest.approx(1000.0 + int(why.group(2)))
    assert re.search(r"planted_costly +dropped .*declared cold-compile prior", str(parity.explain(f, X)))


def test_a_larger_budget_races_a_candidate_the_stored_pick_left_out(planted, tmp_path):
    """A pick made while a candidate's cost did not fit the budget is kept on disk for that
    budget only: a process asking for a budget that fits it races it (as
    AutoOptions(budget_s=60) races Inductor, whose cold-compile prior exceeds the default 10 s)."""
    costly = planted("planted_costly")
    costly.compile_priors = (CompilePrior("cpu", per_graph_s=100.0, per_node_s=0.0, basis="planted"),)
    small = parity.AutoOptions(budget_s=60, candidates=("planted_costly", "onnx"))
    parity.compile(_fn, auto=small, cache_dir=tmp_path)(X)
    assert costly.compiles == 0
    auto._CHOICES.clear()  # a new process: only the disk remembers
    compiled_graph.reset_caches()
    again = parity.compile(_fn, auto=small, cache_dir=tmp_path)
    again(X)
    assert _choice(again)[0].source == "cached on disk" and costly.compiles == 0  # the control
    auto._CHOICES.clear()
    larger = parity.compile(_fn, auto=parity.AutoOptions(budget_s=1000, candidates=("planted_costly", "onnx")),
                            cache_dir=tmp_path)
    assert larger(X).tolist() == [0.0, 0.0, 1.0, 3.0]
    assert costly.compiles == 1 and _choice(larger)[1]["planted_costly"].status != "dropped"


def test_a_measured_compile_time_replaces_the_prior(planted, tmp_path):
    """Once a compile of the backend is measured (here: found in the disk cache, as a new
    process would), the measurement decides, not the prior."""
    costly = planted("planted_costly")
    costly.compile_priors = (CompilePrior("cpu", per_graph_s=1000.0, per_node_s=1.0, basis="planted"),)
    auto_compile_times.record_compile("planted_costly", SimpleNamespace(device="cpu", cache_dir=tmp_path), 1, 0.01)
    auto_compile_times.reset()  # a new process: only the disk knows the time
    f = parity.compile(_fn, auto=parity.AutoOptions(budget_s=60, candidates=("planted_costly", "onnx")),
                       cache_dir=tmp_path)
    f(X)
    choice, by_name = _choice(f)
    assert costly.compiles == 1 and by_name["planted_costly"].status != "dropped"
    assert choice.source == "measured"


def test_a_spent_budget_races_no_more_and_keeps_that_pick_off_disk(planted, tmp_path):
    """Nothing known yet and the first compile spends the budget: the next candidate is not
    compiled, and the pick stays in this process; a new process, knowing planted_slow's
    time, compiles onnx first and leaves planted_slow out by its measured cost."""
    slow = planted("planted_slow", compile_s=0.3)
    options = parity.AutoOptions(budget_s=0.2, candidates=("planted_slow", "onnx"))
    first = parity.compile(_fn, auto=options, cache_dir=tmp_path)
    assert first(X).tolist() == [0.0, 0.0, 1.0, 3.0]
    choice, by_name = _choice(first)
    assert (choice.choice, choice.source) == ("planted_slow", "the only one compiled within the budget")
    assert re.fullmatch(r"not raced: auto's budget \(AutoOptions\(budget_s=0\.2\)\) was spent compiling "
                        r"planted_slow \(\d+\.\d\d s\)", by_name["onnx"].why)
    auto._CHOICES.clear()  # a new process: only the disk remembers
    auto_compile_times.reset()
    compiled_graph.reset_caches()
    later = parity.compile(_fn, auto=options, cache_dir=tmp_path)
    later(X)
    choice, by_name = _choice(later)
    assert choice.choice == "onnx" and slow.compiles == 1
    assert by_name["planted_slow"].why.startswith("not raced: it took ")


def test_candidates_are_warmed_up_before_they_are_timed(planted):
    counted = planted("planted_counted")
    f = parity.compile(_fn, auto=parity.AutoOptions(budget_s=60, candidates=("planted_counted", "onnx")))
    f(X)
    timed = len(_choice(f)[1]["planted_counted"].times_s)
    assert timed >= 1
    assert counted.runs == 1 + 2 + timed  # the check run, two warm-up runs, the timed runs


_CANDIDATES = ("onnx", "reference")  # none imports JAX: the second process starts faster
_SECOND_PROCESS = textwrap.dedent(f"""
    import json, sys, torch, parity
    from parity.frontend import auto, compiled_graph
    compiles = []
    real = auto.compiled_executable
    def counting(graph, backend, *rest, **options):
        compiles.append(backend.name)
        return real(graph, backend, *rest, **options)
    auto.compiled_executable = counting
    f = parity.compile(lambda x: torch.relu(x * 2 + 1), auto=parity.AutoOptions(candidates={_CANDIDATES!r}))
    assert f(torch.tensor([-2.0, 1.0])).tolist() == [0.0, 3.0]
    (choice,) = parity.auto_choices(f)
    print(json.dumps({{"compiles": compiles, "choice": choice.choice, "source": choice.source,
                      "timed": [c.name for c in choice.candidates if c.times_s],
                      "backend_compiles": compiled_graph.STATS["backend_compiles"]}}))
""")


def test_a_second_process_reuses_the_pick_without_racing(planted, tmp_path, monkeypatch, capsys):
    """The first run is this process (the same code, so the same source lines in the IR's
    hash), the second a new one; they share only the cache directory."""
    monkeypatch.setenv("PARITY_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(auto, "compiled_executable", auto.compiled_executable)  # the script replaces it
    exec(builtins.compile(_SECOND_PROCESS, "<string>", "exec"), {})
    first = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert first["source"] == "measured" and sorted(first["timed"]) == sorted(first["compiles"]) == sorted(_CANDIDATES)
    proc = subprocess.run([sys.executable, "-c", _SECOND_PROCESS], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    second = json.loads(proc.stdout.splitlines()[-1])
    assert second == {"compiles": [first["choice"]], "choice": first["choice"], "source": "cached on disk",
                      "timed": [], "backend_compiles": 0 if first["choice"] == "onnx" else 1}  # onnx persists


def test_a_pick_timed_at_another_thread_count_is_not_reused(planted, tmp_path):
    """A race's winner depends on the machine it ran on: a pick stored at one torch thread count
    (or on another CPU) is raced again, not read back."""
    options = parity.AutoOptions(budget_s=60, candidates=("onnx", "reference"))
    first = parity.compile(_fn, backend="auto", auto=options, cache_dir=tmp_path)
    first(X)
    threads = torch.get_num_threads()
    auto._CHOICES.clear()  # a new process: only the disk remembers
    compiled_graph.reset_caches()
    try:
        torch.set_num_threads(threads + 1)
        other = parity.compile(_fn, backend="auto", auto=options, cache_dir=tmp_path)
        assert other(X).tolist() == [0.0, 0.0, 1.0, 3.0]
        assert _choice(other)[0].source == "measured"
    finally:
        torch.set_num_threads(threads)
    auto._CHOICES.clear()
    compiled_graph.reset_caches()
    same = parity.compile(_fn, backend="auto", auto=options, cache_dir=tmp_path)
    same(X)
    assert _choice(same)[0].source == "cached on disk"
