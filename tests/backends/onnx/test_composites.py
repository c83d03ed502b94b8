"""Composites claimed natively (backends/onnx/composites.py): the ONNX op is used where it is
claimed, the decomposition everywhere else, and both meet the conformance bound on inputs
harder than the op database's (long rows, large offsets, NaN windows, fully masked queries).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from parity.backends.onnx import OnnxBackend, to_model
from parity.backends.onnx.emitter import with_subgraphs
from parity.conformance.case import Case
from parity.conformance.execute import run_case
from parity.ir import DType, GraphBuilder, bf16, f16, f32, f64, i32

BACKEND = OnnxBackend()
CLAIMS = BACKEND.claims()


def op_types(op: str, arrays, **attrs) -> list[str]:
    """The ONNX node types ``op`` lowers to (the model passes the full checker and strict shape inference)."""
    b = GraphBuilder(op)
    params = [b.input(DType.from_numpy(a.dtype)[a.shape]) for a in arrays]
    out = b.op(op, *params, **attrs)
    model = to_model(b.build(list(out) if isinstance(out, tuple) else [out]))
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    return [n.op_type for n in with_subgraphs(model.graph.node)]


def measured(op: str, dtype: DType, arrays, **attrs):
    """Run one case on the onnx backend and measure it with the conformance suite's bound."""
    arrays = [np.asarray(a) for a in arrays]
    result = run_case(BACKEND, "cpu", Case(op, dtype, lambda rng: arrays, attrs, "test"))
    assert result.status == "pass", f"{op}[{dtype.short}]: {result.message} {result.worst} ({result.max_ratio:.3g}×)"
    return result


rng = np.random.default_rng(0)


def normal(dtype: DType, *shape, scale=1.0, offset=0.0):
    return (offset + scale * rng.standard_normal(shape)).astype(dtype.numpy)


def test_claims_leave_out_the_dtypes_ort_gets_wrong():
    assert CLAIMS["layer_norm"].dtypes == {f16, bf16, f32, f64}
    assert f64 in CLAIMS["log_softmax"].dtypes and f64 in CLAIMS["softmax"].dtypes
    assert f64 not in CLAIMS["scaled_dot_product_attention"].dtypes
    assert f64 not in CLAIMS["gelu"].dtypes and f64 not in CLAIMS["avg_pool"].dtypes
    assert CLAIMS["max_pool"].dtypes == {f16, bf16, f32, f64, DType.int8, DType.uint8}
    assert "silu" not in CLAIMS  # no ONNX op: decomposed


@pytest.mark.parametrize("op, arrays, attrs, onnx_op", [
    ("layer_norm", [normal(f32, 2, 8), normal(f32, 8), normal(f32, 8)], {"normalized_ndim": 1}, "LayerNormalization"),
    ("rms_norm", [normal(f32, 2, 8), normal(f32, 8)], {"normalized_ndim": 1, "eps": 1e-6}, "RMSNormalization"),
    ("group_norm", [normal(f32, 2, 4, 3), normal(f32, 4), normal(f32, 4)], {"groups": 2}, "GroupNormalization"),
    ("batch_norm", [normal(f32, 2, 3)] + [normal(f32, 3)] * 3 + [np.ones(3, np.float32)], {"training": False},
     "BatchNormalization"),
    ("softmax", [normal(f32, 3, 5)], {"axis": 0}, "Softmax"),
    ("log_softmax", [normal(f32, 3, 5)], {"axis": 1}, "LogSoftmax"),
    ("gelu", [normal(f32, 7)], {"approximate": "tanh"}, "Gelu"),
    ("einsum", [normal(f32, 2, 3), normal(f32, 3, 4)], {"equation": "ij,jk->ik"}, "Einsum"),
    ("max_pool", [normal(f32, 1, 2, 6)], {"kernel": (3,), "stride": (2,), "padding": (1,), "ceil_mode": True},
     "MaxPool"),
    ("avg_pool", [normal(f32, 1, 2, 6)], {"kernel": (2,)}, "AveragePool"),
    ("relu", [np.array([-0.0, np.nan, -np.inf, 0.0, -1.5, 2.5, np.inf], np.float32)], {}, "Relu"),
])
def test_native_composite_is_its_onnx_op(op, arrays, attrs, onnx_op):
    assert onnx_op in op_types(op, arrays, **attrs)
    assert measured(op, f32, arrays, **attrs).path == "native"


