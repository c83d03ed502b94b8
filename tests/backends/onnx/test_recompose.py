"""Hand-written composites lowered as the composite (backends/onnx/recompose.py) and rotate_half
products as a Gather (rotary.py): which chains are recognized, which are left alone, the
recognized RMSNorms' error against the float64 oracle under the composite's bound (the full
measurement: studies/rms_norm_pattern), and the rotations' bits."""

from __future__ import annotations

import numpy as np
import pytest

from parity.backends.onnx import OnnxBackend, to_model
from parity.conformance.case import Case
from parity.conformance.compare import measure
from parity.conformance.declared import Declared
from parity.ir import GraphBuilder, TensorType, evaluate
from parity.ir.dtypes import DType

BACKEND = OnnxBackend()
DECLARED = Declared.of(BACKEND, "cpu")


def _hand_written(x_type: TensorType, eps: float, *, divisor: float | None = None, axis: int = -1,
                  weight: bool = True, also_out: str = ""):
    """Hugging Face's RMSNorm as captured: ``w * (x * rsqrt(reshape(sum(x * x) / n) + eps))``.
    ``divisor`` replaces n, ``axis`` the reduced axis, ``also_out`` names an intermediate the
    graph also returns."""
    b = GraphBuilder("hf_rms_norm")
    d, shape, rank = x_type.dtype, x_type.shape, x_type.rank
    axis %= rank
    x = b.input(x_type)
    kept = tuple(1 if i == axis else s for i, s in enumerate(shape))
    rows = tuple(s for i, s in enumerate(shape) if i != axis)
    total = b.reduce_sum(b.mul(x, x), axes=(axis,))
    n = b.broadcast_in_dim(b.constant(divisor or shape[axis], d), shape=rows, broadcast_dimensions=())
    ms = b.reshape(b.div(total, n), shape=kept)
    rrms = b.rsqrt(b.add(ms, b.broadcast_in_dim(b.constant(eps, d), shape=kept, broadcast_dimensions=())))
    y = b.mul(x, b.broadcast_in_dim(rrms, shape=shape, broadcast_dimensions=tuple(range(rank))))
    outs = {"ms": ms, "rrms": rrms, "y": y}
    if weight:
        w = b.input(x_type.with_shape((shape[-1],)))
        y = b.mul(b.broadcast_in_dim(w, shape=shape, broadcast_dimensions=(rank - 1,)), y)
    return b.build([y] + ([outs[also_out]] if also_out else []))


def _arrays(rng, dtype: DType, shape, weight=True):
    x = rng.standard_normal(shape).astype(dtype.numpy)
    return [x, rng.standard_normal(shape[-1]).astype(dtype.numpy)] if weight else [x]


def _ops(graph) -> list[str]:
    return [n.op_type for n in to_model(graph).graph.node]


@pytest.mark.parametrize("dtype", [DType.float32, DType.float16, DType.float64])
@pytest.mark.parametrize("weight", [True, False])
def test_a_hand_written_rms_norm_is_one_node_within_the_rms_norm_bound(dtype, weight):
    rng = np.random.default_rng(1)
    eps = float(np.asarray(1e-6, dtype.numpy)) if dtype is not DType.float64 else float(np.float32(1e-6))
    for shape in [(3, 8), (2, 5, 96)]:
        arrays = _arrays(rng, dtype, shape, weight)
        graph = _hand_written(TensorType(dtype, shape), eps, weight=weight)
        assert _ops(graph).count("RMSNormalization") == 1 and "ReduceSum" not in _ops(graph)
        (got,) = BACKEND.compile(graph)(*arrays)
        # the chain is rms_norm's decomposition: its oracle is the chain's
        case = Case("rms_norm", dtype, lambda rng: arrays if weight else [*arrays, np.ones(shape[-1], dtype.numpy)],
                    {"normalized_ndim": 1, "eps": eps})
        inputs = case.arrays()
        m = measure(case, case.graph(inputs), inputs, evaluate(case.graph(inputs), inputs, oracle=True), [got],
                    DECLARED)
        assert m.passed, (shape, m.message, m.max_ratio)
        # and it agrees with the chain lowered op by op, to a few ULPs (a wrong function would not)
        np.testing.assert_allclose(got.astype(np.float64), evaluate(graph, arrays)[0].astype(np.float64),
                                   rtol=8 * float(np.finfo(dtype.numpy).eps), atol=0)


