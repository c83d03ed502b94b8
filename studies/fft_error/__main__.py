"""The FFT error table (issue 28): each backend's fft/ifft/rfft/irfft against the float64 oracle.

    .venv/bin/python -m studies.fft_error [--markdown studies/fft_error/results.md]

For every op × transform size (1-d, 2 signals of standard normal values, norm="backward") ×
dtype × backend that claims the op, the largest error of any part of any output element,
in units of ε·‖o‖₂ (ε of the part dtype, ‖o‖₂ the oracle's norm over the transformed axis:
the scale of the contract's bound (1 + ⌈log₂ n⌉)·ε·‖o‖₂, conformance/bounds.py), and in
ULPs of the element itself (median and max of |a - o| / ulp(|o|)). Not a test: the
conformance cases (conformance/opdb/fft.py) hold the bound; this table shows how far inside it.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from parity.backends.registry import backend_names, get_backend
from parity.conformance.execute import as_array
from parity.conformance.metrics import abs_error, ulp
from parity.ir import DType, GraphBuilder, evaluate
from parity.ir.ops import OP_TABLE

SIZES = (2, 3, 5, 7, 8, 16, 31, 64, 100, 127, 256, 1000, 1024, 4096, 4099, 10007, 16384, 65536)
OPS = ("fft", "ifft", "rfft", "irfft")


def _case(op: str, real: DType, n: int, rng):
    complex_ = real.complex_dtype
    b = GraphBuilder(op)
    if op == "rfft":
        x = rng.standard_normal((2, n)).astype(real.numpy)
        y = b.rfft(b.input(real[2, n]), ndims=1)
    elif op == "irfft":
        half = n // 2 + 1
        x = (rng.standard_normal((2, half)) + 1j * rng.standard_normal((2, half))).astype(complex_.numpy)
        y = b.irfft(b.input(complex_[2, half]), ndims=1, length=n)
    else:
        x = (rng.standard_normal((2, n)) + 1j * rng.standard_normal((2, n))).astype(complex_.numpy)
        y = b.op(op, b.input(complex_[2, n]), ndims=1)
    return b.build([y]), x


def measure(backend, op: str, real: DType, n: int) -> tuple[float, float, float]:
    """(max error / (ε·‖o‖₂), median and max ULPs of the element) of one op × dtype × size."""
    graph, x = _case(op, real, n, np.random.default_rng(n))
    got = as_array(backend.compile(graph, "cpu")(x)[0])  # triton and inductor return torch tensors
    oracle = evaluate(graph, [x], oracle=True)[0]
    out = graph.output_types[0].dtype
    err = abs_error(out, oracle, got)
    norm = np.sqrt(np.sum(np.abs(oracle) ** 2, axis=-1, keepdims=True))
    element_ulps = err / ulp(out, oracle)
    return float(np.max(err / (float(real.finfo.eps) * norm))), float(np.median(element_ulps)), float(element_ulps.max())


def table(backends) -> str:
    lines = ["| op | n | bound (1 + ⌈log₂ n⌉) | " + " | ".join(
        f"{b} {d} (ε·‖o‖₂; ULP of element: median / max)" for b in backends for d in ("f32", "f64")) + " |",
             "| --- | --- | --- | " + " | ".join("---" for _ in backends for _ in range(2)) + " |"]
    for op in OPS:
        for n in SIZES:
            cells = []
            for name in backends:
                backend = get_backend(name)
                for real in (DType.float32, DType.float64):
                    k, med, top = measure(backend, op, real, n)
                    cells.append(f"{k:.3f}; {med:.2g} / {top:.3g}")
            lines.append(f"| {op} | {n} | {1 + math.ceil(math.log2(n))} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def claiming_fft(names) -> list[str]:
    """The backends among ``names`` that claim every FFT op in every dtype the IR defines it for."""
    out = []
    for name in names:
        claims = get_backend(name).claims()
        if all(op in claims and set(OP_TABLE[op].dtypes) <= set(claims[op].dtypes) for op in OPS):
            out.append(name)
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", help="write the table here")
    parser.add_argument("--backend", action="append", help="only these backends (default: every one claiming the FFTs)")
    args = parser.parse_args(argv)
    names = claiming_fft(args.backend or backend_names())
    text = table(names)
    print(text)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write("# FFT error against the float64 oracle\n\n`python -m studies.fft_error`; see studies/fft_error/__main__.py "
                    f"for the units.\nBackends measured: {', '.join(names)} (every one that claims the FFT ops).\n\n"
                    + text + "\n")


if __name__ == "__main__":
    main()
