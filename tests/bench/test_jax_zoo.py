"""``parity bench --jax`` (bench/jax_zoo.py): JAX programs under parity.jax.jit beside jax.jit,
each candidate checked against jax.jit before it is timed, as the user calls it."""

from __future__ import annotations

import jax
import pytest

import parity.jax
from parity.bench import cli
from parity.bench.jax_zoo import measure, ratios, table
from parity.bench.report import jax_markdown


def test_a_program_is_timed_on_jax_jit_and_each_backend_that_matches_it():
    rows = measure("mlp", "forward", ["xla", "reference"], quick=True)
    by = {r.candidate: r for r in rows}
    assert list(by) == ["jax.jit", "parity[xla]", "parity[reference]"]
    for row in rows:
        assert row.first_call_s > 0 and row.steady_us > 0 and not row.note
    markdown = jax_markdown([vars(r) for r in rows])
    assert "| mlp forward | " in markdown and "geometric mean of the ratios: parity[xla]" in markdown
    assert len(ratios([vars(r) for r in rows], "parity[xla]")) == 1


def test_a_candidate_off_jax_jit_is_reported_and_not_timed(monkeypatch):
    real = parity.jax.jit

    def off_by_one_on_reference(fun, *, backend, **kwargs):
        compiled = real(fun, backend=backend, **kwargs)
        if backend != "reference":
            return compiled
        return lambda *args: jax.tree_util.tree_map(lambda leaf: leaf + 1, compiled(*args))

    monkeypatch.setattr(parity.jax, "jit", off_by_one_on_reference)
    rows = {r.candidate: r for r in measure("mlp", "forward", ["xla", "reference"], quick=True)}
    assert rows["parity[reference]"].note.startswith("wrong: output 0 is off jax.jit's by 1")
    assert rows["parity[reference]"].steady_us is None
    assert rows["parity[xla]"].steady_us > 0
    assert "wrong: output 0" in table([vars(r) for r in rows.values()])[2]


def test_an_unknown_jax_model_is_a_usage_error_that_lists_them(capsys):
    import argparse

    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    with pytest.raises(SystemExit) as exit_:
        cli.run(parser.parse_args(["--jax", "mlp,resnet9000", "--backends", "xla"]))
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "unknown name(s) ['resnet9000']" in err and "JAX models: ['mlp', 'cnn', 'transformer_lm'" in err