@pytest.mark.parametrize("op, arrays, attrs, onnx_op, why", [
    ("layer_norm", [normal(f64, 2, 8), normal(f64, 8), normal(f64, 8)], {"normalized_ndim": 1, "eps": 0.1},
     "LayerNormalization", "ONNX's epsilon is a float32; 0.1 is not one"),
    ("batch_norm", [normal(f32, 4, 3)] + [normal(f32, 3)] * 3 + [np.ones(3, np.float32)],
     {"training": True}, "BatchNormalization", "training mode updates the running statistics"),
    ("scaled_dot_product_attention", [normal(f64, 3, 4), normal(f64, 5, 4), normal(f64, 5, 2), np.array(False)],
     {"scale": 0.5, "causal": True}, "Attention", "ORT's float64 Attention is float32-accurate"),
    ("einsum", [normal(f32, 2, 3), normal(f32, 1, 4)], {"equation": "ij,jk->ik"}, "Einsum",
     "a letter broadcast from size 1"),
    ("avg_pool", [normal(f32, 1, 1, 5)], {"kernel": (2,), "ceil_mode": True}, "AveragePool",
     "ceil_mode's extra padding is not in torch's divisor"),
])
def test_composite_outside_its_onnx_op_is_decomposed_and_still_correct(op, arrays, attrs, onnx_op, why):
    assert onnx_op not in op_types(op, arrays, **attrs), why
    dtype = DType.from_numpy(arrays[0].dtype)
    graph_path = measured(op, dtype, arrays, **attrs).path
    assert graph_path == ("native" if dtype in CLAIMS[op].dtypes else "decomposed")


def test_layer_norm_keeps_precision_on_long_offset_rows():
    # One-pass E[x²] - E[x]² would lose every digit here (mean 1000, std 1e-2).
    x = normal(f32, 4, 1024, scale=1e-2, offset=1000.0)
    r = measured("layer_norm", f32, [x, normal(f32, 1024), normal(f32, 1024)], normalized_ndim=1)
    assert r.max_ratio < 0.5


@pytest.mark.parametrize("dtype", [f16, bf16, f32, f64])
def test_softmax_long_rows_and_special_rows(dtype):
    x = normal(f32, 3, 4096, scale=30.0)
    x[1, :] = -np.inf
    x[2, 7] = np.nan
    measured("softmax", dtype, [x.astype(dtype.numpy)], axis=1)


def test_float64_log_softmax_of_a_row_holding_inf_is_nan():
    x = np.array([[np.inf, 1.0, 0.0], [1.0, 2.0, 3.0], [-np.inf, -np.inf, -np.inf]])
    b = GraphBuilder()
    xi = b.input(f64[3, 3])
    got = BACKEND.compile(b.build([b.log_softmax(xi, axis=1)]), "cpu")(x)[0]
    assert np.isnan(got[0]).all() and np.isnan(got[2]).all()  # ORT alone gives -inf at [0, 1:]
    measured("log_softmax", f64, [x], axis=1)


def test_float64_log_softmax_of_a_row_holding_nan_is_nan():
    # Fuzz regression onnx-cross_entropy-f64: ORT's max skips a NaN that is not first in the
    # row, so its LogSoftmax gave [44.38, 46.05, 39.18, 27.39, nan] for this row.
    x = np.array([[18.125, 19.796875, 12.9296875, 1.13574219, np.nan], [np.nan, 1.0, 2.0, 3.0, 4.0],
                  [1.0, 2.0, 3.0, 4.0, -np.inf]])
    b = GraphBuilder()
    xi = b.input(f64[3, 5])
    got = BACKEND.compile(b.build([b.log_softmax(xi, axis=1)]), "cpu")(x)[0]
    assert np.isnan(got[:2]).all() and not np.isnan(got[2]).any()
    assert got[2, 4] == -np.inf
    measured("log_softmax", f64, [x], axis=1)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_over_its_whole_range(approximate):
    x = np.concatenate([np.linspace(-12, 12, 2001), [np.inf, -np.inf, np.nan, -0.0, 0.0, 1e-30, 3e38]])
    measured("gelu", f32, [x.astype(np.float32)], approximate=approximate)


@pytest.mark.parametrize("dtype", [f16, bf16, f32, f64])
def test_max_pool_propagates_nan_like_the_ir(dtype):
    x = normal(dtype, 1, 1, 8)
    x[0, 0, 3] = np.nan
    b = GraphBuilder()
    xi = b.input(dtype[1, 1, 8])
    got = BACKEND.compile(b.build([b.max_pool(xi, kernel=(2,))]), "cpu")(x)[0]
    assert np.isnan(got[0, 0, 1]) and not np.isnan(np.delete(got[0, 0], 1)).any()
    measured("max_pool", dtype, [x], kernel=(2,), stride=(1,))


