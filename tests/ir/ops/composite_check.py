"""Test helpers for composites: full expansion into primitives, and one check against torch.

Load it like torch_reference.py (``sys.path.insert(0, str(Path(__file__).parent))``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from torch_reference import assert_ulp, non_primitives, run_ir, torch_truth, type_of

from parity.ir import DType, Graph, GraphBuilder, evaluate
from parity.ir.passes import decompose
from parity.ir.types import TensorType
from parity.ir.verifier import verify


def fully_expanded(opname: str, types: Sequence[TensorType], **attrs: Any) -> Graph:
    """The graph of ``opname`` on operands of ``types`` with every composite expanded
    (the decompose pass with nothing claimed), verified."""
    b = GraphBuilder(opname)
    out = b.op(opname, *(b.input(t) for t in types), **attrs)
    graph, _ = decompose(b.build(list(out) if isinstance(out, tuple) else [out]), claimed=lambda op: False)
    verify(graph)
    return graph


def check_composite(opname: str, arrays: Sequence[np.ndarray], torch_fn: Callable, ulps: float, *,
                    error_scale: Callable[[np.ndarray], Any] | None = None, **attrs: Any) -> np.ndarray:
    """Evaluate ``opname`` on ``arrays``; assert that its full expansion holds only primitives
    and computes the same bits, and that the result is within ``ulps`` of torch's float64
    result rounded to the output dtype (``error_scale(truth)`` sets the unit where the error is
    absolute). For float64 results torch's result is no better than ours, so the bound is
    ``2 * ulps`` (ours plus its). Returns the result."""
    out = run_ir(opname, arrays, **attrs)
    graph = fully_expanded(opname, [type_of(a) for a in arrays], **attrs)
    assert not non_primitives(graph), f"{opname} expands to non-primitives {non_primitives(graph)}"
    outs = out if isinstance(out, tuple) else (out,)
    for expanded, direct in zip(evaluate(graph, list(arrays)), outs):
        np.testing.assert_array_equal(expanded, direct)
    dtype = DType.from_numpy(outs[0].dtype)
    truth = torch_truth(torch_fn, arrays, dtype)
    if dtype is DType.float64:  # torch's own float64 result carries an error of the same class
        ulps *= 2
    assert_ulp(outs[0], truth, ulps, scale=None if error_scale is None else error_scale(truth), what=opname)
    return out
