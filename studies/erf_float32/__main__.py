"""float32 erf on inductor: how far from float64 erf, and how fast, is parity's formula?

Question: parity[inductor] computes float32 ``erf`` with a formula of float32 kernels
(``_erf_float32`` in backends/inductor/elementwise.py), because Inductor's own vectorized
float32 erf is outside the IR's 4 ULP bound. Is the formula within 2 ULP of float64 erf over
every float32 in [0, 4] *as compiled by Inductor* (whose C++ may contract a·b + c into an
FMA), and what does its kernel cost against the formula before it (kept below, as it was in
git) and against Inductor's own ``torch.erf``?

- ``sweep``: every float32 bit pattern in [0, 4] through ``InductorBackend().compile`` of a
  graph holding one ``erf``, in chunks of 2**24 (the last one padded), against
  ``scipy.special.erf`` in float64; every 7th float32 past 4 up to inf; every 1009th in
  [-4, 0]; and the specials. The error of a result is |got - exact| over the ULP of the
  exact value's binade (2**-149 below the normal range).
- ``time``: the compiled kernels of the old formula, the new one and ``torch.erf`` on a
  64×1024 float32 tensor, and of exact GELU (the IR's gelu, decomposed into erf) with each
  formula against ``torch.compile(F.gelu)``; one thread, interleaved round by round in one
  process; medians of each round's per-call mean.

Run from the repository root: ``python -m studies.erf_float32 sweep`` (1 to 4 minutes on
two cores) and ``python -m studies.erf_float32 time [ROUNDS]``. Results: ``results.md``.
"""

from __future__ import annotations

import math
import os
import statistics
import sys
import time

import numpy as np
import torch
from scipy.special import erf as erf64

from parity.backends.inductor import lowering
from parity.backends.inductor.backend import InductorBackend
from parity.backends.inductor.elementwise import _erf_float32, _horner
from parity.ir import GraphBuilder, f32

CHUNK = 1 << 24

# The formula before this study (git: backends/inductor/elementwise.py at 50d5886), for timing.
_OLD_TAYLOR = (2 / math.sqrt(math.pi) - 1, *(2 / math.sqrt(math.pi) * (-1) ** n / (math.factorial(n) * (2 * n + 1))
                                            for n in range(1, 12)))
_OLD_ERFCX_T = (-0.00011509356717503192, 0.2842314037934257, 0.2648339683339517, 0.3257855038324189,
                -0.04528382674793614, 0.46530005673823693, -0.36932059996875005, 0.059372860626610985,
                0.015304761977925487)


def _old_erf_float32(x):
    s = x * x
    a = torch.clamp(torch.abs(x), max=4.0)
    t = 1.0 / (1.0 + a * 0.5)
    tail = torch.exp(-(a * a)) * _horner(_OLD_ERFCX_T, t, x)
    return torch.where(torch.abs(x) < 1.0, x + x * _horner(_OLD_TAYLOR, s, x), torch.copysign(1.0 - tail, x))


def compiled_erf(n: int, formula=None, name: str = "erf32", op: str = "erf"):
    """parity[inductor]'s compiled kernel for one float32 ``op`` (erf, or gelu, which the
    backend decomposes into erf) over f32[n]; ``formula`` (a function of the float32 tensor)
    replaces the backend's erf rule while it compiles."""
    b = GraphBuilder(name)
    graph = b.build([getattr(b, op)(b.input(f32[n]))])
    saved = lowering.LOWERINGS["erf"]
    if formula is not None:
        lowering.LOWERINGS["erf"] = lambda ctx, x: formula(x)
    try:  # a static graph compiles inside compile(), under the rule chosen
        executable = InductorBackend().compile(graph, "cpu")
    finally:
        lowering.LOWERINGS["erf"] = saved
    return lambda x: executable(x)[0]


def ulps(x: np.ndarray, got: np.ndarray) -> np.ndarray:
    """|got - erf(x)| in ULPs of erf(x)'s binade (float32's), erf(x) in float64."""
    exact = erf64(x.astype(np.float64))
    _, e = np.frexp(np.abs(exact))
    ulp = np.ldexp(1.0, np.maximum(e - 24, -149))
    with np.errstate(invalid="ignore"):
        return np.where(got.astype(np.float64) == exact, 0.0, np.abs(got.astype(np.float64) - exact) / ulp)


