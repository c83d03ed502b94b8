"""bench/measure.py's interleaved timing loop: rounds per candidate and the CPU-time option."""

import time

from parity.bench.measure import TimingPlan, time_interleaved

PLAN = TimingPlan(rounds=3, batch_s=0.003, budget_s=1.0, min_rounds=3, warmup=1)


def test_every_candidate_gets_one_time_per_round_in_wall_and_cpu():
    counts = {"a": 0, "b": 0}

    def call(name):
        counts[name] += 1

    cpu = {}
    wall = time_interleaved({"a": lambda: call("a"), "b": lambda: call("b")}, PLAN, cpu=cpu)
    assert {k: len(v) for k, v in wall.items()} == {"a": 3, "b": 3}
    assert {k: len(v) for k, v in cpu.items()} == {"a": 3, "b": 3}
    assert counts["a"] >= 1 + 1 + 3 and counts["b"] >= 1 + 1 + 3  # warm-up, sizing, 3 batches of >= 1


def test_cpu_time_leaves_out_time_the_process_sleeps():
    """A call that sleeps 2 ms costs at least 2 ms of wall time and almost no CPU time."""
    cpu = {}
    wall = time_interleaved({"sleep": lambda: time.sleep(0.002)}, PLAN, cpu=cpu)
    assert min(wall["sleep"]) >= 0.002
    assert max(cpu["sleep"]) < min(wall["sleep"]) / 2
