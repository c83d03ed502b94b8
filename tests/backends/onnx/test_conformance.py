"""Every primitive the onnx backend claims, on every claimed dtype, against the interpreter.

One-op graphs with edge values (cases.py). Exact ops must be bit-exact; float results
are measured against the float64 oracle: ≤ 1 ULP correctly rounded, ≤ 4 ULP
transcendental (f32/f64), ≤ 1 ULP for float16/bfloat16, and n·ε·Σ|terms| for
accumulations. Every model also passes the ONNX checker (full check) and strict shape
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
from contract import accumulation_excess, assert_exact, max_ulp, ulp_bound  # noqa: E402

from parity.backends.onnx import OnnxBackend, to_model  # noqa: E402
from parity.ir import OP_TABLE, Accuracy, evaluate  # noqa: E402

BACKEND = OnnxBackend()
CLAIMS = BACKEND.claims()
CELLS = [(op, dtype) for op in primitive_names() for dtype in OP_TABLE[op].dtypes if dtype in CLAIMS[op].dtypes]


def check_model(graph) -> None:
    model = to_model(graph)
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)


def measure(case, got: list[np.ndarray]) -> None:
    """Assert ``got`` meets the contract of the case's op (see the module docstring)."""
    node = case.graph.nodes[-1]
    opdef = OP_TABLE[node.op]
    with np.errstate(invalid="ignore"):  # the interpreter casting NaN payloads (bitcast_convert)
        native = evaluate(case.graph, case.inputs)
        oracle = evaluate(case.graph, case.inputs, oracle=True)
    for i, (g, n, o, v) in enumerate(zip(got, native, oracle, case.graph.outputs)):
        what = f"{node.op}[{case.label}] result {i}"
        dtype = v.type.dtype
        if not dtype.is_float or opdef.accuracy is Accuracy.EXACT or node.op == "convert":
            assert_exact(g, n, signed_zero=case.signed_zero, what=what)
        elif opdef.accuracy is Accuracy.ACCUMULATION:
            magnitudes = [np.abs(a) if a.dtype.kind == "f" or a.dtype.name == "bfloat16" else a for a in case.inputs]
            abs_oracle = evaluate(case.graph, magnitudes, oracle=True)[i]
            excess = accumulation_excess(g, o, abs_oracle, case.n_terms, dtype)
            assert excess <= 1.0, f"{what}: error is {excess:.3g}× the bound n·ε·Σ|terms| (n={case.n_terms})"
        else:
            bound = ulp_bound(opdef.accuracy, dtype)
            err = max_ulp(g, o, dtype)
            assert err <= bound, f"{what}: {err:.3g} ULP > {bound} ({dtype.short})"


@pytest.mark.parametrize("op, dtype", CELLS, ids=[f"{op}-{d.short}" for op, d in CELLS])
def test_primitive(op, dtype):
    for case in cases(op, dtype):
        check_model(case.graph)
        got = BACKEND.compile(case.graph, "cpu")(*case.inputs)
        measure(case, got)


def test_every_primitive_is_claimed():
    primitives = {op.name for op in OP_TABLE.values() if op.kind.value == "primitive"}
    assert primitives <= set(CLAIMS)
    assert set(primitive_names()) == primitives  # the case table covers every primitive
