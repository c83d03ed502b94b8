"""Ops the Triton backend runs as library (torch) kernels, declared extern in its claims:
sort, top_k, the scans, scatter and convolution, with the IR's semantics (stable
order with NaN last, wrapping integer scans, clamped scatter indices, asymmetric and
negative padding, dilations and groups)."""

from __future__ import annotations

import numpy as np
import pytest

from parity.backends.triton.lowerings import EXTERN_OPS
from parity.ir import DType

from .conftest import accumulation_bound, assert_exact, graph_of, native, oracle, run

_RNG = np.random.default_rng(0)
f32 = DType.float32


def _data(dtype, shape):
    if dtype.is_float:
        x = np.round(_RNG.normal(size=shape) * 3)  # ties, to test stability
        x.reshape(-1)[[0, 3, 4]] = [np.nan, -0.0, np.inf]
        return x.astype(dtype.numpy)
    info = dtype.iinfo
    return _RNG.integers(max(info.min, -5), min(info.max, 5), size=shape, endpoint=True).astype(dtype.numpy)


def _exact(backend, fn, *arrays, externs=1):
    graph = graph_of(fn, *(DType.from_numpy(a.dtype)[a.shape] for a in arrays))
    got, exe = run(backend, graph, list(arrays))
    for g, w in zip(got, native(graph, list(arrays))):
        assert_exact(g, w, signed_zero=False)
    assert exe.externs_per_call == externs
    return exe


_DTYPES = [DType.float16, DType.bfloat16, f32, DType.int8, DType.uint32, DType.int64]


@pytest.mark.parametrize("dtype", _DTYPES, ids=lambda d: d.short)
def test_sort_and_top_k_are_stable_with_nan_last(backend, dtype):
    x = _data(dtype, (3, 9))
    for descending in (False, True):
        _exact(backend, lambda b, a: b.sort(a, axis=1, descending=descending), x)
        _exact(backend, lambda b, a: b.sort(a, axis=0, descending=descending), x)
    for largest in (False, True):
        _exact(backend, lambda b, a: b.top_k(a, k=4, largest=largest), x)


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "cummax", "cummin"])
@pytest.mark.parametrize("dtype", [DType.bfloat16, f32, DType.int8, DType.uint32], ids=lambda d: d.short)
def test_scans(backend, op, dtype):
    x = _data(dtype, (3, 6))
    if dtype.is_integer and op in ("cumsum", "cumprod"):
        x = _RNG.integers(dtype.iinfo.min, dtype.iinfo.max, size=(3, 6), endpoint=True).astype(dtype.numpy)  # wraps
    for axis in (0, 1):
        for reverse in (False, True):
            graph = graph_of(lambda b, a: b.op(op, a, axis=axis, reverse=reverse), dtype[x.shape])
            (got,), exe = run(backend, graph, [x])
            assert exe.externs_per_call == 1 and exe.kernels_per_call == 0
            if dtype.is_float and op in ("cumsum", "cumprod"):  # accumulation bound
                (exact,) = oracle(graph, [x])
                (absum,) = oracle(graph, [np.abs(x)])
                with np.errstate(invalid="ignore"):
                    err = np.abs(got.astype(np.float64) - exact)
                    ok = (err <= accumulation_bound(absum, 6, dtype) + float(dtype.finfo.eps) * np.abs(exact)) | (
                        np.isnan(exact) & np.isnan(got.astype(np.float64))) | (got.astype(np.float64) == exact)
                assert ok.all()
            else:
                assert_exact(got, native(graph, [x])[0], signed_zero=False)


