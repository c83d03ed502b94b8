"""Measuring a backend result against the interpreter by the contract of DESIGN.md.

A small ULP helper for the onnx tests (a shared one will come with the conformance
suite): exact ops bit-exact, floats in ULPs of the output dtype at the float64 oracle,
accumulations by ``|got - oracle| <= n·ε·Σ|terms|``.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from parity.ir import Accuracy, DType


def spacing(x: np.ndarray, dtype: DType) -> np.ndarray:
    """The distance between neighbours of ``dtype`` at the magnitude of each float64 x."""
    info = ml_dtypes.finfo(dtype.numpy)
    _, exp = np.frexp(np.abs(x))
    exp = np.maximum(exp.astype(np.int64) - 1, int(info.minexp))
    return np.ldexp(1.0, exp - int(info.nmant))


def ulp_error(got, exact, dtype: DType) -> np.ndarray:
    """|got - exact| in ULPs of ``dtype`` at ``exact``: 0 for the same NaN/inf, inf for a
    NaN or inf that should not be there. An exact value past the dtype's range counts as
    the inf it rounds to."""
    got = np.asarray(got).astype(np.float64)
    exact = np.asarray(exact, np.float64)
    with np.errstate(all="ignore"):
        rounded = exact.astype(dtype.numpy).astype(np.float64)
        err = np.abs(got - exact) / spacing(exact, dtype)
    nan_ok = np.isnan(got) & np.isnan(exact)
    inf_ok = np.isinf(got) & (got == rounded)
    err = np.where(nan_ok | inf_ok, 0.0, err)
    return np.where(np.isnan(err), np.inf, err)


def max_ulp(got, exact, dtype: DType) -> float:
    err = ulp_error(got, exact, dtype)
    return float(err.max()) if err.size else 0.0


def exact_mismatch(got, want, *, signed_zero: bool = True) -> np.ndarray:
    """Mask of elements that differ (NaN equals NaN; -0.0 vs 0.0 counts unless ``signed_zero=False``)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"dtype {got.dtype} vs {want.dtype}"
    assert got.shape == want.shape, f"shape {got.shape} vs {want.shape}"
    if want.dtype.kind == "f" or want.dtype == ml_dtypes.bfloat16:
        with np.errstate(invalid="ignore"):  # NaN payloads from bitcasts
            g, w = got.astype(np.float64), want.astype(np.float64)
        same = (g == w) & ((np.signbit(g) == np.signbit(w)) | (not signed_zero))
        return ~(same | (np.isnan(g) & np.isnan(w)))
    return got != want


def assert_exact(got, want, *, signed_zero: bool = True, what: str = "") -> None:
    bad = exact_mismatch(got, want, signed_zero=signed_zero)
    assert not bad.any(), (f"{what}: {int(bad.sum())} of {bad.size} differ, e.g. at "
                           f"{np.argwhere(bad)[:3].tolist()}: got {np.asarray(got)[bad][:4]}, "
                           f"want {np.asarray(want)[bad][:4]}")


def accumulation_excess(got, oracle, abs_oracle, n_terms: int, dtype: DType) -> float:
    """max of |got - oracle| / (n·ε·Σ|terms| + ½ ULP) (≤ 1 passes); same NaN/inf count as equal.

    The ½ ULP of the output dtype at the oracle is the final rounding the interpreter
    itself does: without it a correctly rounded subnormal result would fail the bound.
    """
    eps = float(ml_dtypes.finfo(dtype.numpy).eps)
    got, oracle = np.asarray(got).astype(np.float64), np.asarray(oracle, np.float64)
    bound = n_terms * eps * np.asarray(abs_oracle, np.float64) + 0.5 * spacing(oracle, dtype)
    with np.errstate(all="ignore"):
        ratio = np.abs(got - oracle) / bound
        ratio = np.where(got == oracle, 0.0, ratio)
    ok = (np.isnan(got) & np.isnan(oracle)) | (np.isinf(got) & (got == oracle))
    # a result that overflowed the dtype where the oracle is finite but past its range
    with np.errstate(over="ignore"):
        ok |= np.isinf(got) & (got == oracle.astype(dtype.numpy).astype(np.float64))
    ratio = np.where(ok, 0.0, ratio)
    ratio = np.where(np.isnan(ratio), np.inf, ratio)
    return float(ratio.max()) if ratio.size else 0.0


def ulp_bound(accuracy: Accuracy, dtype: DType) -> float:
    """The per-element bound of an elementwise float op of this class (DESIGN.md)."""
    if dtype in (DType.float16, DType.bfloat16):
        return 1.0
    return 4.0 if accuracy is Accuracy.TRANSCENDENTAL else 1.0