def _worst(xs, errs) -> tuple[float, float]:
    i = int(np.argmax(errs))
    return float(errs[i]), float(xs[i])


def sweep() -> None:
    kernel = compiled_erf(CHUNK)
    top = int(np.float32(4.0).view(np.int32))
    split = np.float32(1.1)
    worst = {"[0, 1.1)": (0.0, 0.0), "[1.1, 4]": (0.0, 0.0)}
    for start in range(0, top + 1, CHUNK):
        bits = np.arange(start, min(start + CHUNK, top + 1), dtype=np.int32)
        x = np.zeros(CHUNK, np.float32)
        x[: len(bits)] = bits.view(np.float32)
        got = kernel(torch.from_numpy(x)).numpy()[: len(bits)]
        x = x[: len(bits)]
        err = ulps(x, got)
        for key, mask in (("[0, 1.1)", x < split), ("[1.1, 4]", x >= split)):
            if mask.any():
                w = _worst(x[mask], err[mask])
                worst[key] = max(worst[key], w)
    for key, (e, at) in worst.items():
        print(f"every float32 in {key}: max {e:.3f} ULP at {at!r}")
    past = np.arange(top, int(np.float32(np.inf).view(np.int32)) + 1, 7, dtype=np.int32).view(np.float32)
    neg = -np.arange(0, top + 1, 1009, dtype=np.int32).view(np.float32)
    for key, x in (("every 7th float32 in (4, inf]", past), ("every 1009th float32 in [-4, -0]", neg)):
        e, at = 0.0, 0.0
        for i in range(0, len(x), CHUNK):
            part = np.zeros(CHUNK, np.float32)
            part[: len(x[i:i + CHUNK])] = x[i:i + CHUNK]
            got = kernel(torch.from_numpy(part)).numpy()[: len(x[i:i + CHUNK])]
            e, at = max((e, at), _worst(x[i:i + CHUNK], ulps(x[i:i + CHUNK], got)))
        print(f"{key}: max {e:.3f} ULP at {at!r}")
    specials = np.array([0.0, -0.0, 1e-45, -1e-45, 1e-38, 3e-8, 1.1, np.nextafter(np.float32(1.1), 0), 3.92, 3.97,
                         4.0, np.inf, -np.inf, np.nan], np.float32)
    part = np.zeros(CHUNK, np.float32)
    part[: len(specials)] = specials
    got = kernel(torch.from_numpy(part)).numpy()[: len(specials)]
    want = erf64(specials.astype(np.float64)).astype(np.float32)
    for x, g, w in zip(specials, got, want):
        print(f"erf({x!r}) = {g!r} (float64 erf rounded: {w!r}, signbit {np.signbit(g)})")


def timing(rounds: int) -> None:
    torch.set_num_threads(1)
    x = torch.randn(64, 1024) * 2
    calls = {"old formula": compiled_erf(64 * 1024, _old_erf_float32, "erf_old"),
             "new formula": compiled_erf(64 * 1024, None, "erf_new"),
             "torch.erf (Inductor's)": compiled_erf(64 * 1024, torch.erf, "erf_native"),
             "gelu, old formula": compiled_erf(64 * 1024, _old_erf_float32, "gelu_old", "gelu"),
             "gelu, new formula": compiled_erf(64 * 1024, None, "gelu_new", "gelu"),
             "gelu, torch.compile": torch.compile(torch.nn.functional.gelu)}
    flat = x.reshape(-1)
    reference = _erf_float32(flat)
    assert torch.equal(calls["new formula"](flat).isnan(), reference.isnan())
    per_call = {name: [] for name in calls}
    names = list(calls)
    for r in range(rounds):
        for name in names[r % len(names):] + names[: r % len(names)]:
            call = calls[name]
            call(flat)
            t0 = time.perf_counter()
            for _ in range(200):
                call(flat)
            per_call[name].append((time.perf_counter() - t0) / 200 * 1e6)
    load = os.getloadavg()[0]
    print(f"64x1024 float32, one thread, {rounds} rounds interleaved, load {load:.2f}")
    for name, ts in per_call.items():
        print(f"{name}: median {statistics.median(ts):.1f} us per call (min {min(ts):.1f})")


def main(argv: list[str]) -> None:
    if argv[:1] == ["sweep"]:
        sweep()
    elif argv[:1] == ["time"]:
        timing(int(argv[1]) if len(argv) > 1 else 15)
    else:
        print(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
