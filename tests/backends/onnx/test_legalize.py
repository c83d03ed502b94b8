"""The legalization table matches what onnxruntime really lacks, found by trying."""

from __future__ import annotations

import sys
from pathlib import Path

import onnx
import onnxruntime.capi._pybind_state as ort_state

sys.path.insert(0, str(Path(__file__).parent))

from probe_kernels import gaps  # noqa: E402

from parity.backends.onnx import OPSET, to_model  # noqa: E402
from parity.backends.onnx.legalize import GAPS, PRECISION, UNSUPPORTED, WIDEN  # noqa: E402
from parity.ir import DType, GraphBuilder, bf16, f16, f32  # noqa: E402


def test_table_lists_exactly_the_kernel_gaps():
    # Every case lowered without legalization: what ORT cannot run must be widened or
    # unsupported, and an entry ORT now runs fine is stale (drop it from GAPS).
    found = set(gaps())
    table = {(op, dtype) for dtype, ops in GAPS.items() for op in ops} | set(UNSUPPORTED)
    assert sorted((op, d.short) for op, d in found - table) == []
    assert sorted((op, d.short) for op, d in table - found) == []


def test_precision_widening_is_separate_from_gaps():
    assert all(WIDEN[key] is wide for key, (wide, _) in PRECISION.items())
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
    assert _nodes("add", f16) == ["Add"]  # but float16 Add it has
    assert _nodes("mul", f32) == ["Mul"]


def test_select_widens_its_values_not_its_mask():
    b = GraphBuilder()
    p, x, y = b.input(DType.bool[2]), b.input(DType.int16[2]), b.input(DType.int16[2])
    model = to_model(b.build([b.select(p, x, y)]))
    onnx.checker.check_model(model, full_check=True)
    casts = [n for n in model.graph.node if n.op_type == "Cast"]
    assert len(casts) == 3 and "in0" not in {i for n in casts for i in n.input}
