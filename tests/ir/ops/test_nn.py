"""linear, matmul, einsum, embedding (ir/ops/nn.py) against torch.

Bounds: these are accumulations, so the error is absolute, at the scale of Σ|terms|
(the same contraction on |operands|). Each dot_general rounds once (0.5 ULP of that
scale); a bias add or a second contraction adds one more rounding, so 1 ULP of the scale
holds for every case here (the contract's n·ε·Σ|terms| is far looser). Float64 results
are measured against torch's own float64, which has its summation error too.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).parent))
from composite_check import check_composite, fully_expanded  # noqa: E402
from torch_reference import non_primitives, run_ir  # noqa: E402

from parity.ir import OP_TABLE, DType, Symbol, TensorType, TypeRuleError, f32, i64  # noqa: E402

ULPS = 1
DTYPES = [np.float32, np.float64]
INF = float("inf")


def abs_scale(fn, arrays):
    """Σ|terms|: ``fn`` applied by torch to |operands| in float64."""
    return fn(*(torch.from_numpy(np.abs(a).astype(np.float64)) for a in arrays)).numpy()


def randn(seed, *shapes, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


# -- linear ----------------------------------------------------------------------------------

LINEAR = [((4,), 3), ((2, 4), 5), ((2, 3, 4), 1), ((1, 7), 7), ((2, 0, 3), 2)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("x_shape, out", LINEAR)
def test_linear(x_shape, out, dtype):
    x, w, b = randn(out, x_shape, (out, x_shape[-1]), (out,), dtype=dtype)
    scale = abs_scale(F.linear, [x, w, b])
    check_composite("linear", [x, w, b], F.linear, ULPS, error_scale=lambda t: scale)


def test_linear_type_errors():
    opdef = OP_TABLE["linear"]
    with pytest.raises(TypeRuleError, match=r"linear \(operand 1\).*\[out, in\]"):
        opdef.result_types([f32[2, 4], f32[3, 5], f32[3]], {})
    with pytest.raises(TypeRuleError, match=r"linear \(operand 2\).*\[out\]"):
        opdef.result_types([f32[2, 4], f32[3, 4], f32[4]], {})


# -- matmul ----------------------------------------------------------------------------------

MATMUL = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)),
          ((2, 3), (5, 3, 4)), ((5, 1, 2, 3), (4, 3, 2)), ((3,), (2, 3, 4)), ((2, 1, 3), (3,)),
          ((1, 2, 3), (4, 3, 5)), ((2, 0), (0, 3)), ((4, 1, 1), (1, 1, 6))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("a_shape, b_shape", MATMUL)
def test_matmul(a_shape, b_shape, dtype):
    a, b = randn(len(a_shape) + len(b_shape), a_shape, b_shape, dtype=dtype)
    scale = abs_scale(torch.matmul, [a, b])
    out = check_composite("matmul", [a, b], torch.matmul, ULPS, error_scale=lambda t: scale)
    assert out.shape == torch.matmul(torch.from_numpy(a), torch.from_numpy(b)).shape


def test_matmul_without_rhs_batch_needs_no_broadcast():
    graph = fully_expanded("matmul", [f32[8, 2, 3], f32[3, 4]])
    assert graph.op_counts() == {"dot_general": 1}


def test_matmul_integers_are_exact_and_wrap():
    a = np.array([[2**40, 3], [-5, 7]], np.int64)
    b = np.array([[2**30, 1], [11, -13]], np.int64)
    np.testing.assert_array_equal(run_ir("matmul", [a, b]), (torch.from_numpy(a) @ torch.from_numpy(b)).numpy())
    big = np.array([[2**30, 2**30]], np.int32)
    np.testing.assert_array_equal(run_ir("matmul", [big, np.array([[2], [2]], np.int32)]), [[0]])  # 2**32 wraps


def test_matmul_symbolic_batch():
    n = Symbol("B")
    (out,) = OP_TABLE["matmul"].result_types([TensorType(DType.float32, (n, 2, 3)), f32[3, 4]], {})
    assert out.shape == (n, 2, 4)


@pytest.mark.parametrize("a, b, message", [
    (f32[2, 3], f32[4, 5], "contracted sizes differ"),
    (f32[2, 2, 3], f32[3, 3, 4], "do not broadcast"),
    (f32[()], f32[3], "rank ≥ 1"),
    (f32[3], i64[3], "insert a convert"),
])
def test_matmul_type_errors(a, b, message):
    with pytest.raises(TypeRuleError, match=f"matmul.*{message}"):
        OP_TABLE["matmul"].result_types([a, b], {})


# -- einsum ----------------------------------------------------------------------------------

EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bhld,bhsd->bhls", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("ab,bc,ca->", [(2, 3), (3, 4), (4, 2)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,i->", [(5,), (5,)]),
    ("ij->ji", [(2, 3)]),
    ("ijk->", [(2, 3, 4)]),
    ("ij,kj->ikj", [(2, 3), (4, 3)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("iij->ji", [(3, 3, 2)]),
    ("iji->j", [(2, 3, 2)]),
    ("bA", [(2, 3)]),  # implicit output: ASCII order puts 'A' first
    ("ij,jk", [(2, 1), (3, 4)]),  # size-1 dims broadcast
    ("ij,ij->", [(1, 3), (2, 3)]),
    ("...ij->ij", [(5, 2, 3)]),
    ("...j,j", [(2, 1, 3), (3,)]),
    ("i...,...i", [(3, 2, 1), (4, 3)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    (" i j , j -> i ", [(2, 3), (3,)]),
    ("ij,jk->ik", [(2, 0), (0, 3)]),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("equation, shapes", EINSUM)
def test_einsum(equation, shapes, dtype):
    xs = randn(len(equation), *shapes, dtype=dtype)

    def fn(*ts):
        return torch.einsum(equation, *ts)

    scale = abs_scale(fn, xs)
    check_composite("einsum", xs, fn, ULPS, error_scale=lambda t: scale, equation=equation)


def test_einsum_diagonal_ignores_infinities_off_the_diagonal():
    x = np.array([[1.0, INF], [-INF, 2.0]], np.float32)
    np.testing.assert_array_equal(run_ir("einsum", [x], equation="ii->i"), [1.0, 2.0])
    np.testing.assert_array_equal(torch.einsum("ii->i", torch.from_numpy(x)).numpy(), [1.0, 2.0])


def test_einsum_integers():
    a = np.arange(6, dtype=np.int64).reshape(2, 3)
    b = np.arange(12, dtype=np.int64).reshape(3, 4) - 5
    np.testing.assert_array_equal(run_ir("einsum", [a, b], equation="ij,jk->ki"), (a @ b).T)


@pytest.mark.parametrize("equation, types, message", [
    ("ij,jk->ik", [f32[2, 3]], "2 input terms for 1 operands"),
    ("ij->ij", [f32[2, 3, 4]], "does not fit operand 0"),
    ("i1->i", [f32[2, 3]], "must be letters"),
    ("i......->i", [f32[2, 3]], "at most one '...'"),
    ("ij->ii", [f32[2, 3]], "repeats a label"),
    ("ij->k", [f32[2, 3]], "names one no input has"),
    ("ij,jk->ik", [f32[2, 3], f32[4, 5]], "label 'j' has sizes 3 and 4"),
    ("ii->i", [f32[2, 3]], "label 'i' has sizes 2 and 3"),
])
def test_einsum_errors_name_the_equation(equation, types, message):
    with pytest.raises(TypeRuleError, match=rf"einsum \(attribute 'equation'\): .*{message}.*in equation"):
        OP_TABLE["einsum"].result_types(types, {"equation": equation})


def test_einsum_dtypes_must_agree():
    with pytest.raises(TypeRuleError, match=r"einsum \(operand 1\)"):
        OP_TABLE["einsum"].result_types([f32[2], TensorType(DType.float64, (2,))], {"equation": "i,i"})


# -- embedding -------------------------------------------------------------------------------

@pytest.mark.parametrize("index_shape", [(), (4,), (2, 3), (2, 0, 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_embedding(index_shape, dtype):
    rng = np.random.default_rng(3)
    weight = (rng.standard_normal((10, 4)) * 10).astype(dtype)
    indices = rng.integers(0, 10, index_shape)
    out = run_ir("embedding", [weight, indices])
    # Rows are copied, so the result is bit-exact.
    np.testing.assert_array_equal(out, F.embedding(torch.from_numpy(indices), torch.from_numpy(weight)).numpy())
    graph = fully_expanded("embedding", [TensorType(DType.from_numpy(weight.dtype), weight.shape),
                                         TensorType(DType.int64, index_shape)])
    assert not non_primitives(graph)


def test_embedding_int32_indices_and_errors():
    weight = np.arange(6, dtype=np.float32).reshape(3, 2)
    np.testing.assert_array_equal(run_ir("embedding", [weight, np.array([2, 0], np.int32)]), [[4, 5], [0, 1]])
    assert OP_TABLE["embedding"].implementation_defined
    with pytest.raises(TypeRuleError, match=r"embedding \(operand 1\)"):
        OP_TABLE["embedding"].result_types([f32[3, 2], f32[2]], {})
    with pytest.raises(TypeRuleError, match=r"embedding \(operand 0\)"):
        OP_TABLE["embedding"].result_types([f32[3], i64[2]], {})