@pytest.mark.parametrize("change", [
    dict(divisor=16.0),  # the mean over 24 divided by 16: not an rms_norm
    dict(axis=1),  # a norm over a middle axis of the same size: RMSNormalization normalizes trailing ones
    dict(also_out="ms"),  # an intermediate the graph returns must exist
    dict(also_out="rrms"),
    dict(also_out="y"),  # likewise the unweighted result the weight's mul reads
])
def test_a_chain_that_is_not_exactly_rms_norm_is_lowered_op_by_op(change):
    x = np.random.default_rng(2).standard_normal((2, 24, 24)).astype(np.float32)
    w = np.random.default_rng(3).standard_normal(24).astype(np.float32)
    graph = _hand_written(TensorType(DType.float32, x.shape), 1e-6, **change)
    ops = _ops(graph)
    if change.get("also_out") == "y":  # the norm itself is still one node; the weight's mul stays
        assert ops.count("RMSNormalization") == 1 and "Mul" in ops, ops
    else:
        assert "RMSNormalization" not in ops and "ReduceSum" in ops, ops
    got = BACKEND.compile(graph)(x, w)
    want = evaluate(graph, [x, w], oracle=True)
    for g, o in zip(got, want):
        np.testing.assert_allclose(g, o, rtol=2e-6, atol=0)


def test_an_eps_the_onnx_attribute_cannot_hold_keeps_the_float64_chain():
    eps = 1e-6  # not a float32: RMSNormalization's epsilon attribute is one
    graph = _hand_written(TensorType(DType.float64, (4, 16)), eps)
    assert "RMSNormalization" not in _ops(graph)


