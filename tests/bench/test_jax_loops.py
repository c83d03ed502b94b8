"""The JAX loop benchmark (bench/jax_loops.py) runs, counts the unrolled IR, and never times a
candidate whose outputs are off jax.jit's. No assertion here is about time."""

import numpy as np

from parity.bench import jax_loops


def capture(program: jax_loops.Program):
    """The program's IR graph, as the benchmark counts it."""
    import jax

    from parity.frontend.jax import capture

    leaves, tree = jax.tree_util.tree_flatten(program.args)
    return capture(lambda *ls: program.fun(*jax.tree_util.tree_unflatten(tree, ls)), *leaves).nodes


def test_a_two_step_lstm_on_the_reference_and_as_an_onnx_scan_is_measured_beside_jax_jit(tmp_path, monkeypatch):
    monkeypatch.setenv("PARITY_CACHE_DIR", "")  # main turns the disk cache off; restored after the test
    out = tmp_path / "loops.md"
    assert jax_loops.main(["--workloads", "lstm", "--sweep", "2", "--backends", "reference", "--forward-only",
                           "--ort-scan", "--quick", "--markdown", str(out)]) == 0
    rows = [line.strip("| ").split(" | ") for line in out.read_text().splitlines()[2:]]
    assert [r[:2] for r in rows] == [["lstm2 forward", "jax.jit"], ["lstm2 forward", "reference"],
                                     ["lstm2 forward", "ort Scan (by hand)"]]
    assert rows[0][2] == rows[2][2] == "" and int(rows[1][2]) == len(capture(jax_loops.lstm_programs(2)[0]))
    assert rows[0][6] == "1.0×"
    assert rows[1][6].endswith("×") and rows[2][6].endswith("×")  # checked against jax.jit, then timed


def test_a_candidate_off_jax_jit_is_reported_and_not_timed(monkeypatch):
    from parity.frontend.jax import run

    compile_graph = run.compile_graph

    def doubled(*args, **kwargs):
        executable = compile_graph(*args, **kwargs)
        return lambda *arrays: [np.asarray(o) * 2 for o in executable(*arrays)]

    monkeypatch.setattr(run, "compile_graph", doubled)
    jax_rows, reference = jax_loops.measure(jax_loops.lstm_programs(1)[0], ["reference"], "quick")
    assert jax_rows.steady_ms is not None
    assert reference.note.startswith("wrong: output 0: 1 of 1 elements off") and reference.steady_ms is None
