"""The per-call overhead benchmark (bench/overhead.py): sampling and the report. No timing asserted."""

from parity.bench.overhead import table, time_short_batches


def test_short_batches_give_rounds_times_batches_samples_per_candidate():
    counts = {"a": 0, "b": 0}

    def call(name):
        counts[name] += 1

    samples = time_short_batches({"a": lambda: call("a"), "b": lambda: call("b")}, rounds=3, batches=2, warmup=5)
    assert {k: len(v) for k, v in samples.items()} == {"a": 6, "b": 6}
    assert all(t >= 0 for v in samples.values() for t in v)
    assert counts["a"] >= 5 + 20 + 6 and counts["b"] >= 5 + 20 + 6  # warm-up, sizing, 6 batches of >= 1


def test_table_splits_each_backend_above_the_floor():
    us = 1e-6
    times = {"aot wrapper": [10 * us] * 3, "parity, NumPy exe": [15 * us] * 3, "parity[xla]": [40 * us] * 3,
             "xla executable": [12 * us] * 3, "parity[onnx]": [20 * us] * 3}
    text = table(times, ["xla", "onnx"])
    rows = {line.split()[0]: line.split() for line in text.splitlines() if line.split()}
    assert rows["xla"][1:] == ["30.0", "5.0", "25.0", "12.0"]  # above floor, frontend, exe in place, alone
    assert rows["onnx"][1:] == ["10.0", "5.0", "5.0", "?"]
    assert "frontend's own work is parity's path with a NumPy executable (5.0 µs)" in text
