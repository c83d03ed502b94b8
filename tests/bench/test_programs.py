"""bench/programs.py: a program runs whole on each candidate, is checked against eager before it is
timed, and its Dynamo captures are counted per candidate."""

import parity
from parity.bench.programs import PROGRAMS, run_program


def _off_by_a_little(model):
    def call(x):
        return model(x) + 1e-2

    return call


def test_the_serving_program_counts_captures_and_never_times_a_wrong_candidate():
    candidates = {"torch eager": lambda m: m, "parity[onnx]": lambda m: parity.compile(m, backend="onnx"),
                  "off by 1e-2": _off_by_a_little}
    entry = run_program("serving", candidates, quick=True, repeats=1, log=lambda line: None)
    case = PROGRAMS["serving"].build(quick=True)
    assert entry["distinct_sizes"] == len(case.sizes) > 10
    eager, onnx, wrong = (entry["results"][k] for k in candidates)
    assert eager["status"] == "ok" and eager["captures"] == 0 and eager["anchor"]
    # the first batch size static, then one symbolic capture (and size 1, which Dynamo specializes)
    assert onnx["status"] == "ok" and onnx["captures"] <= 3 and not onnx["anchor"]
    _, samples = case.setup(lambda m: m)()
    assert onnx["throughput"] == samples / onnx["median_s"]
    assert wrong["status"] == "wrong" and wrong["reason"].startswith("output 0: max abs difference 0.01")
    assert wrong["median_s"] is None and "throughput" not in wrong


def test_the_programs_help_names_every_program_in_order():
    import argparse

    from parity.bench.cli import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    (action,) = [a for a in parser._actions if a.dest == "programs"]
    named = action.help.partition("from: ")[2].partition(" (default")[0].split(", ")
    assert named == list(PROGRAMS)


def test_the_compilers_once_per_process_costs_are_paid_before_any_first_run_is_timed(monkeypatch):
    from parity.bench import programs

    order = []
    monkeypatch.setattr(programs, "warm_compilers", lambda: order.append("warm"))

    def eager(model):
        order.append("candidate compiles")
        return model

    run_program("serving", {"torch eager": eager}, quick=True, repeats=1, log=lambda line: None)
    assert order[:2] == ["warm", "candidate compiles"]


def test_the_warm_up_runs_inductors_vector_isa_probe():
    from torch._inductor.cpu_vec_isa import valid_vec_isa_list

    from parity.bench.programs import warm_compilers

    valid_vec_isa_list.cache_clear()
    warm_compilers.__wrapped__()
    assert valid_vec_isa_list.cache_info().currsize == 1  # probed: the first torch.compile will not pay it
