"""Shared checks for the XLA backend tests: run a graph on XLA and on the interpreter and
measure each output against the contract of DESIGN.md (exact, ULPs, accumulation).

A shared ULP helper will come with the conformance suite; until then it lives here.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from parity.backends.xla import XlaBackend
from parity.ir import DType, evaluate


def _spacing(x: np.ndarray, dtype: DType) -> np.ndarray:
    """The gap between neighbours of ``dtype`` at the magnitude of each (float64) x."""
    info = ml_dtypes.finfo(dtype.numpy)
    _, exp = np.frexp(np.abs(x))
    exp = np.maximum(exp.astype(np.int64) - 1, int(info.minexp))
    return np.ldexp(1.0, exp - int(info.nmant))


def ulp_error(got: np.ndarray, exact: np.ndarray, dtype: DType) -> np.ndarray:
    """|got - exact| in ULPs of ``dtype`` at ``exact``; 0 where both are the same NaN/inf class."""
    got = np.asarray(got).astype(np.float64)
    exact = np.asarray(exact).astype(np.float64)
    with np.errstate(over="ignore"):  # where the exact value overflows the dtype
        rounded = exact.astype(dtype.numpy).astype(np.float64)
    with np.errstate(all="ignore"):
        err = np.abs(got - exact) / _spacing(exact, dtype)
    both_nan = np.isnan(got) & np.isnan(exact)
    same_inf = np.isinf(got) & (got == np.where(np.isinf(exact), exact, rounded))
    err = np.where(both_nan | same_inf, 0.0, err)
    return np.where(np.isnan(err), np.inf, err)


def max_ulp(got, exact, dtype: DType) -> float:
    err = ulp_error(got, exact, dtype)
    return float(err.max()) if err.size else 0.0


def assert_exact(got: np.ndarray, want: np.ndarray, *, signed_zero: bool = True, what: str = "") -> None:
    """Bit-exact (NaN payloads aside); ``signed_zero=False`` lets -0.0 and 0.0 match."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, f"{what}: {got.dtype}{got.shape} vs {want.dtype}{want.shape}"
    if want.dtype.kind == "f" or want.dtype == ml_dtypes.bfloat16:
        g, w = got.astype(np.float64), want.astype(np.float64)
        nan = np.isnan(g) & np.isnan(w)
        same = (g == w) & (np.signbit(g) == np.signbit(w)) if signed_zero else g == w
        bad = ~(nan | same)
    else:
        bad = got != want
    assert not bad.any(), f"{what}: mismatch at {np.argwhere(bad)[:5].tolist()}: got {got[bad][:5]}, want {want[bad][:5]}"


def accumulation_ok(got, oracle, abs_oracle, n_terms: int, dtype: DType) -> bool:
    """abs error <= n·ε·Σ|terms| (Σ|terms| is the graph's oracle on |inputs|)."""
    eps = float(ml_dtypes.finfo(dtype.numpy).eps)
    got, oracle = np.asarray(got).astype(np.float64), np.asarray(oracle)
    both_nan = np.isnan(got) & np.isnan(oracle)
    same_inf = np.isinf(got) & (got == oracle)
    with np.errstate(invalid="ignore"):
        ok = np.abs(got - oracle) <= n_terms * eps * np.asarray(abs_oracle)
    return bool((ok | both_nan | same_inf).all())


class Runner:
    """Run graphs on XLA (CPU) next to the interpreter, native and oracle mode."""

    def __init__(self, backend: XlaBackend):
        self.backend = backend

    def run(self, graph, inputs):
        return self.backend.compile(graph, "cpu")(*inputs)

    def both(self, graph, inputs):
        return self.run(graph, inputs), evaluate(graph, inputs)

    def oracle(self, graph, inputs):
        return evaluate(graph, inputs, oracle=True)


@pytest.fixture(scope="session")
def runner() -> Runner:
    return Runner(XlaBackend())


@pytest.fixture(scope="session")
def contract():
    """The measuring helpers, as one namespace for the test modules."""

    class Contract:
        ulp_error = staticmethod(ulp_error)
        max_ulp = staticmethod(max_ulp)
        assert_exact = staticmethod(assert_exact)
        accumulation_ok = staticmethod(accumulation_ok)

    return Contract