def test_max_pool_without_nan_whose_sum_is_nan_takes_the_exact_path():
    # +inf and -inf sum to NaN: the NaN check sends this input down the indicator path, which
    # must give the plain maxima (inf and 3.0), not NaN
    x = np.array([[[np.inf, 1.0, -np.inf, 3.0, 2.0, -1.0]]], np.float32)
    b = GraphBuilder()
    xi = b.input(f32[1, 1, 6])
    got = BACKEND.compile(b.build([b.max_pool(xi, kernel=(2,))]), "cpu")(x)[0]
    assert got.tolist() == [[[np.inf, 3.0, 2.0]]]
    measured("max_pool", f32, [x], kernel=(2,), stride=(1,))


def test_max_pool_without_nan_runs_one_plain_max_pool():
    """The path a NaN-free input takes is ORT's MaxPool alone (which keeps its NCHWc layout
    after a Conv); the NaN indicator is pooled only in the other branch."""
    (branch,) = [n for n in to_model(_pool_graph()).graph.node if n.op_type == "If"]
    branches = {a.name: [n.op_type for n in a.g.node] for a in branch.attribute}
    assert branches["else_branch"] == ["MaxPool"]
    assert sorted(branches["then_branch"]) == sorted(["IsNaN", "Cast", "MaxPool", "MaxPool", "Sub", "Div", "Add"])


def _pool_graph():
    b = GraphBuilder()
    xi = b.input(f32[2, 3, 8, 8])
    return b.build([b.max_pool(xi, kernel=(2, 2))])


def test_einsum_int32_wraps():
    big = np.full((2, 2), np.iinfo(np.int32).max, np.int32)
    b = GraphBuilder()
    x, y = b.input(i32[2, 2]), b.input(i32[2, 2])
    got = BACKEND.compile(b.build([b.einsum(x, y, equation="ij,jk->ik")]), "cpu")(big, big)[0]
    assert got.tolist() == [[2, 2], [2, 2]]  # 2 * (2**31 - 1)**2 mod 2**32


@pytest.mark.parametrize("dtype", [f16, f32])
def test_attention_with_fully_masked_queries_and_many_batch_dims(dtype):
    q, k, v = normal(dtype, 2, 3, 4, 5), normal(dtype, 2, 3, 6, 5), normal(dtype, 2, 3, 6, 2)
    mask = rng.random((2, 3, 4, 6)) < 0.5
    mask[1, 2, 0, :] = False
    r = measured("scaled_dot_product_attention", dtype, [q, k, v, mask], scale=0.3, has_mask=True)
    assert r.path == "native"
    additive = np.where(mask, 0.0, -np.inf).astype(dtype.numpy)
    measured("scaled_dot_product_attention", dtype, [q, k, v, additive], scale=0.3, has_mask=True)
    b = GraphBuilder()
    ins = [b.input(DType.from_numpy(a.dtype)[a.shape]) for a in (q, k, v, mask)]
    out = BACKEND.compile(b.build([b.scaled_dot_product_attention(*ins, scale=0.3, has_mask=True)]), "cpu")(
        q, k, v, mask)[0]
    assert (out[1, 2, 0] == 0).all()  # the IR's rule: zeros, not NaN or the mean of v


@pytest.mark.parametrize("batch, sizes", [((), (7, 9, 8)), ((3,), (7, 9, 8)), ((2, 3), (7, 9, 8)),
                                          ((2, 2), (40, 33, 64))])
def test_unmasked_float32_attention_is_bit_for_bit_ort_attention(batch, sizes):
    """float32 attention without mask or causal flag is lowered to MatMul/Mul/Softmax/MatMul
    instead of ONNX Attention; it must compute exactly what ORT's own Attention kernel does."""
    length, source, embed = sizes
    q, k = normal(f32, *batch, length, embed, scale=3.0), normal(f32, *batch, source, embed, scale=3.0)
    v = normal(f32, *batch, source, 5)
    q.reshape(-1)[:4] = [-0.0, np.inf, np.nan, 1e30]  # an inf - inf row, a NaN row, overflowing scores
    k.reshape(-1)[:2] = [1e30, -0.0]
    b = GraphBuilder()
    ins = [b.input(f32[a.shape]) for a in (q, k, v)] + [b.constant(False, DType.bool)]
    graph = b.build([b.scaled_dot_product_attention(*ins, scale=0.3)])
    assert "Attention" not in op_types("scaled_dot_product_attention", [q, k, v, np.array(False)], scale=0.3)
    got = BACKEND.compile(graph, "cpu")(q, k, v)[0]
    want = _ort_attention(q, k, v, scale=0.3)
    assert np.array_equal(got.view(np.int32), want.view(np.int32))
    measured("scaled_dot_product_attention", f32, [q, k, v, np.array(False)], scale=0.3)