def _rope(shape, *, split=None, sin_shape=None):
    """``x * cos + cat(-x[..., a:b], x[..., 0:a]) * sin`` (rotate_half when a = d/2, b = d)."""
    d = shape[-1]
    a, b_ = split or (d // 2, d)
    g = GraphBuilder("rope")
    x, cos = g.input(TensorType(DType.float32, shape)), g.input(TensorType(DType.float32, shape))
    rank = len(shape)
    sin_in = g.input(TensorType(DType.float32, sin_shape or shape))
    sin = sin_in if sin_shape is None else g.broadcast_in_dim(sin_in, shape=shape, broadcast_dimensions=tuple(range(rank)))
    lo = g.slice(x, start_indices=(0,) * rank, limit_indices=(*shape[:-1], a), strides=(1,) * rank)
    hi = g.slice(x, start_indices=(*(0,) * (rank - 1), a), limit_indices=(*shape[:-1], b_), strides=(1,) * rank)
    rotated = g.concatenate(g.neg(hi), lo, dimension=rank - 1)
    if rotated.type.shape != tuple(shape):  # not a rotation of all of x: product with its own slice of sin
        sin = g.slice(sin, start_indices=(0,) * rank, limit_indices=rotated.type.shape, strides=(1,) * rank)
        return g.build([g.mul(rotated, sin)])
    return g.build([g.add(g.mul(x, cos), g.mul(rotated, sin))])


def _specials(rng, shape):
    x = rng.standard_normal(shape).astype(np.float32)
    flat = x.reshape(-1)
    flat[: 6] = [-0.0, 0.0, np.inf, -np.inf, np.nan, 1e-45]
    return x


@pytest.mark.parametrize("shape, sin_shape", [((1, 4, 1, 8), (1, 1, 1, 8)), ((2, 3, 5, 16), None), ((3, 6), None)])
def test_rotate_half_times_sin_is_a_gather_and_gives_the_chains_bits(shape, sin_shape):
    rng = np.random.default_rng(4)
    graph = _rope(shape, sin_shape=sin_shape)
    ops = _ops(graph)
    assert "Gather" in ops and "Neg" not in ops and "Concat" not in ops, ops
    x, cos = _specials(rng, shape), rng.standard_normal(shape).astype(np.float32)
    sin = _specials(rng, sin_shape or shape)
    (got,) = BACKEND.compile(graph)(x, cos, sin)
    (want,) = evaluate(graph, [x, cos, sin])  # correctly rounded mul and add in float32: ORT's own
    nan = np.isnan(want)
    assert (np.isnan(got) == nan).all()  # a NaN's sign bit is not compared (the contract's exact bound)
    assert got[~nan].tobytes() == want[~nan].tobytes()


def test_a_concatenation_that_is_not_a_rotation_of_all_of_x_stays_as_it_is():
    graph = _rope((2, 8), split=(2, 4))  # cat(-x[:, 2:4], x[:, 0:2]): half of x, rotated
    assert "Gather" not in _ops(graph)
    x, cos, sin = (np.random.default_rng(i).standard_normal((2, 8)).astype(np.float32) for i in range(3))
    np.testing.assert_array_equal(BACKEND.compile(graph)(x, cos, sin)[0], evaluate(graph, [x, cos, sin])[0])


def _index_copy(*, spread_index=True, back=(1, 2, 0, 3)):
    """A static KV cache's ``cache.index_copy_(2, pos, new)`` as captured: the indexed dim moved to
    the front, a scatter along it, moved back (``back``: the inverse permutation, unless a test
    says otherwise)."""
    g = GraphBuilder("index_copy")
    cache, new = g.input(TensorType(DType.float32, (1, 2, 20, 8))), g.input(TensorType(DType.float32, (1, 2, 3, 8)))
    front = (2, 0, 1, 3)
    if spread_index:
        pos = g.input(TensorType(DType.int64, (3,)))
        idx = g.broadcast_in_dim(pos, shape=(3, 1, 2, 8), broadcast_dimensions=(0,))
    else:
        pos = g.input(TensorType(DType.int64, (3, 1, 2, 8)))
        idx = pos
    put = g.scatter(g.transpose(cache, permutation=front), idx, g.transpose(new, permutation=front), axis=0,
                    reduce="replace")
    return g.build([g.transpose(put, permutation=back)])


@pytest.mark.parametrize("spread_index", [True, False])
def test_a_scatter_between_transposes_scatters_in_place_with_the_same_bits(spread_index):
    graph = _index_copy(spread_index=spread_index)
    ops = _ops(graph)
    assert ops.count("Transpose") == (0 if spread_index else 1) and ops.count("ScatterElements") == 1, ops
    rng = np.random.default_rng(5)
    cache, new = (rng.standard_normal(s).astype(np.float32) for s in ((1, 2, 20, 8), (1, 2, 3, 8)))
    pos = np.array([4, 11, 19])
    pos = pos if spread_index else np.broadcast_to(pos[:, None, None, None], (3, 1, 2, 8)).copy()
    (got,) = BACKEND.compile(graph)(cache, new, pos)
    (want,) = evaluate(graph, [cache, new, pos])
    assert got.tobytes() == want.tobytes()
    assert (got[:, :, [4, 11, 19]] == new).all() and (got[:, :, 5] == cache[:, :, 5]).all()


def test_transposes_that_do_not_undo_each_other_stay():
    graph = _index_copy(back=(1, 0, 2, 3))  # not the inverse of (2, 0, 1, 3)
    model = to_model(graph)
    (scatter,) = [n for n in model.graph.node if n.op_type == "ScatterElements"]
    assert [a.i for a in scatter.attribute if a.name == "axis"] == [0]  # still along the moved axis
    assert [n.op_type for n in model.graph.node].count("Transpose") == 2  # the back one moves a 1: a Reshape
    rng = np.random.default_rng(6)
    args = [rng.standard_normal((1, 2, 20, 8)).astype(np.float32), rng.standard_normal((1, 2, 3, 8)).astype(np.float32),
            np.array([0, 7, 2])]
    assert BACKEND.compile(graph)(*args)[0].tobytes() == evaluate(graph, args)[0].tobytes()
