"""Shared helpers for testing composites against PyTorch (import read-only; keep the API small).

- :func:`run_ir` builds a one-op graph from NumPy arrays and evaluates it.
- :func:`decomposition` returns the graph a composite decomposes into.
- :func:`torch_truth` evaluates a torch function in float64 (the truth a float32 result
  is measured against) and rounds it once to the dtype under test.
- :func:`assert_ulp` compares in ULPs of the dtype, with NaN and inf positions exact.
- :func:`to_torch` converts NumPy arrays (bfloat16 included) to tensors.

Test files load it with ``sys.path.insert(0, str(Path(__file__).parent))`` (pytest runs
in importlib mode, so the test folder is not on the path).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import ml_dtypes
import numpy as np
import torch

from parity.ir import OP_TABLE, Graph, GraphBuilder, Kind, evaluate
from parity.ir.dtypes import DType
from parity.ir.types import TensorType


def type_of(array: np.ndarray) -> TensorType:
    return TensorType(DType.from_numpy(array.dtype), array.shape)


def run_ir(opname: str, arrays: Sequence[np.ndarray], *, oracle: bool = False, **attrs: Any):
    """Evaluate ``opname`` on ``arrays`` with the reference interpreter.

    Returns one array, or a tuple for multi-result ops. ``oracle=True`` runs in float64.
    """
    arrays = [np.asarray(a) for a in arrays]
    b = GraphBuilder(opname)
    inputs = [b.input(type_of(a)) for a in arrays]
    out = b.op(opname, *inputs, **attrs)
    outs = list(out) if isinstance(out, tuple) else [out]
    results = evaluate(b.build(outs), arrays, oracle=oracle)
    return tuple(results) if isinstance(out, tuple) else results[0]


def decomposition(opname: str, types: Sequence[TensorType], **attrs: Any) -> Graph:
    """The graph ``opname``'s decomposition builds for operands of ``types``."""
    opdef = OP_TABLE[opname]
    b = GraphBuilder(opname)
    params = [b.input(t) for t in types]
    results = opdef.decompose(b, opdef.normalize_attrs(attrs), *params)
    results = results if isinstance(results, tuple) else (results,)
    return b.build(list(results))


def non_primitives(graph: Graph) -> set[str]:
    """Names of ops in ``graph`` that are not primitives (should be empty for a decomposition)."""
    return {n.op for n in graph.nodes if OP_TABLE[n.op].kind is not Kind.PRIMITIVE}


def to_torch(array: np.ndarray) -> torch.Tensor:
    """NumPy -> torch, bfloat16 included (NumPy has no bfloat16; go through its bits)."""
    if array.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(array.view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(np.array(array, order="C", copy=True))  # (ascontiguousarray makes 0-d 1-d)


def torch_truth(fn: Callable[..., torch.Tensor], arrays: Sequence[np.ndarray], dtype: DType) -> np.ndarray:
    """``fn`` evaluated by torch in float64 on the (exact) inputs, rounded once to ``dtype``."""
    args = [to_torch(a.astype(np.float64) if a.dtype.kind == "f" or a.dtype == ml_dtypes.bfloat16 else a)
            for a in arrays]
    with np.errstate(over="ignore"):  # beyond the dtype's range rounds to inf, as it should
        return fn(*args).numpy().astype(dtype.numpy)


def ulp(values: np.ndarray, dtype: DType) -> np.ndarray:
    """The spacing of ``dtype`` numbers at |values| (float64 array; subnormal spacing at 0)."""
    info = dtype.finfo
    mag = np.abs(values.astype(np.float64))
    tiny = float(info.smallest_subnormal)
    with np.errstate(divide="ignore"):
        exponent = np.floor(np.log2(np.where(mag > 0, mag, 1.0)))
    spacing = np.exp2(exponent - info.nmant)
    return np.where(mag >= float(info.smallest_normal), spacing, tiny)


def assert_ulp(actual: np.ndarray, expected: np.ndarray, ulps, *, scale=None, atol=0.0, what: str = "") -> None:
    """|actual - expected| <= ulps * ulp(max(|expected|, scale)) + atol elementwise, in actual's dtype.

    NaN must be NaN exactly where expected is, infinities must match exactly, and a zero
    must have expected's sign. ``scale`` widens the unit where the decomposition's error
    is relative to something larger than the result (cancellation); ``atol`` covers
    absolute errors (an intermediate that underflows to a subnormal). All broadcast.
    """
    dtype = DType.from_numpy(actual.dtype)
    a, e = actual.astype(np.float64), np.asarray(expected).astype(np.float64)
    assert a.shape == e.shape, f"{what}: shape {a.shape} != {e.shape}"
    nan_a, nan_e = np.isnan(a), np.isnan(e)
    assert np.array_equal(nan_a, nan_e), f"{what}: NaN at {np.argwhere(nan_a != nan_e)[:5].tolist()}"
    inf_e = np.isinf(e)
    assert np.array_equal(a[inf_e], e[inf_e]) and not np.isinf(a[~inf_e & ~nan_e]).any(), (
        f"{what}: infinities differ\n actual {a}\n expected {e}")
    ref = np.abs(e) if scale is None else np.maximum(np.abs(e), np.abs(np.asarray(scale, np.float64)))
    finite = ~nan_e & ~inf_e
    zero = finite & (e == 0) & (a == 0)
    assert np.array_equal(np.signbit(a[zero]), np.signbit(e[zero])), f"{what}: sign of zero differs"
    with np.errstate(invalid="ignore"):
        err = np.abs(a - e)
        bound = np.broadcast_to(np.asarray(ulps, np.float64) * ulp(ref, dtype) + atol, e.shape)
    bad = finite & ~(err <= bound)
    if bad.any():
        i = tuple(np.argwhere(bad)[0])
        raise AssertionError(
            f"{what}: {int(bad.sum())} element(s) beyond the bound; first at {i}: "
            f"actual {a[i]!r}, expected {e[i]!r}, error {err[i] / ulp(ref, dtype)[i]:.2f} ulp, "
            f"bound {bound[i] / ulp(ref, dtype)[i]:.2f} ulp")
