"""dot_general as a tiled kernel: layouts (transposed operands, batch dims anywhere,
several contracting dims), every claimed dtype, tiles that do not divide the sizes,
empty contractions, and integer wraparound; floats within the accumulation bound.
"""

from __future__ import annotations

import numpy as np
import pytest

from parity.ir import DType

from .conftest import accumulation_bound, assert_exact, graph_of, native, oracle, run

_RNG = np.random.default_rng(0)

LAYOUTS = {  # name: (lhs shape, rhs shape, lhs contracting, rhs contracting, lhs batch, rhs batch)
    "matmul": ((5, 7), (7, 3), (1,), (0,), (), ()),
    "rhs_transposed": ((70, 33), (5, 33), (1,), (1,), (), ()),
    "lhs_transposed": ((7, 5), (7, 3), (0,), (0,), (), ()),
    "batched": ((2, 3, 4), (2, 4, 5), (2,), (1,), (0,), (0,)),
    "batch_last": ((3, 4, 2), (4, 5, 2), (1,), (0,), (2,), (2,)),
    "two_contracting": ((3, 4, 5), (5, 4, 2), (1, 2), (1, 0), (), ()),
    "outer": ((3,), (4,), (), (), (), ()),
    "vector": ((6,), (6,), (0,), (0,), (), ()),
    "empty_k": ((3, 0), (0, 2), (1,), (0,), (), ()),
}


def _operand(dtype, shape):
    if dtype.is_float:
        return _RNG.normal(size=shape).astype(dtype.numpy)
    info = dtype.iinfo
    return _RNG.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype.numpy)


def _graph(dtype, lhs, rhs, lc, rc, lb, rb):
    return graph_of(lambda b, x, y: b.dot_general(x, y, lhs_contracting_dims=lc, rhs_contracting_dims=rc,
                                                  lhs_batch_dims=lb, rhs_batch_dims=rb), dtype[lhs], dtype[rhs])


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("dtype", [DType.float16, DType.bfloat16, DType.float32, DType.float64],
                         ids=lambda d: d.short)
def test_float_dot(backend, layout, dtype):
    lhs, rhs, lc, rc, lb, rb = LAYOUTS[layout]
    x, y = _operand(dtype, lhs), _operand(dtype, rhs)
    graph = _graph(dtype, lhs, rhs, lc, rc, lb, rb)
    (got,), exe = run(backend, graph, [x, y])
    assert exe.kernels_per_call == (1 if got.size else 0)
    (exact,) = oracle(graph, [x, y])
    (absum,) = oracle(graph, [np.abs(x), np.abs(y)])
    n = int(np.prod([lhs[i] for i in lc]))
    err = np.abs(got.astype(np.float64) - exact)
    assert (err <= accumulation_bound(absum, n, dtype) + float(dtype.finfo.eps) * np.abs(exact)).all()


@pytest.mark.parametrize("dtype", [DType.int32, DType.int64], ids=lambda d: d.short)
@pytest.mark.parametrize("layout", ["matmul", "batched", "two_contracting"])
def test_integer_dot_wraps_exactly(backend, dtype, layout):
    lhs, rhs, lc, rc, lb, rb = LAYOUTS[layout]
    x, y = _operand(dtype, lhs), _operand(dtype, rhs)
    graph = _graph(dtype, lhs, rhs, lc, rc, lb, rb)
    (got,), _ = run(backend, graph, [x, y])
    assert_exact(got, native(graph, [x, y])[0])


def test_dot_propagates_inf_and_nan_but_not_from_padding(backend):
    # a prologue that maps the loads' zero padding to -inf must not leak into the products
    x = np.array([[1.0, np.inf, 2.0], [0.0, 1.0, np.nan]], np.float32)
    y = np.ones((3, 2), np.float32)
    graph = graph_of(lambda b, a, c: b.dot_general(b.log(a), c, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,),
                                                   lhs_batch_dims=(), rhs_batch_dims=()),
                     DType.float32[x.shape], DType.float32[y.shape])
    (got,), exe = run(backend, graph, [x, y])
    assert exe.kernels_per_call == 1
    assert_exact(got, native(graph, [x, y])[0])