@pytest.mark.parametrize("reduce", ["add", "replace"])
@pytest.mark.parametrize("dtype", [f32, DType.int8, DType.uint32, DType.bool], ids=lambda d: d.short)
def test_scatter(backend, reduce, dtype):
    if reduce == "add" and dtype.is_bool:
        return
    x = _RNG.random((3, 4)) < 0.5 if dtype.is_bool else _data(dtype, (3, 4))
    if dtype.is_float:
        x = np.nan_to_num(x).astype(dtype.numpy)
    # distinct in-range indices per column for 'replace' (duplicates are implementation-defined)
    idx = np.array([[2, 0, 1, 1], [0, 2, -3, 9]]) if reduce == "add" else np.array([[2, 0, 1, 1], [0, 2, 0, 2]])
    upd = _RNG.random((2, 4)) < 0.5 if dtype.is_bool else _data(dtype, (2, 4))
    if dtype.is_float:
        upd = np.nan_to_num(upd).astype(dtype.numpy)
    _exact(backend, lambda b, a, i, u: b.scatter(a, i, u, axis=0, reduce=reduce), x, idx, upd)


CONVS = {
    "1d": ((2, 3, 9), (4, 3, 3), (1,), ((1, 1),), (1,), (1,), 1),
    "2d_strided_asym": ((1, 2, 6, 7), (3, 2, 3, 2), (2, 1), ((1, 0), (0, 2)), (1, 1), (1, 2), 1),
    "2d_groups_negative_pad": ((2, 4, 6, 6), (4, 2, 3, 3), (1, 1), ((-1, 1), (1, -1)), (1, 1), (1, 1), 2),
    "transposed": ((1, 2, 4), (3, 2, 3), (1,), ((2, 2),), (2,), (1,), 1),
    "3d": ((1, 1, 3, 4, 5), (2, 1, 2, 2, 2), (1, 1, 2), ((0, 0), (1, 0), (0, 1)), (1, 1, 1), (1, 1, 1), 1),
    "kernel_too_big": ((1, 1, 2), (1, 1, 3), (1,), ((0, 0),), (1,), (1,), 1),
}


@pytest.mark.parametrize("case", sorted(CONVS))
@pytest.mark.parametrize("dtype", [DType.float16, DType.bfloat16, f32, DType.float64], ids=lambda d: d.short)
def test_convolution(backend, case, dtype):
    lhs, rhs, strides, padding, ld, rd, groups = CONVS[case]
    x = _RNG.normal(size=lhs).astype(dtype.numpy)
    w = _RNG.normal(size=rhs).astype(dtype.numpy)
    fn = lambda b, a, k: b.convolution(a, k, window_strides=strides, padding=padding, lhs_dilation=ld,  # noqa: E731
                                       rhs_dilation=rd, feature_group_count=groups)
    graph = graph_of(fn, dtype[lhs], dtype[rhs])
    (got,), exe = run(backend, graph, [x, w])
    assert exe.externs_per_call == 1
    (exact,) = oracle(graph, [x, w])
    (absum,) = oracle(graph, [np.abs(x), np.abs(w)])
    assert got.shape == exact.shape
    n = int(np.prod(rhs[1:]))
    err = np.abs(got.astype(np.float64) - exact)
    assert (err <= accumulation_bound(absum, n, dtype) + float(dtype.finfo.eps) * np.abs(exact)).all()


def test_extern_ops_are_exactly_the_library_ones():
    assert EXTERN_OPS == {"sort", "top_k", "convolution", "scatter", "cumsum", "cumprod", "cummax", "cummin",
                          # complex values' float pairs (complex_pairs.py): the FFTs, and exp/log/sqrt
                          "fft", "ifft", "rfft", "irfft", "complex_exp", "complex_log", "complex_sqrt"}


def test_top_k_results_read_by_a_kernel_are_dense(backend):
    # top_k keeps the first k of a sorted row: torch returns a strided view, kernels read dense rows
    x = np.array([[-39, 12, 14], [22, 18, -24]], np.int32)
    graph = graph_of(lambda b, a: b.convert(b.top_k(a, k=1, largest=True)[1], dtype=DType.float16), DType.int32[2, 3])
    (got,), _ = run(backend, graph, [x])
    assert_exact(got, np.array([[2.0], [0.0]], np.float16))
