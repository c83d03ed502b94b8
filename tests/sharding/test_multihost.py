"""Two processes on loopback, 4 simulated CPU devices each, run the sharded steps as one 8-device mesh."""

from __future__ import annotations

from .conftest import finish, free_port, report_of, start
from .test_devices import block_bound


def test_two_processes_run_the_same_sharded_steps():
    port = str(free_port())
    results = finish([start(["0", port], devices=4), start(["1", port], devices=4)])
    for code, output in results:
        assert code == 0, output[-4000:]
    first, second = (report_of(output) for _, output in results)
    # Every process holds the whole results (gathered from both): the same bits on both.
    assert first == second
    mlp, block = first["mlp"], first["block"]
    assert mlp["bitwise_eager"] and mlp["max_diff_eager"] == 0.0  # exact, as on one process
    assert set(mlp["collectives"]) == {"all-reduce"}
    assert block["err_sharded"] <= block_bound(block["max_abs_oracle"])
    assert {"all-reduce", "all-gather"} <= set(block["collectives"])
