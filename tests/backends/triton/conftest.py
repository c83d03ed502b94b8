"""Shared checks for the Triton backend tests: run a graph through generated kernels in
Triton's interpreter and measure each output against the interpreter (native mode) or
the float64 oracle, with the contract of DESIGN.md.

A shared ULP helper will come with the conformance suite; until then it lives here.
"""

from __future__ import annotations

import os

# Triton reads this when a kernel is defined (not when it is imported); scripts/test.sh
# exports it too. Set before any kernel exists in this process.
os.environ.setdefault("TRITON_INTERPRET", "1")

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from parity.backends.triton import TritonBackend, TritonOptions  # noqa: E402
from parity.ir import DType, GraphBuilder, evaluate  # noqa: E402


@pytest.fixture(scope="session")
def backend(tmp_path_factory) -> TritonBackend:
    return TritonBackend(TritonOptions(interpret=True, cache_dir=tmp_path_factory.mktemp("triton-cache")))


def to_numpy(t: torch.Tensor) -> np.ndarray:
    """A CPU torch tensor as NumPy (bfloat16 and uint32 through their raw bits)."""
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    if t.dtype == torch.uint32:
        return t.view(torch.int32).numpy().view(np.uint32)
    return t.numpy()


def run(backend: TritonBackend, graph, inputs):
    """(outputs as NumPy, executable)."""
    exe = backend.compile(graph, "cpu")
    return [to_numpy(t) for t in exe(*inputs)], exe


def graph_of(fn, *types, name="g"):
    """Build a graph: ``fn(builder, *inputs)`` returns an output value or a tuple of them."""
    b = GraphBuilder(name)
    xs = [b.input(t) for t in types]
    out = fn(b, *xs)
    return b.build(list(out) if isinstance(out, tuple) else [out])


# -- measuring ----------------------------------------------------------------------------

def _spacing(x: np.ndarray, dtype: DType) -> np.ndarray:
    """The gap between neighbours of ``dtype`` at the magnitude of each (float64) x."""
    info = ml_dtypes.finfo(dtype.numpy)
    _, exp = np.frexp(np.abs(x))
    exp = np.maximum(exp.astype(np.int64) - 1, int(info.minexp))
    return np.ldexp(1.0, exp - int(info.nmant))


def ulp_error(got, exact, dtype: DType) -> np.ndarray:
    """|got - exact| in ULPs of ``dtype`` at ``exact``; 0 where both are NaN or the same inf
    (an exact value past the dtype's range counts as the inf it rounds to)."""
    got = np.asarray(got).astype(np.float64)
    exact = np.asarray(exact).astype(np.float64)
    with np.errstate(all="ignore"):
        rounded = exact.astype(dtype.numpy).astype(np.float64)
        err = np.abs(got - exact) / _spacing(exact, dtype)
    both_nan = np.isnan(got) & np.isnan(exact)
    same_inf = np.isinf(got) & (got == rounded)
    err = np.where(both_nan | same_inf, 0.0, err)
    return np.where(np.isnan(err), np.inf, err)


def assert_ulp(got, exact, dtype: DType, bound: float, what: str = "", inputs=()) -> float:
    err = ulp_error(got, exact, dtype)
    worst = float(err.max()) if err.size else 0.0
    if worst > bound:
        i = int(np.argmax(err))
        at = ", ".join(f"{np.asarray(a).reshape(-1)[i]!r}" for a in inputs)
        raise AssertionError(f"{what}: {worst:.3g} ulp > {bound} at input ({at}): got "
                             f"{np.asarray(got).reshape(-1)[i]!r}, exact {np.asarray(exact).reshape(-1)[i]!r}")
    return worst


def same_bits(got: np.ndarray, want: np.ndarray, *, signed_zero: bool = True) -> np.ndarray:
    """Elementwise equality, NaN equal to NaN (any payload) and -0.0 != 0.0 unless told."""
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    if want.dtype.kind != "f" and want.dtype != ml_dtypes.bfloat16:
        return got == want
    g, w = got.astype(np.float64), want.astype(np.float64)
    eq = (g == w) | (np.isnan(g) & np.isnan(w))
    if signed_zero:
        eq &= (np.signbit(g) == np.signbit(w)) | np.isnan(w)
    return eq


def assert_exact(got, want, what="", *, signed_zero=True, inputs=()):
    ok = same_bits(np.asarray(got), np.asarray(want), signed_zero=signed_zero)
    if not ok.all():
        i = int(np.argmin(ok.reshape(-1)))
        at = ", ".join(f"{np.asarray(a).reshape(-1)[i]!r}" for a in inputs)
        raise AssertionError(f"{what}: {int((~ok).sum())} of {ok.size} differ; first at input ({at}): got "
                             f"{got.reshape(-1)[i]!r}, want {want.reshape(-1)[i]!r}")


def accumulation_bound(terms_abs_sum: np.ndarray, n: int, dtype: DType) -> np.ndarray:
    """n·ε·Σ|terms| (DESIGN.md), with ε the dtype's machine epsilon."""
    return max(n, 1) * float(dtype.finfo.eps) * terms_abs_sum


def oracle(graph, inputs):
    return evaluate(graph, inputs, oracle=True)


def native(graph, inputs):
    return evaluate(graph, inputs)
