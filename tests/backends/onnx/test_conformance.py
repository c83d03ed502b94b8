"""Every primitive the onnx backend claims, on every claimed dtype, against the interpreter.

One-op graphs with edge values (cases.py), measured against the float64 oracle under
each op's bound by the conformance suite's own comparison (``conformance.compare``):
exact ops bit-exact, ≤ 1 ULP correctly rounded, ≤ 4 ULP transcendental (f32/f64), ≤ 1
ULP for float16/bfloat16, n·ε·Σ|terms| for accumulations. Every model also passes the ONNX checker (full check) and strict shape
inference. Cells with a recorded deviation pass here too (their deviations lie outside
these inputs) and are measured in test_deviations.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from cases import cases, primitive_names  # noqa: E402

from parity.backends.onnx import OnnxBackend, to_model  # noqa: E402
from parity.conformance.bounds import bound_for  # noqa: E402
from parity.conformance.case import Case as ConformanceCase  # noqa: E402
from parity.conformance.compare import measure as measure_case  # noqa: E402
from parity.ir import OP_TABLE, evaluate  # noqa: E402
from parity.ir.ops import ops_in_family  # noqa: E402

BACKEND = OnnxBackend()
CLAIMS = BACKEND.claims()
# Real dtypes: the complex cells (and the complex and fft families) are the conformance suite's
# (test_complex_numbers.py runs them through `parity conform`'s runner)
CELLS = [(op, dtype) for op in primitive_names() for dtype in OP_TABLE[op].dtypes
         if dtype in CLAIMS[op].dtypes and not dtype.is_complex]
COMPLEX_FAMILIES = set(ops_in_family("complex") + ops_in_family("fft"))


def check_model(graph) -> None:
    model = to_model(graph)
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)


def measure(case, dtype, got: list[np.ndarray]) -> None:
    """Assert ``got`` meets the bound of the case's op (the conformance suite's metrics)."""
    node = case.graph.nodes[-1]
    shared = ConformanceCase(node.op, dtype, lambda rng: case.inputs, dict(node.attrs), case.label)
    # An exact op is its interpreter result, rounded once (bf16 iota past 256); the others
    # meet their bound at the float64 oracle.
    exact = bound_for(node.op, node.attrs, case.graph.outputs[0].type.dtype).kind == "exact"
    with np.errstate(invalid="ignore"):  # the interpreter casting NaN payloads (bitcast_convert)
        oracle = evaluate(case.graph, case.inputs, oracle=not exact)
        m = measure_case(shared, case.graph, case.inputs, oracle, got)
    assert m.passed, f"{shared.id}: {m.max_ratio:.3g}× the bound, worst {m.worst} {m.message}"


@pytest.mark.parametrize("op, dtype", CELLS, ids=[f"{op}-{d.short}" for op, d in CELLS])
def test_primitive(op, dtype):
    for case in cases(op, dtype):
        check_model(case.graph)
        got = BACKEND.compile(case.graph, "cpu")(*case.inputs)
        measure(case, dtype, got)


def test_every_primitive_is_claimed():
    primitives = {op.name for op in OP_TABLE.values() if op.kind.value == "primitive"}
    assert primitives <= set(CLAIMS) and not BACKEND.declined
    # the case table covers every primitive but the complex families (test_complex_numbers.py)
    assert set(primitive_names()) == primitives - COMPLEX_FAMILIES
