"""``parity bench --jax``: JAX programs under ``parity.jax.jit`` on each backend, against ``jax.jit``.

The programs are the JAX zoo's (:mod:`parity.conformance.jax_zoo`: plain-JAX MLP, CNN and
transformer LM; Flax NNX CNN with BatchNorm and Dropout, ViT, VAE, LSTM; a Flax Linen
transformer), each model's forward pass, ``value_and_grad`` of its loss and one optax step.
Each candidate is called as a user calls it: the same pytrees ``jax.jit`` gets, ``jax.Array``s
back, ready (``jax.block_until_ready``). Per program:

- ``jax.jit``'s first call (trace, compile, run) and steady time per call;
- per backend, ``parity.jax.jit(fun, backend=NAME)``: its first call, cold (no disk cache, the
  in-process executable cache emptied first); its outputs against ``jax.jit``'s by the rule
  ``backend="auto"`` holds candidates to (:func:`parity.frontend.jax.auto.mismatch_past_float64`,
  the float64 second chance included): a
  failing or wrong candidate is reported, not timed; Triton's interpreter (no GPU) is checked,
  not timed; ``auto`` runs last and records its pick (its first call is not cold: the backends
  keep, in their own caches, the executables the rows before it compiled);
- steady times from interleaved rounds (:func:`.measure.time_interleaved`): medians of per-call
  times, every candidate in the same process and rounds as ``jax.jit``.

Example::

    $ parity bench --jax all --backends xla,onnx,inductor,auto --markdown bench/results/jax_zoo.md
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

from .measure import TimingPlan, median, time_interleaved

# Per program: rounds of ~50 ms batches; a candidate gets at most budget_s of timing.
PLANS = {"full": TimingPlan(rounds=15, batch_s=0.05, budget_s=3.0), "quick": TimingPlan(rounds=3, batch_s=0.01,
                                                                                          budget_s=0.3)}


@dataclass
class JaxRow:
    model: str
    stage: str
    candidate: str  # "jax.jit" or "parity[NAME]"
    first_call_s: float | None = None
    steady_us: float | None = None
    note: str = ""  # why it was not timed, or auto's pick


def measure(model: str, stage: str, backends: Sequence[str], *, quick: bool = False,
            interpreted: Sequence[str] = ("triton",)) -> list[JaxRow]:
    """One program on jax.jit and on ``parity.jax.jit`` with each of ``backends`` (``auto`` too)."""
    import jax

    import parity.jax
    from parity.conformance.jax_zoo import program
    from parity.frontend.executables import reset_caches
    from parity.frontend.jax.auto import float64_run, mismatch_past_float64

    fun, args = program(model, stage)
    jitted = jax.jit(fun)
    anchor = JaxRow(model, stage, "jax.jit")
    start = time.perf_counter()
    want = [_plain(leaf) for leaf in jax.tree_util.tree_leaves(jax.block_until_ready(jitted(*args)))]
    anchor.first_call_s = time.perf_counter() - start
    rows, calls = [anchor], {"jax.jit": lambda: jax.block_until_ready(jitted(*args))}
    exact_outputs: list = []

    def exact():  # the float64 run, made once, when a candidate's output is off jax.jit's
        if not exact_outputs:
            exact_outputs.append(float64_run(fun, args))
        return exact_outputs[0]

    for backend in sorted(backends, key=lambda b: b == "auto"):  # auto last: it reuses nothing named before
        row = JaxRow(model, stage, f"parity[{backend}]")
        rows.append(row)
        reset_caches()
        compiled = parity.jax.jit(fun, backend=backend, cache_dir=False)
        start = time.perf_counter()
        try:
            got = [_plain(leaf) for leaf in jax.tree_util.tree_leaves(jax.block_until_ready(compiled(*args)))]
        except Exception as exc:  # noqa: BLE001 - a backend that cannot run the program is a row, not a crash
            row.note = f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
            continue
        row.first_call_s = time.perf_counter() - start
        wrong = mismatch_past_float64(got, want, exact)
        if wrong:
            row.note = f"wrong: {wrong}"
            continue
        if backend == "auto":
            row.note = "picked " + ", ".join(sorted({c.backend for c in compiled.cache.values()}))
        if backend in interpreted:
            row.note = "checked; an interpreter on CPU, not timed"
            continue
        calls[row.candidate] = lambda compiled=compiled: jax.block_until_ready(compiled(*args))
    times = time_interleaved(calls, PLANS["quick" if quick else "full"])
    for row in rows:
        if row.candidate in times:
            row.steady_us = median(times[row.candidate]) * 1e6
    return rows


def _plain(leaf):
    """A leaf as NumPy; a PRNG key array as its key data (what the contract compares)."""
    import jax
    import numpy as np

    if jax.dtypes.issubdtype(getattr(leaf, "dtype", np.float32), jax.dtypes.prng_key):
        return np.asarray(jax.random.key_data(leaf))
    return np.asarray(leaf)


def run_jax_zoo(models: Sequence[str], backends: Sequence[str], *, quick: bool = False,
                stages: Sequence[str] | None = None, log: Callable[[str], None] = print) -> list[dict]:
    """Every stage of every model in ``models``; the rows as dicts (the JSON record's ``jax``)."""
    from parity.conformance.jax_zoo import STAGES

    rows: list[JaxRow] = []
    for model in models:
        for stage in stages or STAGES:
            new = measure(model, stage, backends, quick=quick)
            rows += new
            log("\n".join(table([asdict(r) for r in new])[2:]))
    return [asdict(r) for r in rows]


def table(rows: Sequence[dict]) -> list[str]:
    """Markdown: a line per program, a column per candidate (steady µs per call, × jax.jit's)."""
    candidates = list(dict.fromkeys(r["candidate"] for r in rows))
    lines = ["| program | " + " | ".join(candidates) + " |", "| --- |" + " --- |" * len(candidates)]
    programs = list(dict.fromkeys((r["model"], r["stage"]) for r in rows))
    for model, stage in programs:
        mine = {r["candidate"]: r for r in rows if (r["model"], r["stage"]) == (model, stage)}
        anchor = mine.get("jax.jit", {}).get("steady_us")
        cells = [_cell(mine.get(c), anchor) for c in candidates]
        lines.append(f"| {model} {stage} | " + " | ".join(cells) + " |")
    return lines


def first_calls(rows: Sequence[dict]) -> list[str]:
    """Markdown: each candidate's first call (cold compile included), seconds."""
    candidates = list(dict.fromkeys(r["candidate"] for r in rows))
    lines = ["| program | " + " | ".join(candidates) + " |", "| --- |" + " --- |" * len(candidates)]
    for model, stage in dict.fromkeys((r["model"], r["stage"]) for r in rows):
        mine = {r["candidate"]: r for r in rows if (r["model"], r["stage"]) == (model, stage)}
        cells = ["" if mine.get(c, {}).get("first_call_s") is None else f"{mine[c]['first_call_s']:.2f}"
                 for c in candidates]
        lines.append(f"| {model} {stage} | " + " | ".join(cells) + " |")
    return lines


def ratios(rows: Sequence[dict], candidate: str) -> list[float]:
    """``candidate``'s steady time over jax.jit's, per program where both were timed."""
    out = []
    for model, stage in dict.fromkeys((r["model"], r["stage"]) for r in rows):
        mine = {r["candidate"]: r for r in rows if (r["model"], r["stage"]) == (model, stage)}
        anchor, got = mine.get("jax.jit", {}).get("steady_us"), mine.get(candidate, {}).get("steady_us")
        if anchor and got:
            out.append(got / anchor)
    return out


def _cell(row: dict | None, anchor: float | None) -> str:
    if row is None:
        return ""
    if row["steady_us"] is None:
        return row["note"]
    ratio = f" ({row['steady_us'] / anchor:.2f}×)" if anchor and row["candidate"] != "jax.jit" else ""
    pick = f", {row['note']}" if row["note"] else ""
    return f"{row['steady_us']:.1f} µs{ratio}{pick}"
