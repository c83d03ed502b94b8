"""Programs, not kernels: loops whose shapes change, measured end to end against the anchors.

A workload (bench/workloads.py) is one call at one shape. A *program* is what a user runs: a
service whose batch size changes every request, a generation loop whose KV cache grows, a
training step with its optimizer. Each candidate compiles the program's function its own way
(``compile_with``: torch eager as it is, ``torch.compile`` with Inductor, ``parity.compile`` on a
backend, every one at its default ``dynamic``), runs the whole program once (its *first run*,
compiles included; the compilers' once-per-process costs are paid before any first run,
:func:`warm_compilers`), checks the outputs against eager's, then runs it again ``repeats`` times; the
median of those gives the throughput in the program's unit (samples/s, tokens/s, steps/s).
Dynamo's captures are counted per candidate (``unique_graphs``), with Dynamo's caches reset
before each one: automatic dynamic remembers changed dims per code object, so one candidate
would otherwise start where the last left off.

Example::

    >>> program = PROGRAMS["serving"].build(quick=True)
    >>> outputs, samples = program.setup(lambda m: m)()   # torch eager: the model as it is
    >>> outputs[0].shape[0] == samples, len(program.sizes) > 10
    (True, True)
"""

from __future__ import annotations

import functools
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch


@dataclass(frozen=True)
class ProgramCase:
    """One program at one size. ``setup(compile_with)`` builds fresh state (the same seed for every
    candidate), compiles what the program compiles with ``compile_with``, and returns ``run()``,
    which runs the whole program and returns (outputs to check, units of work done)."""

    setup: Callable[[Callable], Callable[[], tuple[list[torch.Tensor], int]]]
    unit: str
    shape: str
    sizes: tuple[int, ...] = ()  # the distinct shapes a run meets, for captures per size
    rtol: float = 1e-4
    atol: float = 1e-5


@dataclass(frozen=True)
class Program:
    name: str
    description: str
    build: Callable[..., ProgramCase]
    takes_decoder: bool = False  # build(quick, decoder=...): one of bench/decode.py's DECODERS


# -- serving: one model, batch sizes drawn at random from 1..64 -------------------------------


def _serving(quick: bool = False) -> ProgramCase:
    requests = 48 if quick else 200
    rng = random.Random(0)
    sizes = [rng.randint(1, 64) for _ in range(requests)]
    torch.manual_seed(0)
    batches = [torch.randn(b, 256) for b in sizes]

    def setup(compile_with):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256),
                                    torch.nn.LayerNorm(256)).eval()
        compiled = compile_with(model)

        def run():
            with torch.no_grad():
                outputs = [compiled(x) for x in batches]
            return [torch.cat(outputs)], sum(sizes)

        return run

    return ProgramCase(setup, unit="samples", shape=f"MLP 256→1024→256 + LayerNorm, {requests} requests of 1–64",
                       sizes=tuple(sorted(set(sizes))))


# -- decode: generate() with a compiled forward, the KV cache growing or static (bench/decode.py) --


def _decode(cache: str) -> Callable[..., ProgramCase]:
    def build(quick: bool = False, decoder: str = "gpt2") -> ProgramCase:
        from .decode import PROMPT, decode_program

        program, tokens, shape = decode_program(cache, quick, decoder)

        def setup(compile_with):
            generate = program(compile_with)
            return lambda: ([generate()], tokens)

        # the shapes a run meets: prefill and every cache length (dynamic), or prefill and one step (static)
        sizes = tuple(range(PROMPT, PROMPT + tokens)) if cache == "dynamic" else (PROMPT, 1)
        return ProgramCase(setup, unit="tokens", shape=shape, sizes=sizes)

    return build


PROGRAMS: dict[str, Program] = {
    "serving": Program("serving", "a service's varying batch: one compiled model, batch sizes drawn from 1–64",
                       _serving),
    "decode_dynamic": Program("decode_dynamic", "a decoder LM's generate(), greedy, dynamic KV cache (grows per token)",
                              _decode("dynamic"), takes_decoder=True),
    "decode_static": Program("decode_static", "a decoder LM's generate(), greedy, static KV cache", _decode("static"),
                             takes_decoder=True),
}


# -- candidates: how each compiles the program's function -----------------------------------


def program_candidates(backends: Sequence[str]) -> dict[str, Callable[[Any], Any]]:
    """Column label -> compile_with. Anchors first: torch eager, torch.compile (Inductor)."""
    import parity

    found: dict[str, Callable[[Any], Any]] = {"torch eager": lambda fn: fn,
                                              "torch.compile": lambda fn: torch.compile(fn)}
    for name in backends:
        found[f"parity[{name}]"] = lambda fn, name=name: parity.compile(fn, backend=name)
    return found


ANCHOR_LABELS = ("torch eager", "torch.compile")