@pytest.mark.parametrize("dtype", [f16, bf16, f32])
def test_unmasked_attention_rows_of_minus_inf_scores_are_zeros_and_a_nan_score_stays_nan(dtype):
    """The IR's softmax gives zeros for a row whose scores are all -inf (ORT's gives NaN), but
    NaN for a row that also holds a NaN score (ORT's ReduceMax would skip it)."""
    q = np.zeros((3, 2), np.float32)
    q[0, 0], q[1, 0] = -np.inf, -np.inf
    k = np.array([[1.0, 1.0], [1.0, 1.0], [2.0, 1.0]], np.float32)  # row 0's scores: all -inf
    k_row1 = k.copy()
    k_row1[2, 0] = 0.0  # row 1's last score: -inf * 0 = NaN (ORT's ReduceMax skips a NaN that is not first)
    v = np.arange(6, dtype=np.float32).reshape(3, 2)
    for keys, row, want in ((k, 0, "zeros"), (k_row1, 1, "nan")):
        arrays = [a.astype(dtype.numpy) for a in (q, keys, v)]
        b = GraphBuilder()
        ins = [b.input(dtype[a.shape]) for a in arrays] + [b.constant(False, DType.bool)]
        got = BACKEND.compile(b.build([b.scaled_dot_product_attention(*ins, scale=1.0)]), "cpu")(*arrays)[0]
        got = got.astype(np.float64)
        assert (got[row] == 0).all() if want == "zeros" else np.isnan(got[row]).all(), (want, got)
        assert np.isfinite(got[2]).all()


def _ort_attention(q, k, v, scale: float) -> np.ndarray:
    """ONNX Attention on 4-D views ([B, H, L, E]) at opset 23, where ORT 1.32 has a kernel for
    it (at parity's opset it inlines the op's function instead), in a session made as the
    backend makes its own."""
    from onnx import TensorProto, helper

    from parity.backends.onnx.backend import make_session

    four = [a.reshape((-1, 1, *a.shape[-2:])) if a.ndim != 4 else a for a in (q, k, v)]
    names = ["q", "k", "v"]
    node = helper.make_node("Attention", names, ["y"], scale=scale)
    graph = helper.make_graph([node], "attention", [helper.make_tensor_value_info(n, TensorProto.FLOAT, a.shape)
                                                    for n, a in zip(names, four)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    return make_session(model).run(None, dict(zip(names, four)))[0].reshape(*q.shape[:-1], v.shape[-1])


def test_causal_attention_unbatched_rectangular():
    q, k, v = normal(f32, 5, 4), normal(f32, 3, 4), normal(f32, 3, 6)
    measured("scaled_dot_product_attention", f32, [q, k, v, np.array(False)], scale=0.5, causal=True)


def test_compiled_model_with_a_composite_in_an_unclaimed_dtype_runs_decomposed():
    # float64 attention is not claimed (ORT's is float32-accurate): parity.compile must still
    # run it, through the decomposition, instead of rejecting the dtype.
    import torch

    import parity

    fn = parity.compile(lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True),
                        backend="onnx")
    q = torch.randn(2, 3, 4, dtype=torch.float64)
    expected = torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
    torch.testing.assert_close(fn(q, q, q), expected, rtol=1e-14, atol=1e-15)


def test_relu_keeps_negative_zero_and_nan_bit_for_bit():
    x = np.array([-0.0, np.nan, -np.inf, 0.0, -1.5, 2.5, np.inf, -1e-45], np.float32)
    b = GraphBuilder()
    xi = b.input(f32[8])
    got = BACKEND.compile(b.build([b.relu(xi)]), "cpu")(x)[0]
    assert np.signbit(got[0]) and np.isnan(got[1]) and got[2:].tolist() == [0.0, 0.0, 0.0, 2.5, np.inf, 0.0]
    assert not np.signbit(got[2:]).any()
