"""The two errors of one node: local (against its contract) and carried (end to end).

- **Local**: the node's backend results against the float64 oracle of that one node on the
  *backend's own operands* (:func:`parity.conformance.local.measure_local` on the
  single-node graph: masks for implementation-defined elements, flush-to-zero the backend
  declares, operands where the spec itself misses the bound). ``local_ratio`` is the worst
  error over the op's contract bound: above 1 the backend broke the contract.
- **Carried**: the node's backend results against the oracle run end to end from the
  original inputs, normwise: ``max|b − o|`` in ULPs of the output dtype at ``max|o|``
  (so near-zero elements of a cancelling sum do not dominate), and as a relative error.
- **Over tolerance** (the end-to-end baseline, as Polygraphy's ``--mark all`` or
  ``compare_intermediates`` judge a tensor): some element has ``|b − o| > atol + rtol·|o|``.

Example::

    >>> import numpy as np
    >>> from parity.ir import DType
    >>> c = carried_error(DType.float32, np.array([1.0, 2.0]), np.array([1.0, 2.0 + 2**-22], np.float32))
    >>> c.ulp, c.over_tolerance
    (1.0, False)
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..conformance.bounds import bound_for
from ..conformance.local import measure_local, node_dtype, single_node_graph
from ..conformance.metrics import abs_error, ulp
from ..ir.dtypes import DType
from ..ir.graph import Node

# The end-to-end baseline's tolerances: Polygraphy's defaults (rtol = atol = 1e-5).
BASELINE_RTOL = 1e-5
BASELINE_ATOL = 1e-5
# A carried error this many ULPs (at the tensor's largest magnitude) past nodes that all
# meet their contract is the model's own ill-conditioning, not the backend's fault.
ILL_CONDITIONED_ULP = 1024.0


@dataclass
class Carried:
    """How far one node's backend results are from the end-to-end oracle (see module doc)."""

    ulp: float | None  # normwise, in ULPs of the output dtype at max|oracle|; None for exact outputs
    rel: float | None  # max|b − o| / max|o|
    mismatches: int  # elements that differ (non-float outputs) or are over the baseline tolerance
    over_tolerance: bool


@dataclass
class Local:
    """The node measured against its own contract on the backend's operands."""

    ratio: float  # worst error / allowed error (inf for a bit-exact op that differs)
    ulp: float | None
    mismatches: int
    compared: int
    bound: str  # the contract, in words
    worst: dict
    outside: bool  # the operands lie where the spec itself misses the bound: not held to it
    flush_to_zero: bool  # a failure the backend's declared flush-to-zero explains


def contract_text(node: Node) -> str:
    """The contract bound of the node's first output, in words ("≤ 4 ULP", "bit-exact")."""
    t = node.outputs[0].type.dtype
    try:
        return bound_for(node.op, node.attrs, t).describe()
    except Exception:  # noqa: BLE001 - a bound that needs attributes the node lacks
        return "?"


def local_error(node: Node, operands: Sequence[np.ndarray], results: Sequence[np.ndarray], declared) -> Local:
    """:class:`Local` of ``node`` given the backend's ``operands`` and ``results``."""
    sub = single_node_graph(node)
    m = measure_local(sub, list(operands), list(results), declared)
    worst = dict(m.worst or {})
    outside = bool(worst.get("outside")) and m.passed
    failing = worst.get("nodes") or []
    flushed = bool(failing) and all(f.get("flush_to_zero") for f in failing)
    ratio = 0.0 if outside else float(m.max_ratio)
    return Local(ratio, m.max_ulp, m.mismatches, m.compared, contract_text(node),
                 {k: v for k, v in worst.items() if k not in ("nodes", "outside")}, outside, flushed)


def carried_error(dtype: DType, oracle: np.ndarray, actual: np.ndarray, *, rtol: float = BASELINE_RTOL,
                  atol: float = BASELINE_ATOL) -> Carried:
    """:class:`Carried` of one output (``oracle`` in float64 for floats)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        a = np.asarray(actual)
        if not dtype.is_float:
            differ = int((np.asarray(oracle) != a).sum())
            return Carried(None, None, differ, differ > 0)
        o = np.asarray(oracle, dtype=np.float64)
        if not o.size:
            return Carried(0.0, 0.0, 0, False)
        err = abs_error(dtype, o, a)
        finite = np.abs(o[np.isfinite(o)])
        scale = float(finite.max()) if finite.size else 0.0
        worst = float(err.max())
        over = err > atol + rtol * np.abs(o)
        rel = worst / scale if scale > 0 else (0.0 if worst == 0 else float("inf"))
        return Carried(worst / float(ulp(dtype, np.array(scale))), rel, int(over.sum()), bool(over.any()))


def merge_carried(parts: Sequence[Carried]) -> Carried:
    """One node's carried error over all its outputs (the worst of each figure)."""
    def worst(values):
        values = [v for v in values if v is not None]
        return max(values) if values else None

    return Carried(worst(p.ulp for p in parts), worst(p.rel for p in parts), sum(p.mismatches for p in parts),
                   any(p.over_tolerance for p in parts))


def recorded_deviation(backend, node: Node, device: str, local: Local):
    """The deviation ``backend`` records for this node's op and dtype that covers the local
    error in ULPs (None when none does: flush-to-zero is handled by the measure itself)."""
    from ..conformance.verdicts import ulp_limit  # the one parser of "5 ulp (measured 4.2)"

    if local.ulp is None or not np.isfinite(local.ulp):
        return None
    dtype = dtype_of(node)
    for d in getattr(backend, "deviations", ()):
        limit = None if d.flush_to_zero else ulp_limit(d)
        if (limit is not None and d.op in (node.op, "*") and d.dtype in (None, dtype)
                and d.device in (None, device) and local.ulp <= limit):
            return d
    return None


def dtype_of(node: Node) -> DType:
    """The dtype a node's claims and contract are keyed by."""
    return node_dtype(node)


__all__ = ["BASELINE_ATOL", "BASELINE_RTOL", "Carried", "ILL_CONDITIONED_ULP", "Local", "carried_error",
           "contract_text", "dtype_of", "local_error", "merge_carried", "recorded_deviation"]