@dataclass
class ProgramResult:
    status: str = "ok"  # ok / wrong / error
    reason: str = ""
    first_run_s: float | None = None
    median_s: float | None = None
    captures: int | None = None
    times_s: list[float] = field(default_factory=list)


def run_program(name: str, candidates: dict[str, Callable], *, quick: bool = False, repeats: int = 5,
                log: Callable[[str], None] = print, decoder: str | None = None) -> dict:
    """Run program ``name`` on every candidate; the JSON entry the report reads. ``decoder`` picks
    the model of a decode program (bench/decode.py: DECODERS; default GPT-2)."""
    program = PROGRAMS[name]
    if decoder is not None and not program.takes_decoder:
        raise ValueError(f"program {name!r} has no decoder model to choose; only the decode programs do "
                         f"({', '.join(p.name for p in PROGRAMS.values() if p.takes_decoder)})")
    from torch._dynamo.utils import counters

    case = program.build(quick=quick, **({"decoder": decoder} if decoder else {}))
    want, _ = case.setup(lambda fn: fn)()
    warm_compilers()
    entry = {"name": name, "description": program.description, "shape": case.shape, "unit": case.unit,
             "distinct_sizes": len(case.sizes), "results": {}}
    if decoder:
        entry["decoder"] = decoder
    for label, compile_with in candidates.items():
        result = ProgramResult()
        torch._dynamo.reset()
        counters.clear()
        try:
            run = case.setup(compile_with)
            t0 = time.perf_counter()
            got, units = run()
            result.first_run_s = time.perf_counter() - t0
            result.captures = counters["stats"]["unique_graphs"]
            result.reason = _mismatch(got, want, case)
            result.status = "wrong" if result.reason else "ok"
            if result.status == "ok":
                for _ in range(repeats):
                    t0 = time.perf_counter()
                    run()
                    result.times_s.append(time.perf_counter() - t0)
                result.median_s = statistics.median(result.times_s)
                result.captures = counters["stats"]["unique_graphs"]  # later runs must not capture again
        except Exception as exc:  # noqa: BLE001 - a failing candidate is reported, never timed
            result.status, result.reason = "error", f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
        row = vars(result) | {"anchor": label in ANCHOR_LABELS}
        if result.median_s:
            row["throughput"] = units / result.median_s
        entry["results"][label] = row
        log(f"{name}: {label}: {result.status}" + (f" ({result.reason})" if result.reason else
                                                   f", first run {result.first_run_s:.2f} s, {result.captures} "
                                                   f"captures, {row.get('throughput', 0):.0f} {case.unit}/s"))
    torch._dynamo.reset()
    anchors = {k: r["throughput"] for k, r in entry["results"].items() if r["anchor"] and r.get("throughput")}
    compiled_first = entry["results"].get("torch.compile", {}).get("first_run_s")
    for row in entry["results"].values():
        if anchors and row.get("throughput"):
            row["ratio_to_best_anchor"] = max(anchors.values()) / row["throughput"]  # time ratio: < 1 is faster
        if compiled_first and row.get("first_run_s") is not None and row["status"] == "ok":
            # issue 36: the first generate() costs at most 2x torch.compile's first one
            row["first_run_vs_torch_compile"] = row["first_run_s"] / compiled_first
    return entry


@functools.cache  # once per process
def warm_compilers() -> None:
    """Pay the compilers' once-per-process costs before any first run is timed: Dynamo's and
    Inductor's imports, and Inductor's probe of the CPU's vector ISA (a few small ``g++`` builds,
    about 7 s on an empty cache). Otherwise they fall on whichever candidate compiles first (the
    torch.compile anchor), and its first run looks slower next to the candidates after it.
    A machine where Inductor cannot compile is left as it is: its candidates report why."""
    try:
        tiny = torch.compile(lambda x: torch.sin(x) + 1, dynamic=False)
        tiny(torch.ones(3))
    except Exception:  # noqa: BLE001 - a warm-up, not a measurement: each candidate reports its own error
        pass
    finally:
        torch._dynamo.reset()


def _mismatch(got: list[torch.Tensor], want: list[torch.Tensor], case: ProgramCase) -> str:
    if len(got) != len(want):
        return f"{len(got)} outputs, eager gives {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape or g.dtype != w.dtype:
            return f"output {k}: {g.dtype}{list(g.shape)}, eager {w.dtype}{list(w.shape)}"
        if not g.is_floating_point():  # generated tokens: equal, or wrong
            if not torch.equal(g, w):
                return f"output {k}: {int((g != w).sum())} of {w.numel()} elements differ"
            continue
        if not np.allclose(g.detach().numpy(), w.detach().numpy(), rtol=case.rtol, atol=case.atol, equal_nan=True):
            return f"output {k}: max abs difference {(g - w).abs().max().item():.3g}"
    return ""
