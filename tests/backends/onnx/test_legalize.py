"""The legalization table matches what onnxruntime really lacks, found by trying."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime.capi._pybind_state as ort_state
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from probe_kernels import gaps  # noqa: E402

from parity.backends.onnx import OPSET, to_model  # noqa: E402
from parity.backends.onnx.legalize import COMPUTE_IN_WIDER, GAPS, PRECISION, UNSUPPORTED  # noqa: E402
from parity.backends.registry import get_backend  # noqa: E402
from parity.ir import DType, GraphBuilder, bf16, f16, f32  # noqa: E402


def test_table_lists_exactly_the_kernel_gaps():
    # Every case lowered without legalization: what ORT cannot run must be widened or
    # unsupported, and an entry ORT now runs fine is stale (drop it from GAPS).
    found = set(gaps())
    table = {(op, dtype) for dtype, ops in GAPS.items() for op in ops} | set(UNSUPPORTED)
    assert sorted((op, d.short) for op, d in found - table) == []
    assert sorted((op, d.short) for op, d in table - found) == []


def test_precision_widening_is_separate_from_gaps():
    assert all(COMPUTE_IN_WIDER[key] is wide for key, (wide, _) in PRECISION.items())
    assert not set(PRECISION) & set(UNSUPPORTED)


def test_opset_is_the_highest_both_onnx_and_onnxruntime_know():
    ort_max = max(s.since_version for s in ort_state.get_all_operator_schema() if s.domain == "")
    assert OPSET == min(onnx.defs.onnx_opset_version(), ort_max)


def _nodes(op, dtype):
    b = GraphBuilder()
    x, y = b.input(dtype[2]), b.input(dtype[2])
    return [n.op_type for n in to_model(b.build([b.op(op, x, y)])).graph.node]


def test_widening_casts_around_the_op():
    assert _nodes("add", bf16) == ["Cast", "Cast", "Add", "Cast"]  # ORT has no bfloat16 Add
    # float16 is widened too: ORT would drop the rounding between consecutive nodes
    assert _nodes("add", f16) == ["Cast", "Cast", "Add", "Cast"]
    assert _nodes("mul", f32) == ["Mul"]


def test_select_widens_its_values_not_its_mask():
    b = GraphBuilder()
    p, x, y = b.input(DType.bool[2]), b.input(DType.int16[2]), b.input(DType.int16[2])
    model = to_model(b.build([b.select(p, x, y)]))
    onnx.checker.check_model(model, full_check=True)
    casts = [n for n in model.graph.node if n.op_type == "Cast"]
    assert len(casts) == 3 and "in0" not in {i for n in casts for i in n.input}


def _run(graph, *arrays):
    exe = get_backend("onnx").compile(graph)
    return [np.asarray(o) for o in exe(*arrays)]


def test_float16_rounds_between_consecutive_nodes():
    # Fuzz regression onnx-mul-f16: the dot gives 26312.34 -> f16 26320, and
    # 26320 * 2.18359375 = 57472.19 -> 57472. ORT's inserted Casts used to hand the mul
    # the unrounded float32 dot (about 26304 after float32 summation order), giving 57440.
    b = GraphBuilder()
    x, w, s = b.input(f16[1, 1, 3]), b.input(f16[1, 3, 3]), b.input(f16[1, 1, 3])
    d = b.dot_general(x, w, lhs_contracting_dims=[2], rhs_contracting_dims=[1],
                      lhs_batch_dims=[0], rhs_batch_dims=[0])
    graph = b.build([d, b.mul(d, s)])
    xs = np.array([[[1.187, -2.477, -2.836]]], np.float16)
    ws = np.array([[[9.351e-04, 2.218e+04, -4.098e+02], [1.851e+02, 9.662e-05, -3.411e+04],
                    [-5.829e-03, 1.192e-06, 1.431e-05]]], np.float16)
    ss = np.full((1, 1, 3), 2.184, np.float16)
    dot, prod = _run(graph, xs, ws, ss)
    assert dot[0, 0, 1] == np.float16(26320)
    assert prod[0, 0, 1] == np.float16(57472)
    assert prod[0, 0, 1] == np.float16(np.float64(dot[0, 0, 1]) * np.float64(ss[0, 0, 1]))


@pytest.mark.parametrize("build", [
    lambda b: b.layer_norm(b.input(f16[0, 1, 0]), b.input(f16[1, 0]), b.input(f16[1, 0]),
                           normalized_ndim=2, eps=1e-5),
    lambda b: b.rms_norm(b.input(f32[0, 1]), b.input(f32[0, 1]), normalized_ndim=2, eps=1e-6),
    lambda b: b.tril(b.input(f16[1, 1, 0]), diagonal=1),
], ids=["layer_norm", "rms_norm", "tril"])
def test_empty_results_need_no_kernel(build):
    # ORT's LayerNormalization, RMSNormalization and Trilu reject these empty inputs.
    b = GraphBuilder()
    graph = b.build([build(b)])
    arrays = [np.zeros(v.type.shape, v.type.dtype.numpy) for v in graph.inputs]
    (out,) = _run(graph, *arrays)
    t = graph.outputs[0].type
    assert out.shape == tuple(t.shape) and out.dtype == t.dtype.numpy


def test_float16_rounding_survives_when_the_intermediate_is_not_returned():
    # 1.1865234375 * 22176 = 26312.34 -> f16 26320; 26320 * 2.18359375 -> 57472, while the
    # unrounded product would give 57455.9 -> 57440. ORT's optimizers must keep our Casts.
    b = GraphBuilder()
    x, y, z = b.input(f16[1]), b.input(f16[1]), b.input(f16[1])
    graph = b.build([b.mul(b.mul(x, y), z)])
    xs, ys, zs = (np.array([v], np.float16) for v in (1.187, 22180, 2.184))
    assert (xs[0], ys[0], zs[0]) == (np.float16(1.1865234375), np.float16(22176), np.float16(2.18359375))
    (out,) = _run(graph, xs, ys, zs)
    assert out.tolist() == [57472.0]
