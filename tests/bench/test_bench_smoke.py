"""Smoke test of the benchmark: it runs, writes the documented JSON, and never times a wrong
candidate. No assertion here is about time."""

import json

import numpy as np
import torch

from parity.bench.candidates import Candidate, TorchEager
from parity.bench.cli import main
from parity.bench.measure import check_outputs
from parity.bench.suite import run_suite


def test_quick_tiny_run_writes_json_and_chart(tmp_path, capsys):
    out, chart = tmp_path / "bench.json", tmp_path / "bench.png"
    # auto alone: it compiles and races the installed backends, xla among them (each candidate
    # costs a fresh process for its cold compile)
    assert main(["--quick", "--workloads", "tiny", "--anchors", "eager", "--backends", "auto",
                 "--json", str(out), "--chart", str(chart)]) == 0
    record = json.loads(out.read_text())
    assert record["quick"] is True
    assert record["programs"] == []  # naming workloads runs no program (bench/programs.py)
    assert record["threads"]["threads"] == record["threads"]["torch_threads"] >= 1
    assert record["machine"]["matmul_gflops"] > 0 and record["machine"]["copy_gbs"] > 0
    assert [c["label"] for c in record["candidates"]] == ["torch eager", "parity[auto]"]
    (tiny,) = record["workloads"]
    assert tiny["name"] == "tiny" and tiny["roofline_s"] is None
    assert tiny["best_anchor"] == "torch eager"
    for label in ("torch eager", "parity[auto]"):
        result = tiny["results"][label]
        assert result["status"] == "ok", result
        assert len(result["times_s"]) >= 3 and result["median_s"] == sorted(result["times_s"])[len(result["times_s"]) // 2]
    assert tiny["results"]["torch eager"]["ratio"] == 1.0
    # cold compile ran for the one workload, on every candidate (auto too), in fresh processes
    assert [(c["workload"], c["candidate"], c["status"]) for c in record["cold"]] == [
        ("tiny", "torch eager", "ok"), ("tiny", "parity[auto]", "ok")]
    assert all(c["compile_s"] >= 0 and c["peak_rss_mb"] >= 0 for c in record["cold"])
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    printed = capsys.readouterr().out
    assert "parity[auto]" in printed and "cold compile" in printed
    # the saved record replays without running anything, also as Markdown
    md = tmp_path / "bench.md"
    assert main(["--from-json", str(out), "--markdown", str(md)]) == 0
    rows = md.read_text().splitlines()
    assert rows[0] == "| workload | roofline | torch eager | parity[auto] |"
    assert rows[2].startswith("| tiny (f32[4]) | n/a | ") and "(×1.00)" in rows[2]


class OffByOne(TorchEager):
    key, label, anchor = "off-by-one", "off by one", False

    def prepare(self, case, threads):
        call = super().prepare(case, threads)
        return lambda: call() + 1


class Broken(Candidate):
    key, label = "broken", "broken"

    def prepare(self, case, threads):
        raise RuntimeError("no kernel for this\nsecond line")


def test_wrong_and_failing_candidates_are_flagged_not_timed():
    record = run_suite(["tiny"], [TorchEager(), OffByOne(), Broken()], quick=True, log=lambda _: None)
    results = record["workloads"][0]["results"]
    assert results["torch eager"]["status"] == "ok"
    wrong = results["off by one"]
    assert wrong["status"] == "wrong" and "median_s" not in wrong and "ratio" not in wrong
    assert wrong["reason"] == "output 0: 4 of 4 elements off (max abs error 1, first at [0]: 2 vs 1)"
    broken = results["broken"]
    assert broken == {"anchor": False, "status": "error", "reason": "RuntimeError: no kernel for this"}


def test_check_outputs_uses_rtol_with_an_output_scaled_floor():
    want = [np.array([1000.0, 1e-3], np.float32)]
    # 1e-4 relative to the largest element is allowed everywhere ...
    assert check_outputs([np.array([1000.09, 0.09], np.float32)], want) is None
    # ... one step beyond is not
    assert check_outputs([np.array([1000.0, 0.2], np.float32)], want).startswith("output 0: 1 of 2 elements off")
    assert check_outputs([np.array([np.nan, 1e-3], np.float32)], want) is not None
    assert check_outputs([np.zeros(3, np.float32)], want) == "output 0 has shape [3], expected [2]"
    assert check_outputs([np.zeros(2, np.float64)], want) == "output 0 is float64, expected float32"
    assert check_outputs([torch.ones(1).numpy()] * 2, want) == "2 outputs, expected 1"


def test_the_workloads_help_names_every_workload_in_order():
    import argparse

    from parity.bench.cli import add_arguments
    from parity.bench.workloads import WORKLOADS

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    (action,) = [a for a in parser._actions if a.dest == "workloads"]
    named = action.help.partition("from: ")[2].partition(" (default")[0].split(", ")
    assert named == list(WORKLOADS)
